"""The source crawler of seed 001 on the world: default recrawls, then the pushed schedule; pages by profit."""

from __future__ import annotations

import email.utils

import numpy as np
import pytest

from focuscrawl.ephemeral.crawler import ClickLog, SourceCrawler
from focuscrawl.lake.decision import DECISION_COLUMN_NAMES
from focuscrawl.ephemeral.sources import ContentSource, discover_sources
from tests.ephemeral.world_pages import BASE, world_fetch


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from focuscrawl.world import build_world

    w = build_world(4, data_dir=None, users=500, cache_dir=tmp_path_factory.mktemp("world"), paused=True)
    w.clock.advance(6 * 3600)  # sources are found by the dated links they list: let some appear
    return w


def run(crawler, world, slots: int, budget: float) -> None:
    for _ in range(slots):
        crawler.step()
        world.clock.advance(1 / budget)


def test_crawler_recrawls_on_the_default_interval_then_follows_the_pushed_schedule(world):
    budget = 0.05
    fetch = world_fetch(world)
    found, _ = discover_sources(fetch, f"{BASE}/site/{world.web.hosts[2]}/")
    sources = [s for s in found if s.kind != "hub"] + [s for s in found if s.kind == "hub"][:7]  # kept small: fast
    rows = []
    crawler = SourceCrawler(sources, fetch, lambda table, key, row: rows.append((table, key, row)), world.clock.now,
                            budget, default_interval_s=1800.0, min_interval_s=60.0)
    run(crawler, world, int(3 * 3600 * budget), budget)
    recrawls = [r for t, _, r in rows if t == "source_recrawls"]
    assert {t for t, _, _ in rows} == {"source_recrawls", "source_pages"} and {k for _, k, _ in rows} == {"127.0.0.1:9"}
    pages = [r for t, _, r in rows if t == "source_pages"]
    assert len(pages) == crawler.counts["pages"] and len({r["page_url"] for r in pages}) == len(pages)
    assert all(r["main_text"] and r["language"] == "en" and r["relevance"] is None for r in pages)  # no scorer here
    # every source read once as its archive, then again at most 1800 s later (a slot is 20 s: due ones
    # queue up); slots no page is worth go to the source due soonest, so some come back early
    assert {r["source_url"] for r in recrawls} == {s.url for s in sources}
    gaps = np.array([r["elapsed_s"] for r in recrawls])
    assert gaps.max() <= 1800 + 20 * len(sources) and gaps.min() >= 60 and (gaps < 1800).any()
    assert sum(r["new_links"] for r in recrawls) > 0 and crawler.counts["pages"] > 0
    # before any push, no model chose a fetch: recrawls on the default interval, pages by the prior's profit
    assert {(r["chosen_by_loop"], r["chosen_by_method"], r["chosen_by_model"], r["chosen_score"]) for r in recrawls} \
        == {("sources", "default_interval", None, None)}
    assert {(r["chosen_by_method"], r["chosen_by_model"]) for r in pages} == {("expected_profit", None)}
    assert all(r["chosen_score"] >= 0 for r in pages)

    fast, dropped = sources[0].url, sources[1].url
    crawler.apply(fast, {"score": 1 / 300, "skip_below": 0.0, "P": 30.0, "mu": 1e-4, "model": "source_schedule",
                         "model_version": 4, "rank": 1})
    crawler.apply(dropped, None)
    rows.clear()
    run(crawler, world, int(3600 * budget), budget)
    assert crawler.interval(fast) == pytest.approx(300) and crawler.interval(dropped) is None
    assert crawler.interval(sources[2].url) == pytest.approx(1800)  # not in the push: keeps its interval
    fast_gaps = [r["elapsed_s"] for t, _, r in rows if t == "source_recrawls" and r["source_url"] == fast]
    assert len(fast_gaps) >= 10 and max(fast_gaps[1:]) <= 300 + 20 * 3
    assert not [r for t, _, r in rows if t == "source_recrawls" and r["source_url"] == dropped]
    chosen = {tuple(r[c] for c in DECISION_COLUMN_NAMES) for t, _, r in rows
              if t == "source_recrawls" and r["source_url"] == fast}
    assert chosen == {("sources", "LAGRANGE", "source_schedule", 4, 1 / 300, 1)}
    assert {(r["chosen_by_model"], r["chosen_by_model_version"]) for t, _, r in rows
            if t == "source_recrawls" and r["source_url"] == sources[2].url} == {(None, None)}  # not in the push
    status = crawler.status()
    assert status["schedules_applied"] == 1 and status["intervals"][fast] == pytest.approx(300)
    assert 60 <= status["last_gaps"][fast] <= 360


def _rss(items) -> bytes:
    body = "".join(f"<item><link>{u}</link><pubDate>{email.utils.formatdate(t, usegmt=True)}</pubDate></item>"
                   for u, t in items)
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>{body}</channel></rss>'.encode()


def test_pages_go_by_expected_remaining_profit_and_those_below_nu_are_skipped():
    now = [1_000_000.0]
    feeds = {"http://a.example/feed": [("http://a.example/1", now[0] - 3600)],
             "http://b.example/feed": [("http://b.example/1", now[0] - 60), ("http://b.example/2", now[0] - 30)]}
    fetched = []

    def fetch(url):
        fetched.append(url)
        return (_rss(feeds[url]), "application/rss+xml", url) if url in feeds else (b"<html></html>", "text/html", url)

    sources = [ContentSource(u, "feed") for u in feeds]
    crawler = SourceCrawler(sources, fetch, lambda *a: None, lambda: now[0], budget=1.0, default_interval_s=1e6)
    for url, P in (("http://a.example/feed", 100.0), ("http://b.example/feed", 1.0)):
        crawler.apply(url, {"score": 1e-6, "skip_below": 0.5, "P": P, "mu": np.log(2) / 3600})
    assert [crawler.step() for _ in range(2)] == ["recrawl", "recrawl"]
    # a's page is an hour old (half its 100 clicks left), b's are fresh but worth at most 1 click
    assert crawler.step() == "page" and fetched[-1] == "http://a.example/1"
    assert crawler.step() == "page" and fetched[-1] == "http://b.example/2"  # newest first
    now[0] += 3600  # b/1 now holds under 0.5 expected clicks: below ν, so the slot checks a source instead
    assert crawler.step() == "recrawl" and crawler.counts["pages"] == 2


def test_click_log_reads_the_body_and_names_what_a_malformed_answer_lacks():
    from focuscrawl.core.records import RecordError

    bodies = iter([b'{"since": 0, "until": 5.0, "clicks": [{"path": "/n/1", "crawled_at": 1.0, "clicks": 2}]}',
                   b'{"until": 9.0, "clicks": [{"path": "/n/1", "clicks": 1}]}'])
    log = ClickLog(lambda since: next(bodies), "http://w.example")
    assert log.poll() == {"until": 5.0, "clicks": [{"url": "http://w.example/n/1", "crawled_at": 1.0, "clicks": 2.0}]}
    with pytest.raises(RecordError, match=r"^ClickAnswer\.clicks: item 0: PageClicks\.crawled_at: missing"):
        log.poll()
    assert log.since_ == 5.0 and log.totals_ == {"http://w.example/n/1": 2.0}  # the bad answer changed nothing


def test_click_log_counts_from_the_crawl_and_keeps_only_our_pages():
    answers = iter([
        {"since": 0, "until": 500.0, "clicks": [{"path": "/n/1", "crawled_at": 100.0, "clicks": 2.4},
                                                {"path": "/n/other", "crawled_at": 50.0, "clicks": 9.0}]},
        {"since": 500, "until": 900.0, "clicks": [{"path": "/n/1", "crawled_at": 100.0, "clicks": 1.3}]},
    ])
    asked = []
    log = ClickLog(lambda since: asked.append(since) or next(answers), "http://w.example/")
    crawler = SourceCrawler([ContentSource("http://w.example/feed", "feed")], lambda u: None, lambda *a: None,
                            lambda: 0.0, budget=1.0)
    crawler.crawled_["http://w.example/n/1"] = ("http://w.example/feed", 40.0)
    first = crawler.click_rows(log.poll())
    second = crawler.click_rows(log.poll())
    assert asked == [0.0, 500.0]
    assert first == [{"source_url": "http://w.example/feed", "page_url": "http://w.example/n/1", "created_at": 40_000_000,
                      "observed_at": 500_000_000, "counted_from": 100_000_000, "clicks": 2}]
    assert second[0]["clicks"] == 4 and second[0]["observed_at"] == 900_000_000  # 2.4 + 1.3, rounded


def test_a_source_link_the_scope_refuses_never_joins_the_frontier():
    from focuscrawl.fetch.scope import Scope, ScopeRules

    now = [1_000_000.0]
    feed = "http://a.example/feed"
    items = [("http://a.example/1", now[0] - 60), ("http://a.example/a/a/a/a", now[0] - 50),
             ("http://a.example/2", now[0] - 40)]
    fetched, refusals = [], []

    def fetch(url):
        fetched.append(url)
        return (_rss(items), "application/rss+xml", url) if url == feed else (b"<html></html>", "text/html", url)

    scope = Scope(ScopeRules(max_pages_per_host=1), on_refusal=refusals.append)
    crawler = SourceCrawler([ContentSource(feed, "feed")], fetch, lambda *a: None, lambda: now[0], budget=1.0,
                            default_interval_s=1e6, scope=scope)
    assert crawler.step() == "recrawl"
    assert [(r.reason, r.url) for r in refusals] == [("trap_repeated_segment", "http://a.example/a/a/a/a"),
                                                     ("host_budget", "http://a.example/2")]
    assert crawler.step() == "page" and fetched[-1] == "http://a.example/1"
    assert crawler.status()["frontier"] == 0 and crawler.status()["scope"]["refused"] == {
        "trap_repeated_segment": 1, "host_budget": 1}
