"""The pieces of ``bench/hygiene_bench.py --live`` that a full run (two platforms, minutes) does not check
quickly: the world's access log records what the classification reads, the live projects switch the
hygiene as the docs say, and a request is classified by its own period and truth alone."""

from __future__ import annotations

import hashlib
import importlib
import zlib
from pathlib import Path

import pytest
import requests

from focuscrawl.project.world import ValidatorKnobs
from focuscrawl.world.mess import Mess
from focuscrawl.world.server import WorldServer
from tests.world.conftest import small_world

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # the benchmarks import their neighbours as scripts do
    return importlib.import_module("hygiene_bench")


def test_the_access_log_records_the_clock_bytes_validators_and_digest_of_each_answer():
    world = small_world(seed=3, web=True, users=1000, mess=Mess(gzip=True))
    world.validators = ValidatorKnobs(enabled=True)
    page = world.web.page_path(0)
    with WorldServer(world) as server:
        full = requests.get(server.url + page, headers={"Accept-Encoding": "gzip"}, stream=True, timeout=10)
        wire = full.raw.read()  # the gzipped bytes as sent
        again = requests.get(server.url + page, headers={"If-None-Match": full.headers["ETag"]}, timeout=10)
        first, second = world.access_log.since(0)["entries"]
    assert full.headers["Content-Encoding"] == "gzip" and again.status_code == 304
    assert first["bytes"] == len(wire) == int(full.headers["Content-Length"])
    assert first["digest"] == hashlib.sha1(zlib.decompress(wire, 31)).hexdigest()
    assert first["validator"] and not first["conditional"] and first["clock"] == world.clock.now()
    assert second["status"] == 304 and second["bytes"] == 0 and second["digest"] is None
    assert second["validator"] and second["conditional"]


def test_the_live_projects_keep_the_web_crawlers_and_switch_the_hygiene(bench):
    after = bench.live_project(ROOT / "projects" / "world.toml", True, "after")
    before = bench.live_project(ROOT / "projects" / "world.toml", False, "before")
    for project in (before, after):
        assert [loop for loop, *_ in project.enabled_loops()] == ["sources", "revisits"]
        assert project.profile.pages is None and project.world.validators.enabled and project.world.mess.calendar
    assert after.sites[0].conditional_fetches and after.sites[0].scope.detect_soft404
    assert after.sites[0].scope.max_date_steps == 0
    site = before.sites[0]
    assert not site.conditional_fetches and not site.scope.detect_soft404
    assert site.scope.max_date_steps is site.scope.max_directory_loops is site.scope.max_query_growth is None


def test_requests_are_classified_by_their_period_and_truth(bench):
    """A source recrawled in full while unchanged wastes a fetch; a page met twice in a period is waste once
    however it was spelled (the repeat of a URL counted apart), and is useful again in the next period."""
    truths = {"/site/a/feed.rss": {"kind": "source", "page": None},
              "/site/a/wiki/P": {"kind": "page", "page": "/site/a/wiki/P"},
              "/site/a/wiki/P/": {"kind": "variant", "page": "/site/a/wiki/P"}}

    def request(path, period, status=200, digest="d", conditional=False):
        return {"path": path, "query": "", "status": status, "period": period, "bytes": 0 if status == 304 else 100,
                "validator": True, "conditional": conditional, "digest": digest if status == 200 else None}

    served = [request("/site/a/feed.rss", 0), request("/site/a/feed.rss", 0),
              request("/site/a/feed.rss", 1, status=304, conditional=True),
              request("/site/a/wiki/P", 0), request("/site/a/wiki/P/", 0), request("/site/a/wiki/P", 0),
              request("/site/a/wiki/P", 1, status=304, conditional=True)]
    result = bench.classify(served, set(), lambda path, query: truths[path])
    assert [r["kind"] for r in served] == [
        "other_source", "unchanged_body_with_validator", "other_source",
        "useful", "same_page_other_url", "same_page_other_url", "useful"]
    assert result["wasted"] == 3 and result["same_page_same_url"] == 1 and result["http_304"] == 2
    assert result["revisit_bytes_saved_share"] == 0.5  # two full bodies paid of four revisits
