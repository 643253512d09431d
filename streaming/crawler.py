"""Listing crawler process: Reddit-format listings over HTTP -> Kafka, frontier reordered by pushed priorities.

    python streaming/crawler.py --base-url http://127.0.0.1:18090 --topic focuscrawl.posts

Fetches ``/r/all/new.json?limit=100&after=...`` (``focuscrawl.crawl.listing_crawler``), produces
each post keyed by author with an idempotent producer (acks=all), and keeps the authors in a
priority frontier. Every listing is fetched through the fetch layer (``focuscrawl.fetch``: robots.txt,
per-host politeness of ``--politeness-delay`` seconds, Retry-After and back-off, SSRF guard).
Parser rejections go to the dead-letter topic. Topics are created with the partition and
replication counts of the settings. A background thread follows the compacted priority topic from its beginning
and reorders the frontier while the crawl goes on. The frontier head and counters are written
to ``--status-file`` (JSON) so operators and tests can watch the next pick change.
SIGTERM/SIGINT stop it cleanly; fetch and Kafka errors are logged and retried.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path

from focuscrawl.config import settings
from focuscrawl.crawl import dead_letters
from focuscrawl.crawl.listing_crawler import POSTS_TOPIC, ListingCrawler
from focuscrawl.fetch import Fetcher, FetchError, HostPoliteness
from focuscrawl.priority_topic import USER_PRIORITIES_TOPIC, PriorityFollower
from focuscrawl.status import write_status
from focuscrawl.topics import TopicSpec, ensure_topics, host_key

log = logging.getLogger("focuscrawl.crawler")


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", default=cfg.world_url, help="site serving the listings (default: the world)")
    ap.add_argument("--listing-path", default="/r/all/new.json")
    ap.add_argument("--topic", default=POSTS_TOPIC, help="topic the posts go to")
    ap.add_argument("--priority-topic", default=USER_PRIORITIES_TOPIC)
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between listing fetches (politeness)")
    ap.add_argument("--max-pages", type=int, default=0, help="stop fetching after this many pages (0: never)")
    ap.add_argument("--status-file", type=Path, default=cfg.var_dir / "crawler" / "listing.json")
    ap.add_argument("--politeness-delay", type=float, default=1.0, help="seconds between requests to a host")
    ap.add_argument("--robots-unreachable-ttl", type=float, default=600.0,
                    help="seconds a host stays disallowed after its robots.txt was unreachable")
    ap.add_argument("--dead-letter-topic", default=dead_letters.DEAD_LETTER_TOPIC)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    while True:  # a (re)start while the broker is down waits for it instead of exiting
        try:
            ensure_topics(args.bootstrap, [TopicSpec(args.topic, "author"), TopicSpec(args.dead_letter_topic, "host")],
                          cfg.kafka_partitions, cfg.kafka_replication)
            producer = KafkaProducer(bootstrap_servers=args.bootstrap, enable_idempotence=True, acks="all",
                                     linger_ms=50, client_id="focuscrawl-listing-crawler")
            break
        except KafkaError as exc:
            log.warning("Kafka at %s not reachable (%s); retrying in 5 s", args.bootstrap, exc)
            if stopping.wait(5):
                return 0

    def emit(key: str, value: bytes) -> None:
        producer.send(args.topic, key=key.encode(), value=value)

    def dead_letter(rejection) -> None:
        producer.send(args.dead_letter_topic, key=host_key(rejection.url),
                      value=dead_letters.encode(rejection.dead_letter("listing-crawler")))

    source = Fetcher.from_settings(cfg, politeness=HostPoliteness(min_delay=args.politeness_delay),
                                   robots_unreachable_ttl=args.robots_unreachable_ttl)
    crawler = ListingCrawler(source, emit, args.base_url, args.listing_path, on_rejection=dead_letter)
    follower = PriorityFollower(args.bootstrap, args.priority_topic, crawler.apply_priority)
    follower.start()
    log.info("crawling %s%s into %s; following priorities on %s; status in %s",
             args.base_url, args.listing_path, args.topic, args.priority_topic, args.status_file)

    next_fetch = 0.0
    while not stopping.is_set():
        if (args.max_pages == 0 or crawler.pages < args.max_pages) and time.monotonic() >= next_fetch:
            next_fetch = time.monotonic() + args.interval
            try:
                n = crawler.crawl_page()
                producer.flush(timeout=30)
                log.info("page %d: %d posts; next pick %s", crawler.pages, n, crawler.next_pick())
            except FetchError as exc:
                log.warning("%s; next try in %.1fs", exc, args.interval)
            except Exception:  # noqa: BLE001 - a broker outage must not end the crawl; the producer retries
                log.exception("emitting page %d failed; going on", crawler.pages + 1)
        write_status(args.status_file, crawler.status())
        stopping.wait(min(0.25, max(0.0, next_fetch - time.monotonic())))

    follower.stop()
    follower.join(timeout=10)
    producer.flush(timeout=30)
    producer.close()
    write_status(args.status_file, crawler.status())
    log.info("stopped after %d pages, %d posts", crawler.pages, crawler.posts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
