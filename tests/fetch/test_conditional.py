"""Conditional revisits against the world's real HTTP server: validators kept per page, a 304 round trip
archived as a WARC revisit record warcio reads back, servers that ignore validators caught by digest."""

from __future__ import annotations

import pytest
import requests
from warcio.archiveiterator import ArchiveIterator

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fetch.conditional import CHANGED, NEW, NOT_MODIFIED, SAME_BODY, Revalidator, Validators
from focuscrawl.fetch.warc import NOT_MODIFIED_PROFILE, WarcArchive
from focuscrawl.world.server import WorldServer
from focuscrawl.project.world import ValidatorKnobs
from tests.world.conftest import START, small_world


@pytest.fixture(scope="module")
def world():
    with WorldServer(small_world(seed=3, web=True, users=1000)) as server:
        requests.post(server.eval_url + "/clock", json={"set": START + 6 * 3600}, timeout=10)
        server.world.validators = ValidatorKnobs(enabled=True, ignore_share=0.2, seed=1)
        yield server


def fetcher_for(server, archive=None) -> Fetcher:
    return Fetcher(user_agent="focuscrawl-test/1.0 (+mailto:t@example.org)", politeness=HostPoliteness(min_delay=0),
                   guard=AddressGuard([server.url.split("//", 1)[1]]), archive=archive)


def page_url(server, host: str) -> str:
    web = server.world.web
    return server.url + web.page_path(web.pages_of_host[host][0])


def test_a_304_round_trip_lands_a_revisit_record_warcio_reads(world, tmp_path):
    web = world.world.web
    ignoring = world.world.validators.ignoring(web.hosts)
    host = next(h for h in web.hosts if h not in ignoring)
    url = page_url(world, host)
    archive = WarcArchive(tmp_path, prefix="t")
    outcomes = []
    with fetcher_for(world, archive) as fetcher:
        revalidator = Revalidator(fetcher, on_outcome=lambda outcome, saved: outcomes.append((outcome, saved)))
        first = revalidator.fetch(url)
        second = revalidator.fetch(url)
    archive.close()

    assert first.outcome == NEW and first.result.status == 200 and first.validators.etag
    assert second.outcome == NOT_MODIFIED and second.result.status == 304 and second.result.body == b""
    assert second.unchanged and second.validators == first.validators
    assert outcomes == [(NEW, 0), (NOT_MODIFIED, len(first.result.body))]
    assert revalidator.status() == {"revisit_outcomes": {NEW: 1, CHANGED: 0, NOT_MODIFIED: 1, SAME_BODY: 0},
                                    "bytes_saved": len(first.result.body)}
    with open(tmp_path / archive.files[0], "rb") as f:
        found = [(r.rec_type, r.rec_headers, r.http_headers, r.content_stream().read()) for r in ArchiveIterator(f)
                 if r.rec_headers.get_header("WARC-Target-URI") == url and r.rec_type != "request"]
    (kind1, rec1, http1, body1), (kind2, rec2, http2, body2) = found
    assert (kind1, body1) == ("response", first.result.body)
    assert kind2 == "revisit" and body2 == b"" and http2.get_statuscode() == "304"
    assert rec2.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE
    assert rec2.get_header("WARC-Refers-To") == rec1.get_header("WARC-Record-ID") == first.validators.record_id
    assert rec2.get_header("WARC-Record-ID") == second.result.warc.record_id
    assert http2.get_header("ETag") == first.validators.etag


def test_a_changed_page_is_fetched_whole_and_its_validators_replaced(world):
    web = world.world.web
    ignoring = world.world.validators.ignoring(web.hosts)
    now = float(int(world.world.clock.now()))
    # the page of a validator-honouring host that gains its next outlink soonest
    nexts = [(p, next((t for t in web.changes(p, now + 30 * 86400) if t > now), None))
             for h in web.hosts if h not in ignoring for p in web.pages_of_host[h][:20]]
    p, when = min(((p, t) for p, t in nexts if t is not None), key=lambda x: x[1])
    url = world.url + web.page_path(p)
    with fetcher_for(world) as fetcher:
        revalidator = Revalidator(fetcher)
        before = revalidator.fetch(url)
        requests.post(world.eval_url + "/clock", json={"set": when + 1}, timeout=10)
        after = revalidator.fetch(url)
    assert after.outcome == CHANGED and after.result.status == 200
    assert after.validators.etag != before.validators.etag and after.validators.digest != before.validators.digest


def test_a_server_that_ignores_validators_is_caught_by_the_body_digest(world):
    web = world.world.web
    ignoring = world.world.validators.ignoring(web.hosts)
    assert 0 < len(ignoring) < len(web.hosts)
    url = page_url(world, sorted(ignoring)[0])
    with fetcher_for(world) as fetcher:
        revalidator = Revalidator(fetcher)
        first, second = revalidator.fetch(url), revalidator.fetch(url)
    assert first.validators.etag and first.validators.last_modified  # offered, then ignored
    assert second.result.status == 200 and second.outcome == SAME_BODY and second.unchanged
    assert revalidator.bytes_saved == 0 and revalidator.counts[SAME_BODY] == 1


def test_the_knob_is_off_by_default_and_a_plain_get_never_gets_a_304(world):
    """Off (the neutral default): no validators, a conditional request answered in full, as before the knob.
    On: the fetcher's plain GET (no validators) still gets the page; only a conditional one gets a 304."""
    with WorldServer(small_world(seed=3, web=True, users=1000)) as plain:
        url = page_url(plain, plain.world.web.hosts[0])
        first = requests.get(url, timeout=10)
        assert first.status_code == 200 and "ETag" not in first.headers and "Last-Modified" not in first.headers
        assert requests.get(url, headers={"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"},
                            timeout=10).status_code == 200
    host = next(h for h in world.world.web.hosts if h not in world.world.validators.ignoring(world.world.web.hosts))
    url = page_url(world, host)
    with fetcher_for(world) as fetcher:
        plain_get = fetcher.fetch(url)
        again = fetcher.fetch(url)
    assert plain_get.status == again.status == 200 and again.body == plain_get.body
    etag = plain_get.headers["ETag"]
    assert requests.get(url, headers={"If-None-Match": etag}, timeout=10).status_code == 304
    assert requests.get(url, headers={"If-None-Match": '"other"'}, timeout=10).status_code == 200
    assert requests.get(url, headers={"If-Modified-Since": plain_get.headers["Last-Modified"]},
                        timeout=10).status_code == 304


def test_validators_travel_as_json():
    v = Validators('"abc"', "Tue, 14 Nov 2023 22:13:20 GMT", "sha1:00", 12, "<urn:uuid:1>")
    assert Validators.from_json(v.to_json()) == v
    assert v.request_headers() == {"If-None-Match": '"abc"', "If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"}
    assert Validators().request_headers() == {}


def test_the_world_cli_refuses_a_share_outside_zero_to_one(capsys):
    from focuscrawl.world.__main__ import main

    assert main(["serve", "--validators", "--ignore-validators", "1.5", "--port", "0", "--eval-port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--ignore-validators 1.5 is not a share of hosts" in err and "in [0, 1]" in err
