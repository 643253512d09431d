"""The listing crawler over the fetch layer against a local listing site: pagination, emitted records,
frontier, and a throttled or missing page (the fetch layer's Retry-After and errors)."""

from __future__ import annotations

import json
import time

import pytest

from focuscrawl.crawl.listing_crawler import ListingCrawler
from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness, HTTPStatusError, RetriesExhaustedError, RetryPolicy
from focuscrawl.fetch.errors import RobotsDisallowedError


@pytest.fixture
def fetcher(listing_site):
    # The site is on loopback: allow-list its port, as the embedded config does for the world.
    with Fetcher("focuscrawl-test", guard=AddressGuard([listing_site.url.split("//", 1)[1]]),
                 politeness=HostPoliteness(min_delay=0), retry=RetryPolicy(max_retries=1, seed=1)) as f:
        yield f


def make_crawler(site, source):
    emitted: list[tuple[str, dict]] = []
    crawler = ListingCrawler(source, lambda k, v: emitted.append((k, json.loads(v))), site.url, limit=3)
    return crawler, emitted


def listing_requests(site) -> list[str]:
    return [p for p in site.requests if p != "/robots.txt"]


def test_pages_through_the_listing_and_emits_posts_keyed_by_author(listing_site, fetcher):
    crawler, emitted = make_crawler(listing_site, fetcher)
    assert crawler.crawl_page() == 3
    assert crawler.crawl_page() == 2
    assert listing_requests(listing_site) == ["/r/all/new.json?limit=3", "/r/all/new.json?limit=3&after=t3_2"]
    assert listing_site.requests[0] == "/robots.txt"  # asked first, once (a 404: everything allowed)
    assert [k for k, _ in emitted] == ["alice", "bob", "carol", "dave", "bob"]
    first = emitted[0][1]
    assert (first["name"], first["kind"], first["score"]) == ("t3_0", "t3", 0)
    assert first["listing_url"].endswith("/r/all/new.json?limit=3") and first["fetched_at_ms"] > 0
    # The listing ended: the next fetch starts again from the newest posts.
    assert crawler.after is None
    crawler.crawl_page()
    assert listing_site.requests[-1] == "/r/all/new.json?limit=3"


def test_authors_become_candidates_and_pushed_priorities_reorder_them(listing_site, fetcher):
    crawler, _ = make_crawler(listing_site, fetcher)
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


def test_posts_land_the_listing_order_that_chose_their_fetch_and_the_status_names_the_push_behind_the_next_pick(
        listing_site, fetcher):
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.lake.decision import DECISION_COLUMN_NAMES
    from focuscrawl.topics.priority import Priority

    crawler, emitted = make_crawler(listing_site, fetcher)
    crawler.crawl_page()
    assert set(DECISION_COLUMN_NAMES) <= set(POSTS_TABLE.arrow_schema().names)
    assert {tuple(row[c] for c in DECISION_COLUMN_NAMES) for _, row in emitted} == {
        ("fue", "listing_order", None, None, None, None)}  # no push chooses a listing fetch
    assert crawler.status()["next_pick_model"] is None  # alice: no push has ranked her
    push = {"method": "HAS", "model": "user_priorities", "model_version": 4, "posts": 2}
    crawler.apply_pushed("carol", Priority.from_json(Priority(0.9, {**push, "rank": 1}).to_json()).row())
    crawler.apply_pushed("bob", Priority(0.4, {**push, "rank": 2}).row())
    status = crawler.status()
    assert (status["next_pick"], status["next_pick_score"], status["next_pick_model"],
            status["next_pick_model_version"], status["next_pick_rank"]) == ("carol", 0.9, "user_priorities", 4, 1)
    assert crawler.pushed["carol"].method == "HAS"
    crawler.apply_pushed("carol", None)  # deleted from the compacted topic: the push goes with it
    status = crawler.status()
    assert (status["next_pick"], status["next_pick_rank"], "carol" in crawler.pushed) == ("bob", 2, False)


def test_a_throttled_page_is_fetched_after_its_retry_after(listing_site, fetcher):
    crawler, emitted = make_crawler(listing_site, fetcher)
    assert crawler.crawl_page() == 3  # robots.txt is cached now
    listing_site.throttle = 1  # one 429 with Retry-After: 1
    started = time.monotonic()
    assert crawler.crawl_page() == 2
    assert time.monotonic() - started >= 1.0
    assert listing_requests(listing_site)[1:] == ["/r/all/new.json?limit=3&after=t3_2"] * 2
    assert [k for k, _ in emitted] == ["alice", "bob", "carol", "dave", "bob"]


def test_a_missing_or_throttled_page_fails_with_the_fetch_layers_error_and_emits_nothing(listing_site, fetcher):
    emitted: list = []
    crawler = ListingCrawler(fetcher, lambda k, v: emitted.append(k), listing_site.url, "/nope", limit=3)
    with pytest.raises(HTTPStatusError, match="answered HTTP 404"):
        crawler.crawl_page()
    assert listing_requests(listing_site) == ["/nope?limit=3"]  # a 404 is not retried
    listing_site.throttle = 5
    crawler = ListingCrawler(fetcher, lambda k, v: emitted.append(k), listing_site.url, limit=3)
    with pytest.raises(RetriesExhaustedError, match="answered HTTP 429 2 times"):
        crawler.crawl_page()
    assert (emitted, crawler.pages) == ([], 0)


def test_a_page_refused_for_good_is_a_dead_letter_and_the_next_pass_starts_from_the_newest_posts(listing_site, fetcher):
    listing_site.robots = "User-agent: *\nDisallow: /r/all/new.json?limit=3&after=\n"
    rejections: list = []
    crawler = ListingCrawler(fetcher, lambda k, v: None, listing_site.url, limit=3, on_rejection=rejections.append)
    assert crawler.crawl_page() == 3
    with pytest.raises(RobotsDisallowedError):
        crawler.crawl_page()
    assert [(r.url, r.parser) for r in rejections] == [(listing_site.url + "/r/all/new.json?limit=3&after=t3_2", "fetch")]
    assert crawler.after is None
    assert crawler.crawl_page() == 3  # the front page again, not the refused page forever
    assert listing_requests(listing_site) == ["/r/all/new.json?limit=3"] * 2
