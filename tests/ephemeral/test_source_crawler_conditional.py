"""The source crawler's conditional recrawls against the world over HTTP (validators on): a source with
nothing new answers 304 and its recrawl reveals no link; discovery's fetch of a source is its first read,
so no source is fetched twice in full at the start; the validators travel in the changelog records,
so a restarted crawler's first recrawl is conditional; a new page met again under another key is not
fetched twice."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from focuscrawl.ephemeral.crawler import CrawledPage, SourceCrawler, SourceState
from focuscrawl.ephemeral.sources import ACCEPT, ContentSource, discover_sources
from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fetch.conditional import CHANGED, NEW, NOT_MODIFIED, SAME_BODY, Revalidator
from focuscrawl.stream.metrics import Metrics
from focuscrawl.world.server import WorldServer
from focuscrawl.project.world import ValidatorKnobs
from tests.ephemeral.test_source_crawler import _rss
from tests.world.conftest import START, small_world


@pytest.fixture(scope="module")
def world():
    with WorldServer(small_world(seed=4, web=True, users=500)) as server:
        server.world.clock.set(START + 6 * 3600)
        server.world.validators = ValidatorKnobs(enabled=True)
        yield server


def crawler_for(server, fetcher, metrics, rows):
    def fetch(url):
        r = fetcher.fetch(url, accept=ACCEPT)
        return r.body, r.content_type, r.url, r.warc, r.headers  # as streaming/source_crawler.py wires it

    host = server.world.web.hosts[1]
    found, _ = discover_sources(fetch, f"{server.url}/site/{host}/")
    sources = [s for s in found if s.kind in ("rss", "sitemap", "feed")] or found[:3]
    return SourceCrawler(sources, fetch, lambda t, k, r: rows.append((t, r)), server.world.clock.now, budget=1.0,
                         default_interval_s=600.0, min_interval_s=60.0,
                         revalidator=Revalidator(fetcher, on_outcome=metrics.revisit_outcome("sources")))


def test_unchanged_sources_answer_304_and_a_restart_keeps_their_validators(world):
    clock = world.world.clock
    fetcher = Fetcher(user_agent="focuscrawl-test/1.0 (+mailto:t@example.org)", politeness=HostPoliteness(min_delay=0),
                      guard=AddressGuard([world.url.split("//", 1)[1]]))
    metrics, rows = Metrics("source-crawler"), []
    crawler = crawler_for(world, fetcher, metrics, rows)
    n = len(crawler.sources)
    for _ in range(n):  # the first read of every source (its archive): full bodies
        crawler.step()
    assert crawler.revalidator.counts[NEW] == n
    state = crawler.changes()
    assert all(SourceState.from_json(v).validators.etag for k, v in state if k.startswith("source:"))
    # the clock stands still: nothing was published, so every recrawl is a 304 with no new link
    clock.advance(601)
    for _ in range(n):
        assert crawler.step() == "recrawl"
    recrawls = [r for t, r in rows if t == "source_recrawls"]
    assert len(recrawls) == n and all(r["new_links"] == 0 for r in recrawls)
    assert crawler.revalidator.counts[NOT_MODIFIED] == n == crawler.counts["unchanged_recrawls"]
    assert metrics.snapshot()["not_modified_total"] == n and metrics.snapshot()["bytes_saved_total"] > 0

    # a new process restored from the changelog records sends the validators it finds there
    records = dict(state)
    records.update(crawler.changes())
    again_metrics = Metrics("source-crawler")
    again = crawler_for(world, fetcher, again_metrics, [])
    again.restore(records.items())
    assert set(again.revalidator.known) == {s.url for s in again.sources}
    clock.advance(601)
    for _ in range(n):
        again.step()
    assert again.revalidator.counts[NEW] == 0 and again.revalidator.counts[NOT_MODIFIED] == n
    assert again_metrics.snapshot()["not_modified_total"] == n
    fetcher.close()


def test_discovery_is_each_sources_first_read_so_none_is_fetched_twice_in_full_at_the_start(world):
    """Discovery reads every source to find it; the crawler takes that read (links and validators) as the
    source's first, so its first recrawl is conditional: the world serves no source twice in full with the
    same body. A restart restores from the changelog, not from discovery's read."""
    user_agent = "focuscrawl-first-read/1.0 (+mailto:t@example.org)"  # this test's requests in the shared log
    fetcher = Fetcher(user_agent=user_agent, politeness=HostPoliteness(min_delay=0),
                      guard=AddressGuard([world.url.split("//", 1)[1]]))
    metrics, rows = Metrics("source-crawler"), []
    crawler = crawler_for(world, fetcher, metrics, rows)
    n = len(crawler.sources)
    assert crawler.first_reads() == n and all(s.read is None for s in crawler.sources)
    assert set(crawler.revalidator.known) == {s.url for s in crawler.sources}
    assert crawler.status()["frontier"] > 0  # the sources' archives wait as a first recrawl's would
    world.world.clock.advance(601)
    for _ in range(n):
        assert crawler.step() == "recrawl"
    counts = crawler.revalidator.counts
    assert counts[NEW] == counts[SAME_BODY] == 0 and counts[NOT_MODIFIED] + counts[CHANGED] == n
    assert len([r for t, r in rows if t == "source_recrawls"]) == n  # each recrawl's elapsed_s is since discovery
    paths = {urlsplit(s.url).path for s in crawler.sources}
    served = [e for e in world.world.access_log.since(0)["entries"]
              if e["client"].endswith(user_agent) and e["path"] in paths]
    assert [e["conditional"] for e in served] == [False] * n + [True] * n  # discovery's read, then the recrawls
    full = [(e["path"], e["digest"]) for e in served if e["status"] == 200 and e["bytes"]]
    assert len(set(full)) == len(full)  # no source served twice in full with the same body

    # a restarted crawler restores each source from its changelog record; discovery's read is not taken again
    records = crawler.changes()
    again = crawler_for(world, fetcher, Metrics("source-crawler"), [])
    again.restore(records)
    assert again.first_reads() == 0 and again.last_read_ == crawler.last_read_
    fetcher.close()


def test_a_listed_page_is_its_canonical_key_and_its_other_keys_are_known_across_a_restart():
    """A feed lists a page with a tracking parameter; its fetch declares rel=canonical /story: the page is
    crawled as its canonical key, /story is known as it (a later listing of it is no new page, clicks on it
    are the page's), and a restarted crawler knows it from the changelog."""
    feed = "http://a.example/feed"
    fetched = []

    def fetch(url):
        fetched.append(url)
        if url == feed:
            return _rss([("http://A.example/n/1?utm_source=feed", 999.0), ("http://a.example/story", 998.0)]), \
                "application/rss+xml", url
        return b'<html><head><link rel="canonical" href="/story"></head></html>', "text/html", url

    crawler = SourceCrawler([ContentSource(feed, "feed")], fetch, lambda *a: None, lambda: 1000.0, budget=1.0)
    crawler.step()  # the feed: both entries are new pages
    crawler.step()  # the newer page, as its canonical key
    assert fetched == [feed, "http://a.example/n/1"]
    assert crawler.aliases_["http://a.example/n/1"] == ("http://a.example/story",)
    record = dict(crawler.changes())["page:http://a.example/n/1"]
    assert CrawledPage.from_json(record).aliases == ("http://a.example/story",)
    fresh = SourceCrawler([ContentSource(feed, "feed")], fetch, lambda *a: None, lambda: 1000.0, budget=1.0)
    fresh.restore([("page:http://a.example/n/1", record)])
    assert "http://a.example/story" in fresh.seen_pages_
    clicks = fresh.click_rows({"until": 5.0, "clicks": [{"url": "http://a.example/story?fbclid=x", "crawled_at": 1.0,
                                                         "clicks": 3}]})
    assert [r["page_url"] for r in clicks] == ["http://a.example/n/1"]


def test_a_new_page_that_is_its_directory_soft_404_lands_no_row_and_is_a_dead_letter():
    """A site answers missing pages 200 OK with its "not found" page: the second such page listed makes the
    probe ask its directory for a page that cannot exist, whose answer is the same text, so that page lands no
    ``source_pages`` row and goes to the dead letters; a real page lands (the first "not found" is taken for
    content: the probe's stated price)."""
    from focuscrawl.fetch.soft404 import Soft404Probe
    from focuscrawl.outlinks.revisit import page_content

    feed = "http://a.example/feed"
    missing = b"<html><body><h1>Sorry, we could not find that page</h1><p>Try the front page.</p></body></html>"
    pages = {"http://a.example/wiki/Real": b"<html><body><h1>Real</h1><p>A page about real things.</p></body></html>"}
    fetched, rows, dead = [], [], []

    def fetch(url):
        fetched.append(url)
        if url == feed:
            return _rss([("http://a.example/wiki/Gone_1", 999.0), ("http://a.example/wiki/Gone_2", 998.0),
                         ("http://a.example/wiki/Real", 997.0)]), "application/rss+xml", url
        return pages.get(url, missing), "text/html", url

    probe = Soft404Probe(lambda url: fetch(url)[0], lambda body, url: page_content(body, url)[0])
    crawler = SourceCrawler([ContentSource(feed, "feed")], fetch, lambda t, k, r: rows.append((t, r)),
                            lambda: 1000.0, budget=1.0, on_rejection=dead.append, soft404=probe)
    for _ in range(4):
        crawler.step()
    landed = [r["page_url"] for t, r in rows if t == "source_pages"]
    assert landed == ["http://a.example/wiki/Gone_1", "http://a.example/wiki/Real"]
    assert [(d.parser, d.url) for d in dead] == [("soft404", "http://a.example/wiki/Gone_2")]
    assert dead[0].reason.startswith("soft-404: ") and crawler.counts["soft404_refused"] == 1
    assert probe.probes == 1 and sum("focuscrawl-no-such-page-" in u for u in fetched) == 1
    assert "http://a.example/wiki/Gone_2" not in crawler.crawled_


def test_a_new_page_whose_body_is_no_page_lands_no_row_and_is_a_dead_letter():
    """A new page served malformed (cut off, then a NUL) lands no ``source_pages`` row with no text: it goes to
    the dead letters with its bytes and reason; the source's other page lands."""
    feed = "http://a.example/feed"
    real = b"<html><body><h1>Real</h1><p>A page about real things.</p></body></html>"
    rows, dead = [], []

    def fetch(url):
        if url == feed:
            return _rss([("http://a.example/wiki/Cut", 999.0), ("http://a.example/wiki/Real", 998.0)]), \
                "application/rss+xml", url
        return (real[:20] + b'<<{"\x00' if url.endswith("Cut") else real), "text/html", url

    crawler = SourceCrawler([ContentSource(feed, "feed")], fetch, lambda t, k, r: rows.append((t, r)),
                            lambda: 1000.0, budget=1.0, on_rejection=dead.append)
    for _ in range(3):
        crawler.step()
    assert [r["page_url"] for t, r in rows if t == "source_pages"] == ["http://a.example/wiki/Real"]
    assert [(d.parser, d.url) for d in dead] == [("html", "http://a.example/wiki/Cut")]
    assert dead[0].reason.startswith("NUL byte") and crawler.counts["malformed"] == 1


def test_a_spelling_the_site_rewrites_is_not_fetched_again_once_its_rule_is_learned():
    """Two listed pages redirect from ``/X/`` to ``/X``: the site's rule ``/$ -> $`` (DUST, support 2) is in
    force, so a later listing of ``/C/`` is taken as ``/C``, crawled already: no fetch. A restarted crawler
    learns the rule back from the pages' changelog records."""
    from focuscrawl.fetch.dust import DustRules

    feed, now = "http://a.example/feed", [1000.0]
    reads, fetched = [0], []
    first = [("http://a.example/wiki/A/", 999.0), ("http://a.example/wiki/B/", 998.0), ("http://a.example/wiki/C", 997.0)]

    def fetch(url):
        fetched.append(url)
        if url == feed:
            reads[0] += 1
            return _rss(first if reads[0] == 1 else [*first, ("http://a.example/wiki/C/", 1500.0)]), \
                "application/rss+xml", url
        return b"<html><body><p>a page</p></body></html>", "text/html", url.rstrip("/")

    def crawler():
        return SourceCrawler([ContentSource(feed, "feed")], fetch, lambda *a: None, lambda: now[0], budget=1.0,
                             default_interval_s=600.0, min_interval_s=60.0, dust=DustRules())

    crawl = crawler()
    for _ in range(4):  # the feed, then its three pages
        crawl.step()
    assert sorted(fetched[1:]) == ["http://a.example/wiki/A/", "http://a.example/wiki/B/", "http://a.example/wiki/C"]
    assert crawl.status()["rewrite_rules"]["rules"] == {"a.example": ["/$ -> $"]}
    now[0] += 601
    assert crawl.step() == "recrawl" and crawl.counts["dust_skipped"] == 1
    assert crawl.step() == "idle" and "http://a.example/wiki/C/" not in fetched

    again = crawler()
    again.restore(crawl.changes())
    assert again.status()["rewrite_rules"]["rules"] == {"a.example": ["/$ -> $"]}


def test_a_restart_watches_every_source_it_watched_before_even_when_discovery_misses_some():
    """A fault campaign's restarts of the source crawler watched 20, then 40, then 17 sources: discovery
    keeps a candidate only if its fetch works and it lists a dated link at that moment."""
    from focuscrawl.ephemeral.crawler import remembered_sources

    feed, front = "http://a.example/feed.rss", "http://a.example/"
    before = SourceCrawler([ContentSource(feed, "rss"), ContentSource(front, "front")], lambda url: (b"", "text/html", url),
                           lambda *a: None, lambda: 0.0, budget=1.0, default_interval_s=600.0, min_interval_s=60.0)
    records = before.changes()  # every source, at first
    now = remembered_sources([ContentSource(front, "front")], records)  # the feed's fetch failed this time
    assert now == [ContentSource(front, "front"), ContentSource(feed, "rss")]
    old = [(f"source:{feed}", SourceState(feed, None, 0.0).to_json())]  # written before kinds were kept
    assert remembered_sources([], old) == []
