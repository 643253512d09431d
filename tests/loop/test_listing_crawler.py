"""The listing crawler against a local listing site: pagination, emitted records, frontier, 429 handling."""

from __future__ import annotations

import json

import pytest

from focuscrawl.crawl.listing_crawler import FetchError, HttpListingSource, ListingCrawler, retry_after


def make_crawler(site, sleeps=None):
    emitted: list[tuple[str, dict]] = []
    wait = {"sleep": sleeps.append} if sleeps is not None else {}
    source = HttpListingSource("focuscrawl-test", timeout=5, **wait)
    crawler = ListingCrawler(source, lambda k, v: emitted.append((k, json.loads(v))), site.url, limit=3)
    return crawler, emitted


def test_pages_through_the_listing_and_emits_posts_keyed_by_author(listing_site):
    crawler, emitted = make_crawler(listing_site)
    assert crawler.crawl_page() == 3
    assert crawler.crawl_page() == 2
    assert listing_site.requests == ["/r/all/new.json?limit=3", "/r/all/new.json?limit=3&after=t3_2"]
    assert [k for k, _ in emitted] == ["alice", "bob", "carol", "dave", "bob"]
    first = emitted[0][1]
    assert (first["name"], first["kind"], first["score"]) == ("t3_0", "t3", 0)
    assert first["listing_url"].endswith("/r/all/new.json?limit=3") and first["fetched_at_ms"] > 0
    # The listing ended: the next fetch starts again from the newest posts.
    assert crawler.after is None
    crawler.crawl_page()
    assert listing_site.requests[-1] == "/r/all/new.json?limit=3"


def test_authors_become_candidates_and_pushed_priorities_reorder_them(listing_site):
    crawler, _ = make_crawler(listing_site)
    crawler.crawl_page()
    assert crawler.next_pick() == ("alice", -1.0)  # equal scores: the first seen first
    crawler.apply_priority("carol", 0.9)
    crawler.apply_priority("bob", 0.4)
    assert crawler.next_pick() == ("carol", 0.9)
    crawler.crawl_page()  # seeing carol again keeps her pushed priority
    assert crawler.next_pick() == ("carol", 0.9)
    crawler.apply_priority("carol", None)  # deleted from the compacted topic
    assert crawler.next_pick() == ("bob", 0.4)
    status = crawler.status()
    assert (status["next_pick"], status["candidates"], status["pages"], status["posts"],
            status["priorities_applied"]) == ("bob", 3, 2, 5, 3)


def test_429_retry_after_is_honoured(listing_site):
    sleeps: list[float] = []
    crawler, emitted = make_crawler(listing_site, sleeps)
    listing_site.throttle = 2
    assert crawler.crawl_page() == 3
    assert sleeps == [1.0, 1.0]
    assert len(listing_site.requests) == 3


def test_gives_up_with_a_clear_error(listing_site):
    sleeps: list[float] = []
    source = HttpListingSource("t", timeout=5, max_attempts=2, sleep=sleeps.append)
    with pytest.raises(FetchError, match=r"HTTP 404"):
        source.get(listing_site.url + "/nope")
    assert sleeps == []  # a 404 is not retried
    listing_site.throttle = 5
    with pytest.raises(FetchError, match=r"after 2 attempt\(s\): HTTP 429"):
        source.get(listing_site.url + "/r/all/new.json")
    assert sleeps == [1.0]


def test_retry_after_header_forms():
    assert retry_after("7", default=1) == 7.0
    assert retry_after(None, default=3) == 3
    assert retry_after("garbage", default=2) == 2
    assert retry_after("Wed, 21 Oct 2015 07:28:10 GMT", default=1, now=1445412480.0) == 10.0
