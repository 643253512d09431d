"""The web part (sources, profit curves, changing pages, graph), fault switches and replay, over HTTP."""

from __future__ import annotations

import json
import math
import re

import feedparser
import pytest
import requests

from focuscrawl.world.replay import Replay
from focuscrawl.world.server import WorldServer
from tests.world.conftest import START, small_world


@pytest.fixture(scope="module")
def web():
    with WorldServer(small_world(seed=3, web=True, users=1000)) as server:
        requests.post(server.eval_url + "/clock", json={"set": START + 6 * 3600}, timeout=10)
        yield server


def test_sources_gain_new_pages_at_their_rate(web):
    truth = requests.get(web.eval_url + "/truth/sources", timeout=10).json()["sources"]
    total_rate = sum(s["rate_per_hour"] for s in truth)
    published = sum(s["published"] for s in truth)
    assert abs(published - 6 * total_rate) < 4 * math.sqrt(6 * total_rate)  # Poisson count over 6 hours
    busiest = max(truth, key=lambda s: s["published"])
    r = requests.get(web.url + busiest["path"], timeout=10)
    assert r.status_code == 200
    if busiest["kind"] in ("rss", "atom"):
        assert len(feedparser.parse(r.content).entries) == min(30, busiest["published"])
    else:
        assert len(re.findall(r"/n/\d+-\d+", r.text)) == min(30, busiest["published"])


def test_feeds_and_sitemap_are_well_formed(web):
    truth = requests.get(web.eval_url + "/truth/sources", timeout=10).json()["sources"]
    rss = next(s for s in truth if s["kind"] == "rss" and s["published"] > 0)
    atom = next(s for s in truth if s["kind"] == "atom" and s["published"] > 0)
    for s in (rss, atom):
        feed = feedparser.parse(requests.get(web.url + s["path"], timeout=10).content)
        assert not feed.bozo and feed.entries[0].link.startswith("/site/")
    sitemap = next(s for s in truth if s["kind"] == "sitemap")
    from lxml import etree

    body = requests.get(web.url + sitemap["path"], timeout=10).content
    assert etree.fromstring(body).tag.endswith("urlset")
    # sitemaps.org: every <loc> is a full URL, so the product's parser takes them all
    from focuscrawl.parse.sitemap import parse_sitemap

    parsed = parse_sitemap(body, web.url + sitemap["path"])
    assert parsed.urls and not parsed.rejections
    assert all(e.loc.startswith(web.url + "/site/") for e in parsed.urls)


def test_click_feedback_after_crawl_follows_the_profit_curve(web):
    truth = requests.get(web.eval_url + "/truth/sources", timeout=10).json()["sources"]
    k, src = next((k, s) for k, s in enumerate(truth) if s["published"] > 0)
    pages = requests.get(web.eval_url + "/truth/pages", params={"source": k}, timeout=10).json()["pages"]
    page = pages[-1]
    assert requests.get(web.url + page["path"], timeout=10).status_code == 200
    crawled_at = START + 6 * 3600
    requests.post(web.eval_url + "/clock", json={"advance": 3600}, timeout=10)
    fb = requests.get(web.eval_url + "/feedback/clicks", params={"since": 0}, timeout=10).json()["clicks"]
    row = next(r for r in fb if r["path"] == page["path"])
    P, mu, t0 = page["profit"], src["decay_per_hour"], page["published"]
    assert 0.1 * src["profit"] < P < 10 * src["profit"]
    expected = P * (math.exp(-mu * (crawled_at - t0) / 3600) - math.exp(-mu * (crawled_at + 3600 - t0) / 3600))
    assert row["clicks"] == pytest.approx(expected, rel=1e-4)
    assert row["crawled_at"] == crawled_at
    # ground truth never leaks on the crawl port
    assert requests.get(web.url + "/truth/sources", timeout=10).status_code == 404
    assert requests.get(web.url + "/feedback/clicks", timeout=10).status_code == 404


def test_a_source_publishes_the_same_pages_whatever_times_it_is_read_at():
    """Reads at many times see prefixes of one Poisson process: no page appears back-dated later."""
    read_often = small_world(seed=3, web=True, users=1000).web
    read_once = small_world(seed=3, web=True, users=1000).web
    s, end = 0, START + 2 * 86400
    seen: list[float] = []
    for k in range(1, 49):
        now = START + k * 3600
        times = read_often.published(s, now)
        assert times[: len(seen)] == seen  # what an earlier read saw, nothing inserted before it
        assert all(t <= now for t in times)
        seen = times
    assert read_once.published(s, end) == seen and len(seen) > 0


def test_pages_gain_outlinks_over_time_at_page_rates():
    world = small_world(seed=3, web=True, users=1000)
    w = world.web
    fast = max(range(len(w.names)), key=lambda p: w.change_rate[p])
    before = w.crawl(w.page_path(fast), {}, START)[2].count(b"<a href=")
    after = w.crawl(w.page_path(fast), {}, START + 30 * 86400)[2].count(b"<a href=")
    gained = len(w.changes(fast, START + 30 * 86400))
    assert after - before == min(50, gained) > 0
    # content-related pages (same topic) have correlated change rates
    import numpy as np

    topics = sorted(set(w.topic))
    means = [np.mean([w.change_rate[p] for p in range(len(w.names)) if w.topic[p] == t]) for t in topics]
    assert max(means) / min(means) > 3


def test_graph_vertices_and_uniform_random(web):
    v = requests.get(web.url + "/graph/random.json", timeout=10).json()
    assert set(v) == {"id", "neighbors", "page", "content"} and isinstance(v["id"], str)
    again = requests.get(f"{web.url}/graph/vertex/{v['id']}.json", timeout=10).json()
    assert again == v
    # undirected: every neighbour lists the vertex back
    if v["neighbors"]:
        back = requests.get(f"{web.url}/graph/vertex/{v['neighbors'][0]}.json", timeout=10).json()
        assert v["id"] in back["neighbors"]
    truth = requests.get(web.eval_url + "/truth/graph", timeout=10).json()
    w = web.world.web
    # every content item has exactly one special copy, and as many copies as its meta says
    specials = sum(sp for items in w.content_at.values() for _, sp in items)
    placed = sum(len(items) for items in w.content_at.values())
    assert specials == truth["contents"] == 5000
    assert placed == sum(int(k) * n for k, n in truth["copies_histogram"].items())
    assert requests.get(f"{web.url}/graph/vertex/999999.json", timeout=10).status_code == 404


def test_fault_switches_at_runtime():
    with WorldServer(small_world(seed=5, web=True, users=1000)) as server:
        set_faults = lambda **f: requests.post(server.eval_url + "/faults", json=f, timeout=10).json()  # noqa: E731
        set_faults(error_rate=1.0)
        assert requests.get(server.url + "/r/all/new.json", timeout=10).status_code == 503
        set_faults(error_rate=0.0, malformed_rate=1.0)
        with pytest.raises(json.JSONDecodeError):
            json.loads(requests.get(server.url + "/r/all/new.json", timeout=10).content)
        set_faults(malformed_rate=0.0, truncate_rate=1.0)
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            requests.get(server.url + "/r/all/new.json", timeout=10)
        set_faults(truncate_rate=0.0, redirect_loop=["/r/"])
        with pytest.raises(requests.exceptions.TooManyRedirects):
            requests.get(server.url + "/r/all/new.json", timeout=10)
        host = server.world.web.hosts[0]
        set_faults(redirect_loop=[], robots_disallow=["/user/"], dead_hosts=[host])
        assert "Disallow: /user/" in requests.get(server.url + "/robots.txt", timeout=10).text
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(f"{server.url}/site/{host}/", timeout=10)
        assert requests.get(f"{server.url}/site/{server.world.web.hosts[1]}/", timeout=10).status_code == 200
        assert requests.get(server.url + "/search/clicks.json?since=0", timeout=10).status_code == 200
        set_faults(dead_hosts=[], missing_paths=["/search/clicks.json"])  # a web without a click log
        assert requests.get(server.url + "/search/clicks.json?since=0", timeout=10).status_code == 404
        assert requests.get(f"{server.url}/site/{host}/", timeout=10).status_code == 200
        with pytest.raises(ValueError):
            server.world.faults.update({"no_such_switch": 1})


def test_replay_serves_the_recorded_listing_as_of_sim_time(tmp_path):
    rows = [
        {"url": "http://elsewhere:1/r/all/new.json?limit=100", "fetched_at": START + 10, "status": 200, "body": '{"v": 1}'},
        {"url": "http://elsewhere:1/r/all/new.json?limit=100", "fetched_at": START + 20, "status": 200, "body": '{"v": 2}'},
    ]
    rec = tmp_path / "crawl.jsonl"
    rec.write_text("\n".join(json.dumps(r) for r in rows))
    world = small_world(seed=1)
    world.replay = Replay.load(rec)
    with WorldServer(world) as server:
        url = server.url + "/r/all/new.json?limit=100"
        assert requests.get(url, timeout=10).status_code == 404  # before the first recording
        requests.post(server.eval_url + "/clock", json={"set": START + 15}, timeout=10)
        assert requests.get(url, timeout=10).json() == {"v": 1}
        requests.post(server.eval_url + "/clock", json={"set": START + 25}, timeout=10)
        assert requests.get(url, timeout=10).json() == {"v": 2}


def test_replay_rebuilds_listings_from_a_recorded_posts_delta_table(tmp_path):
    """The listing crawler's reddit_posts rows, written as Delta, come back as paginated listings."""
    import pyarrow as pa
    from deltalake import write_deltalake

    world = small_world(seed=2)
    world.clock.set(START + 600)
    recorded = [c["data"] for c in json.loads(world.crawl("/r/all/new.json", {"limit": "100"})[2])["data"]["children"]]
    rows = [{k: d[k] for k in ("name", "id", "author", "subreddit", "title", "selftext", "score", "num_comments",
                              "created_utc", "permalink")} | {"fetched_at_ms": 1} for d in recorded]
    write_deltalake(str(tmp_path / "reddit_posts"), pa.Table.from_pylist(rows))
    replayed = small_world(seed=99)  # a different world: everything served comes from the recording
    replayed.replay = Replay.load(tmp_path / "reddit_posts")
    with WorldServer(replayed) as server:
        requests.post(server.eval_url + "/clock", json={"set": START + 600}, timeout=10)
        names, after = [], None
        while True:
            page = requests.get(server.url + "/r/all/new.json", params={"limit": 30, **({"after": after} if after else {})},
                                timeout=10).json()["data"]
            names += [c["data"]["name"] for c in page["children"]]
            after = page["after"]
            if after is None:
                break
        assert names == [d["name"] for d in recorded]
        sub = recorded[0]["subreddit"]
        in_sub = requests.get(f"{server.url}/r/{sub}/new.json", timeout=10).json()["data"]["children"]
        assert [c["data"]["name"] for c in in_sub] == [d["name"] for d in recorded if d["subreddit"] == sub][:25]
        assert requests.get(server.url + "/r/all/comments.json", timeout=10).status_code == 404
