"""The fetch layer's observer hook counts into the Prometheus metrics: statuses, 429s, Retry-After waits,
retries and robots denials, against a real local HTTP server."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client import generate_latest

from focuscrawl.fetch import RetriesExhaustedError, RobotsDisallowedError, RetryPolicy
from focuscrawl.stream.metrics import Metrics


def samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    """The exposition text parsed back, as Prometheus would read it."""
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_statuses_429s_retry_after_and_robots_are_counted(site, make_fetcher):
    calls = {"n": 0}

    def throttled(_handler):
        calls["n"] += 1
        return (429, {"Retry-After": "1"}, b"slow down") if calls["n"] == 1 else (200, {}, b"ok")

    site.routes["/page"] = throttled
    site.routes["/gone"] = (404, {}, b"no")
    metrics = Metrics("test")
    fetcher = make_fetcher(observer=metrics.fetch_observer, retry=RetryPolicy(max_retries=2, seed=1))
    host = f"http://127.0.0.1:{site.port}"

    assert fetcher.get(site.url + "/page") == b"ok"
    with pytest.raises(RobotsDisallowedError):
        fetcher.get(site.url + "/private/x")
    with pytest.raises(Exception):
        fetcher.get(site.url + "/gone")

    got = samples(metrics)
    assert got[("focuscrawl_fetches_total", (("host", host), ("status", "200")))] == 2  # robots.txt + /page
    assert got[("focuscrawl_fetches_total", (("host", host), ("status", "429")))] == 1
    assert got[("focuscrawl_fetches_total", (("host", host), ("status", "404")))] == 1
    assert got[("focuscrawl_http_429_total", (("host", host),))] == 1
    assert got[("focuscrawl_fetch_retries_total", (("host", host),))] == 1
    # Retry-After: 1 is a floor with up to 10 % jitter on top.
    assert 1.0 <= got[("focuscrawl_retry_after_seconds_total", (("host", host),))] <= 1.1
    assert got[("focuscrawl_robots_denied_total", (("host", host),))] == 1
    assert metrics.snapshot()["fetches_total"] == 4


def test_retries_without_retry_after_add_no_wait(site, make_fetcher):
    site.routes["/busy"] = (503, {}, b"busy")
    metrics = Metrics("test")
    fetcher = make_fetcher(observer=metrics.fetch_observer)  # 2 retries, 0.05 s base back-off
    with pytest.raises(RetriesExhaustedError):
        fetcher.get(site.url + "/busy")
    snap = metrics.snapshot()
    assert (snap["fetch_retries_total"], snap["http_429_total"], snap.get("retry_after_seconds_total", 0)) == (2, 0, 0)


def test_harvest_ratio_follows_the_verdicts():
    metrics = Metrics("test")
    for relevant in (True, False, False, True):
        metrics.verdict("HCP", relevant)
    metrics.verdict("RND", False)
    snap = metrics.snapshot()
    assert (snap["extracted_users_total"], snap["relevant_users_total"]) == (5, 2)
    assert (snap["harvest_ratio[HCP]"], snap["harvest_ratio[RND]"]) == (0.5, 0.0)
