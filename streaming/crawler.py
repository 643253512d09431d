"""Listing crawler process: Reddit-format listings over HTTP -> Kafka, frontier reordered by pushed priorities.

    python streaming/crawler.py --base-url http://127.0.0.1:18090 --topic focuscrawl.posts

Fetches ``/r/all/new.json?limit=100&after=...`` (``focuscrawl.crawl.listing_crawler``), produces
each post keyed by author with an idempotent producer (acks=all), and keeps the authors in a
priority frontier. A background thread follows the compacted priority topic from its beginning
and reorders the frontier while the crawl goes on. The frontier head and counters are written
to ``--status-file`` (JSON) so operators and tests can watch the next pick change.
SIGTERM/SIGINT stop it cleanly; fetch and Kafka errors are logged and retried.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from focuscrawl.config import settings
from focuscrawl.crawl.listing_crawler import POSTS_TOPIC, FetchError, HttpListingSource, ListingCrawler
from focuscrawl.priority_topic import USER_PRIORITIES_TOPIC, PriorityFollower

log = logging.getLogger("focuscrawl.crawler")


def write_status(path: Path, status: dict) -> None:
    """Replace the status file atomically (readers never see half a JSON document)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(status))
    os.replace(tmp, path)


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
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=args.bootstrap, enable_idempotence=True, acks="all",
                             linger_ms=50, client_id="focuscrawl-listing-crawler")

    def emit(key: str, value: bytes) -> None:
        producer.send(args.topic, key=key.encode(), value=value)

    crawler = ListingCrawler(HttpListingSource(cfg.user_agent), emit, args.base_url, args.listing_path)
    follower = PriorityFollower(args.bootstrap, args.priority_topic, crawler.apply_priority)
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
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
        stopping.wait(0.25)

    follower.stop()
    follower.join(timeout=10)
    producer.flush(timeout=30)
    producer.close()
    write_status(args.status_file, crawler.status())
    log.info("stopped after %d pages, %d posts", crawler.pages, crawler.posts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
