"""Listing crawler process: Reddit-format listings over HTTP -> Kafka, frontier reordered by pushed priorities.

    python streaming/crawler.py --base-url http://127.0.0.1:18090 --topic focuscrawl.posts

Fetches ``/r/all/new.json?limit=100&after=...`` (``focuscrawl.crawl.listing_crawler``), produces
each post keyed by author, and keeps the authors in a priority frontier. Every listing is fetched
through the fetch layer (``focuscrawl.fetch``: robots.txt, per-host politeness of
``--politeness-delay`` seconds, Retry-After and back-off, SSRF guard). Parser rejections go to the
dead-letter topic. A background thread follows the compacted priority topic from its beginning and
reorders the frontier while the crawl goes on (whole pushed rows: the status names the model, version
and rank of the push behind the next pick). Each post lands what chose its listing fetch (the
listing order, no model: ``chosen_*``). The frontier head and counters go to
``--status-file``; fetch counts, 429s, retries and robots denials to ``--metrics-port``
(``focuscrawl.stream.process``). With ``--fetch-spec FILE`` the site's User-Agent, politeness
(held besides ``--politeness-delay``), robots, rate-limit headers and OAuth apply, and ``--base-url``
defaults to the site's. SIGTERM/SIGINT stop it cleanly; fetch and Kafka errors are logged and retried.
"""

from __future__ import annotations

import logging
import sys
import time

from focuscrawl.config import settings
from focuscrawl.crawl import dead_letters
from focuscrawl.crawl.listing_crawler import POSTS_TOPIC, ListingCrawler
from focuscrawl.fetch import FetchError, HostPoliteness
from focuscrawl.parse.listing import FRONT_PAGE
from focuscrawl.topics.priority import USER_PRIORITIES_TOPIC, RowFollower
from focuscrawl.stream.process import StreamProcess, parser
from focuscrawl.topics.specs import TopicSpec, host_key

log = logging.getLogger("focuscrawl.crawler")

NAME = "crawler-listing"


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser(NAME, __doc__, cfg)
    ap.add_argument("--base-url", default=cfg.world_url, help="site serving the listings (default: the world)")
    ap.add_argument("--listing-path", default=FRONT_PAGE, help="the site's every-community newest posts")
    ap.add_argument("--topic", default=POSTS_TOPIC, help="topic the posts go to")
    ap.add_argument("--priority-topic", default=USER_PRIORITIES_TOPIC)
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between listing fetches (politeness)")
    ap.add_argument("--max-pages", type=int, default=0, help="stop fetching after this many pages (0: never)")
    ap.add_argument("--politeness-delay", type=float, default=1.0,
                    help="this crawler's own least seconds between two requests to a host (a --fetch-spec "
                         "site's politeness_delay holds besides)")
    ap.add_argument("--robots-unreachable-ttl", type=float, default=600.0,
                    help="seconds a host stays disallowed after its robots.txt was unreachable")
    ap.add_argument("--dead-letter-topic", default=dead_letters.DEAD_LETTER_TOPIC)
    args = ap.parse_args(argv)

    with StreamProcess(NAME, args, cfg) as proc:
        # A (re)start while the broker is down waits for it instead of exiting.
        proc.ensure_topics([TopicSpec(args.topic, "author"), TopicSpec(args.dead_letter_topic, "host")])
        proc.producer  # noqa: B018 - connect before the first fetch

        def dead_letter(rejection) -> None:
            proc.send(args.dead_letter_topic, host_key(rejection.url),
                      dead_letters.encode(rejection.dead_letter("listing-crawler")))

        source = proc.fetcher(politeness=HostPoliteness(min_delay=args.politeness_delay),
                              robots_unreachable_ttl=args.robots_unreachable_ttl)
        crawler = ListingCrawler(source, lambda key, value: proc.send(args.topic, key, value), args.base_url,
                                 args.listing_path, on_rejection=dead_letter)
        proc.follow(args.priority_topic, crawler.apply_pushed, RowFollower)  # whole rows: the push's model, rank

        def status() -> dict:
            current = crawler.status()
            proc.metrics.candidates.set(current["candidates"])
            proc.metrics.frontier.set(current["candidates"])
            return current

        proc.status(status)
        log.info("crawling %s%s into %s; following priorities on %s",
                 args.base_url, args.listing_path, args.topic, args.priority_topic)

        next_fetch = 0.0
        while proc.running():
            if (args.max_pages == 0 or crawler.pages < args.max_pages) and time.monotonic() >= next_fetch:
                next_fetch = time.monotonic() + args.interval
                try:
                    n = crawler.crawl_page()
                    proc.flush(timeout=30)
                    log.info("page %d: %d posts; next pick %s", crawler.pages, n, crawler.next_pick())
                    proc.write_status()
                except FetchError as exc:
                    log.warning("%s; next try in %.1fs", exc, args.interval)
                except Exception:  # noqa: BLE001 - a broker outage must not end the crawl; the producer retries
                    log.exception("emitting page %d failed; going on", crawler.pages + 1)
            proc.wait(min(0.25, max(0.0, next_fetch - time.monotonic())))
        log.info("stopping after %d pages, %d posts", crawler.pages, crawler.posts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
