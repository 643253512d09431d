"""What the world's crawl surface tells a crawler: simulated time in ``Date``, and a click log of
the pages that crawler fetched, from its first fetch (focuscrawl.world.clicks). Real HTTP."""

from __future__ import annotations

import email.utils
import re

import pytest
import requests

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fetch.clock import SiteClock
from focuscrawl.world import build_world
from focuscrawl.world.server import WorldServer

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def served():
    world = build_world(3, data_dir=None, users=500, start_epoch=START, paused=True, rate_limit=0,
                        events_per_minute=1.0, web=True)
    world.clock.set(START + 6 * 3600)
    with WorldServer(world) as server:
        yield server


def _new_pages(server, n: int) -> list[str]:
    host = server.world.web.hosts[0]
    front = requests.get(f"{server.url}/site/{host}/", timeout=10).text
    pages = sorted(set(re.findall(r'href="(/site/[^"]+/n/\d+-\d+)"', front)))
    assert len(pages) >= n, pages
    return pages[:n]


def test_the_date_header_is_the_simulated_now(served):
    r = requests.get(served.url + "/robots.txt", timeout=10)
    assert email.utils.parsedate_to_datetime(r.headers["Date"]).timestamp() == int(served.world.clock.now())
    served.world.clock.advance(3600)
    r = requests.get(served.url + "/r/all/new.json", timeout=10)
    assert email.utils.parsedate_to_datetime(r.headers["Date"]).timestamp() == int(served.world.clock.now())


def test_a_fetchers_site_clock_reads_the_world_through_the_fetch_layer(served):
    netloc = served.url.removeprefix("http://")
    with Fetcher("focuscrawl-test/1 (+ops@example.org)", guard=AddressGuard([netloc]),
                 politeness=HostPoliteness(min_delay=0)) as fetcher:
        clock = SiteClock().attach(fetcher)
        fetcher.fetch(served.url + "/r/all/new.json")
        assert clock() == pytest.approx(served.world.clock.now(), abs=2)
        assert clock.observed == 2  # robots.txt, then the listing


def test_clicks_are_reported_only_for_the_clients_own_fetches_and_only_after_them(served):
    world = served.world
    a, b = {"X-Client-Id": "engine-a"}, {"X-Client-Id": "engine-b"}
    early, late = _new_pages(served, 2)
    assert requests.get(served.url + early, headers=a, timeout=10).status_code == 200
    fetched_early = int(world.clock.now())
    world.clock.advance(2 * 3600)
    requests.get(served.url + late, headers=a, timeout=10)
    fetched_late = int(world.clock.now())
    world.clock.advance(3600)

    got = requests.get(served.url + "/search/clicks.json", params={"since": 0}, headers=a, timeout=10).json()
    rows = {r["path"]: r for r in got["clicks"]}
    assert set(rows) == {early, late}
    assert (rows[early]["crawled_at"], rows[late]["crawled_at"]) == (fetched_early, fetched_late)
    now = got["until"]
    web = world.web
    for path, crawled in ((early, fetched_early), (late, fetched_late)):
        s, k = (int(x) for x in path.rsplit("/", 1)[1].split("-"))
        src, t0 = web.sources[s], web.published(s, now)[k]
        assert rows[path]["clicks"] == pytest.approx(web.clicks(src, k, t0, now) - web.clicks(src, k, t0, crawled), abs=1e-5)
        assert rows[path]["clicks"] < web.clicks(src, k, t0, now)  # clicks before the crawl are never seen

    # Another engine that fetched nothing hears of nothing; one that fetched later counts from its own fetch.
    assert requests.get(served.url + "/search/clicks.json", headers=b, timeout=10).json()["clicks"] == []
    requests.get(served.url + early, headers=b, timeout=10)
    world.clock.advance(600)
    mine = requests.get(served.url + "/search/clicks.json", params={"since": 0}, headers=b, timeout=10).json()
    assert [r["crawled_at"] for r in mine["clicks"]] == [now]

    # since: only the clicks that arrived after it
    later = requests.get(served.url + "/search/clicks.json", params={"since": now}, headers=a, timeout=10).json()
    assert all(0 < r["clicks"] < rows[r["path"]]["clicks"] for r in later["clicks"])
    bad = requests.get(served.url + "/search/clicks.json", params={"since": "yesterday"}, headers=a, timeout=10)
    assert bad.status_code == 400 and "since" in bad.json()["message"]


def test_the_evaluation_port_records_every_request(served):
    before = served.world.eval_access_log.since(0)["next"]
    requests.get(served.eval_url + "/time", timeout=10)
    requests.post(served.eval_url + "/clock", json={"advance": 1}, timeout=10)
    paths = [e["path"] for e in served.world.eval_access_log.since(before)["entries"]]
    assert paths == ["/time", "POST /clock"]
    # a test driving a world in another process reads the same log over the port (its own reads listed too)
    got = requests.get(served.eval_url + "/eval_access_log", params={"since": before}, timeout=10).json()
    assert [e["path"] for e in got["entries"]] == ["/time", "POST /clock", f"/eval_access_log?since={before}"]
