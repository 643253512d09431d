"""Source crawler process (seed 001): content sources recrawled on the pushed schedule, new pages by profit.

    python streaming/source_crawler.py crawl --site http://127.0.0.1:18090/site/art.wiki.test/ --budget 0.025
    python streaming/source_crawler.py land --table source_recrawls      # and --table page_clicks

``crawl`` finds each site's content sources (front page, category pages, RSS/Atom feeds,
sitemaps: ``focuscrawl.ephemeral.sources``), then spends ``--budget`` fetches per second through
the fetch layer (robots.txt, per-host politeness, SSRF guard) as
``focuscrawl.ephemeral.crawler.SourceCrawler`` decides. What each recrawl revealed goes to the
``focuscrawl.source_recrawls`` topic, the click feedback on crawled pages to ``focuscrawl.page_clicks``,
parser rejections to the dead-letter topic. The click feedback is what a search engine knows of
its own result pages: clicks on the pages it crawled, from when it crawled them, read from
``--clicks-url`` (on the world, its crawl surface's ``/search/clicks.json``,
``focuscrawl.world.clicks``) through the same fetch layer. A background thread follows the
compacted schedule topic from its beginning; between pushes the crawler keeps its last schedule.
``--clock site`` runs on the site's own time, the ``Date`` header of its responses
(``focuscrawl.fetch.clock``; the world sends its simulated time there, so budget and intervals
are in simulated seconds), ``--clock wall`` on this machine's. The status (counts,
each source's interval now followed and its latest observed gap) goes to ``--status-file``.
Restart-safe: each slot's rows and the crawler's changed state (``focuscrawl.ephemeral.crawler``:
sources' known links, last reads, waiting pages; crawled pages; the click log's position) commit
in one Kafka transaction with the changelog topic ``focuscrawl.changelog.<--name>``, which the
crawler reads back on start: after a SIGKILL each source's chain of recrawls continues where the
landed rows end (land with ``isolation_level="read_committed"``). ``--skip-near-duplicates`` skips a new
page whose text near-duplicates a page crawled before (``focuscrawl.dedup``), counted in the status
file's ``near_duplicates_skipped`` and its ``metrics`` (``focuscrawl_near_duplicates_skipped_total``).

``land --table NAME`` runs the one exactly-once consumer, ``streaming/consumer.py --sink NAME``, for one of
the two history tables. SIGTERM/SIGINT stop both cleanly.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # streaming/: the shared consumer and status writer

from focuscrawl.config import settings  # noqa: E402
from focuscrawl.crawl.dead_letters import DEAD_LETTER_TOPIC  # noqa: E402
from focuscrawl.ephemeral.schedule_topic import SOURCE_SCHEDULE_TOPIC  # noqa: E402
from focuscrawl.ephemeral.tables import HISTORY_TABLES, HISTORY_TOPICS  # noqa: E402

log = logging.getLogger("focuscrawl.source_crawler")


def crawl(args, cfg) -> int:
    from focuscrawl.changelog import ChangelogProducer, changelog_topic
    from focuscrawl.metrics import Metrics
    from focuscrawl.status import write_status
    from focuscrawl.crawl import dead_letters
    from focuscrawl.ephemeral.crawler import CLICKS_PATH, ClickLog, SourceCrawler
    from focuscrawl.ephemeral.schedule_topic import ScheduleFollower
    from focuscrawl.ephemeral.sources import ACCEPT, discover_sources
    from focuscrawl.fetch import FetchError, Fetcher, HostPoliteness
    from focuscrawl.fetch.clock import SiteClock, robots_url
    from focuscrawl.fetch.warc import archive_from_args
    from focuscrawl.topics import TopicSpec, ensure_topics, host_key

    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Not stopping.set() in the handler: it deadlocks when the signal lands inside stopping.wait().
        signal.signal(sig, lambda *_: threading.Thread(target=stopping.set, daemon=True).start())
    ensure_topics(args.bootstrap, [TopicSpec(t, "host") for t in (*HISTORY_TOPICS.values(), args.dead_letter_topic)],
                  cfg.kafka_partitions, cfg.kafka_replication)
    # Restart-safe (issue 16, point 5): rows and the crawler's state records commit in one transaction.
    producer = ChangelogProducer(args.bootstrap, changelog_topic(args.name), args.name, partitions=cfg.kafka_partitions,
                                 replication=cfg.kafka_replication)
    archive = archive_from_args(args, args.name, cfg.user_agent)  # --warc: every fetch archived
    fetcher = Fetcher.from_settings(cfg, politeness=HostPoliteness(min_delay=args.politeness_delay), archive=archive)

    def fetch(url: str):
        result = fetcher.fetch(url, accept=ACCEPT)
        return result.body, result.content_type, result.url, result.warc

    def emit(table: str, key: str, row: dict) -> None:
        producer.send(HISTORY_TOPICS[table], key.encode(), json.dumps(row).encode())

    def dead_letter(rejection) -> None:
        producer.send(args.dead_letter_topic, host_key(rejection.url),
                      dead_letters.encode(rejection.dead_letter("source-crawler")))

    metrics = Metrics(args.name)
    index = None
    if args.skip_near_duplicates:
        from focuscrawl.dedup import NearDuplicateIndex

        index = NearDuplicateIndex()
    clock = time.time if args.clock == "wall" else SiteClock(
        lambda: fetcher.fetch(robots_url(args.site[0])), refresh_s=args.clock_refresh).attach(fetcher)
    sources = []
    for site in args.site:
        found, rejections = discover_sources(fetch, site, args.max_sources)
        with producer.transaction():
            for rejection in rejections:
                dead_letter(rejection)
        sources.extend(found)
        log.info("%s: %d content sources (%s)", site, len(found), ", ".join(sorted({s.kind for s in found})))
    source_crawler = SourceCrawler(sources, fetch, emit, clock, args.budget, args.default_interval, args.min_interval,
                                   on_rejection=dead_letter, near_duplicates=index,
                                   on_near_duplicate=lambda *_: metrics.near_duplicates.labels("sources").inc())
    site = urlsplit(args.site[0])
    clicks_url = args.clicks_url or f"{site.scheme}://{site.netloc}{CLICKS_PATH}"
    clicks = ClickLog(lambda since: fetcher.get(f"{clicks_url}?since={since!r}", accept=["application/json"]),
                      f"{site.scheme}://{site.netloc}")
    state = producer.restore()
    source_crawler.restore(state)
    clicks.restore(state)
    log.info("restored %d sources and %d crawled pages from %s", source_crawler.counts["restored_sources"],
             source_crawler.counts["restored_pages"], producer.changelog)
    follower = ScheduleFollower(args.bootstrap, args.schedule_topic, source_crawler.apply)
    follower.start()
    log.info("crawling %d sources with %.4g fetches/s; following %s; status in %s",
             len(sources), args.budget, args.schedule_topic, args.status_file)

    next_slot = clock()
    next_feedback = next_status = time.monotonic()
    while not stopping.is_set():
        now = clock()
        if now >= next_slot:
            with producer.transaction(source_crawler.changes):
                source_crawler.step()
            # A slot missed while a fetch was slow is lost, not banked: the budget is a rate.
            next_slot = max(next_slot + 1.0 / args.budget, now)
        if time.monotonic() >= next_feedback:
            next_feedback = time.monotonic() + args.feedback_every
            with producer.transaction(clicks.changes):
                try:
                    for row in source_crawler.click_rows(clicks.poll()):
                        emit("page_clicks", host_key(row["source_url"]).decode(), row)
                except (FetchError, ValueError) as exc:
                    log.warning("click log not readable (%s); next try in %.0f s", exc, args.feedback_every)
        if time.monotonic() >= next_status:
            next_status = time.monotonic() + 1.0
            write_status(args.status_file, {**source_crawler.status(), "transactions": producer.transactions,
                                            "metrics": metrics.snapshot()})
        stopping.wait(0.01)

    follower.stop()
    follower.join(timeout=10)
    producer.close()
    fetcher.close()
    if archive is not None:
        archive.close()
    write_status(args.status_file, {**source_crawler.status(), "metrics": metrics.snapshot()})
    log.info("stopped: %s", source_crawler.counts)
    return 0


def land(args, cfg) -> int:
    """The one consumer entry point (``streaming/consumer.py --sink NAME``), kept under this name."""
    from consumer import main as consumer_main

    return consumer_main(["--sink", args.table, "--bootstrap", args.bootstrap, "--batch-seconds", str(args.batch_seconds),
                          *(["--group", args.group] if args.group else [])])


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.fetch.warc import add_warc_arguments

    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("crawl", help="discover the sites' content sources and crawl them")
    c.add_argument("--site", action="append", required=True, help="a site's root URL (repeat for several)")
    c.add_argument("--budget", type=float, default=0.025, help="fetches per second (recrawls + new pages)")
    c.add_argument("--default-interval", type=float, default=3600.0, help="seconds between recrawls before a schedule")
    c.add_argument("--min-interval", type=float, default=60.0, help="politeness: least seconds between recrawls of a source")
    c.add_argument("--politeness-delay", type=float, default=0.2, help="wall seconds between requests to one host")
    c.add_argument("--max-sources", type=int, default=200, help="candidate sources examined per site")
    c.add_argument("--clock", choices=("site", "wall"), default="site",
                   help="site: the Date header of the site's responses (the world's simulated time); wall: this machine's")
    c.add_argument("--clock-refresh", type=float, default=30.0,
                   help="with --clock site: wall seconds without a response before robots.txt is fetched to read the time")
    c.add_argument("--clicks-url", help="the search engine's click log (default: the first site's origin + /search/clicks.json)")
    c.add_argument("--feedback-every", type=float, default=10.0, help="wall seconds between click-log reads")
    c.add_argument("--skip-near-duplicates", action="store_true",
                   help="skip a new page whose text near-duplicates a page crawled before (shingle Jaccard >= 0.7)")
    c.add_argument("--schedule-topic", default=SOURCE_SCHEDULE_TOPIC)
    c.add_argument("--name", default="source-crawler",
                   help="this crawler's name: its changelog topic and transactional id (one process per name)")
    c.add_argument("--dead-letter-topic", default=DEAD_LETTER_TOPIC)
    c.add_argument("--status-file", type=Path, default=cfg.var_dir / "crawler" / "sources.json")
    add_warc_arguments(c)
    land_ = sub.add_parser("land", help="land one history topic in its Delta table, exactly once")
    land_.add_argument("--table", required=True, choices=sorted(HISTORY_TABLES))
    land_.add_argument("--group", help="consumer group (default: <table>-to-delta)")
    land_.add_argument("--batch-seconds", type=float, default=2.0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return crawl(args, cfg) if args.command == "crawl" else land(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
