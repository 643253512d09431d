"""Source crawler process (seed 001): content sources recrawled on the pushed schedule, new pages by profit.

    python streaming/source_crawler.py crawl --site http://127.0.0.1:18090/site/art.wiki.test/ --budget 0.025
    python streaming/source_crawler.py land --table source_recrawls      # and page_clicks, source_pages

``crawl`` finds each site's content sources (front page, category pages, RSS/Atom feeds,
sitemaps: ``focuscrawl.ephemeral.sources``), then spends ``--budget`` fetches per second through
the fetch layer (robots.txt, per-host politeness, SSRF guard) as
``focuscrawl.ephemeral.crawler.SourceCrawler`` decides. What each recrawl revealed goes to the
``focuscrawl.source_recrawls`` topic, each fetched new page (main text, language, and its relevance by the
champion page model of ``--relevance-store``, ``focuscrawl.relevance.score``) to ``focuscrawl.source_pages``,
the click feedback on crawled pages to ``focuscrawl.page_clicks``,
parser rejections to the dead-letter topic. With ``--feedback relevance`` no click log is read: the
``source_pages`` rows' relevance is the profit signal (``focuscrawl.ephemeral.feedback``). The click feedback
(``--feedback clicks``, the default) is what a search engine knows of
its own result pages: clicks on the pages it crawled, from when it crawled them, read from
``--clicks-url`` (on the world, its crawl surface's ``/search/clicks.json``,
``focuscrawl.world.clicks``) through the same fetch layer; with ``--no-click-log`` none is read (the clicks
reach ``page_clicks`` on the project's own topic, ``[loops.sources] clicks_topic``). A background thread follows the
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
page whose text near-duplicates a page crawled before (``focuscrawl.core.dedup``), counted in the status
file's ``near_duplicates_skipped`` and its ``metrics`` (``focuscrawl_near_duplicates_skipped_total``).
Each recrawl (unless the site's ``conditional_fetches`` is false) is a conditional GET with the source's last ``ETag``/``Last-Modified`` (kept in its
changelog record, so a restart keeps them; ``focuscrawl.fetch.conditional``): 304s and the bytes they saved
go to ``focuscrawl_not_modified_total``/``focuscrawl_bytes_saved_total``, full bodies identical to the last
to ``focuscrawl_unchanged_bodies_total`` (``{loop="sources"}``), and the status file. Discovery's fetch of a
source is its first read (its listed links and validators, ``SourceCrawler.first_reads``), so no source is
read twice in full at the start; a source the changelog restored keeps its restored state. URLs are keyed by their
canonical form, with the ``--fetch-spec`` site's ``strip_params``. A new page
joins the frontier only if the site's scope admits its canonical key (``[sites.scope]`` of ``--fetch-spec``,
``focuscrawl.fetch.scope``); each refusal is counted in ``focuscrawl_scope_refused_total{reason}`` and goes to
the dead-letter topic in the slot's transaction. With the scope's ``detect_soft404`` a fetched new page that is
its directory's "not found" answer (``focuscrawl.fetch.soft404``) lands no row and goes to the dead-letter topic
too (the status file's ``soft404_refused``).

``crawl`` runs on the stream scaffold (``focuscrawl.stream.process``: ``--bootstrap``, ``--status-file``,
``--status-every``, ``--metrics-port``, ``--log-level``, the WARC arguments); its fetches are counted on
``--metrics-port``. ``--fetch-spec FILE`` fetches as the project's site (User-Agent, politeness,
robots, OAuth; ``focuscrawl.stream.spec``), and the roots (``--site URL``) default to that site's URL.

``land --table NAME`` runs the one exactly-once consumer, ``streaming/consumer.py --sink NAME``, for one of
the two history tables. SIGTERM/SIGINT stop both cleanly.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # streaming/: the shared consumer entry point

from focuscrawl.config import settings  # noqa: E402
from focuscrawl.crawl.dead_letters import DEAD_LETTER_TOPIC  # noqa: E402
from focuscrawl.fetch.dust import DustRules  # noqa: E402
from focuscrawl.ephemeral.feedback import PROFIT_SIGNALS  # noqa: E402
from focuscrawl.ephemeral.params import CRAWL_KNOBS, DEFAULT as EPHEMERAL  # noqa: E402
from focuscrawl.ephemeral.schedule_topic import SOURCE_SCHEDULE_TOPIC  # noqa: E402
from focuscrawl.ephemeral.tables import HISTORY_TABLES, HISTORY_TOPICS  # noqa: E402
from focuscrawl.core.params import add_arguments  # noqa: E402
from focuscrawl.relevance.score import add_relevance_arguments, scorer_from_args  # noqa: E402
from focuscrawl.stream.process import StreamArgumentParser, StreamProcess, add_common_args  # noqa: E402

log = logging.getLogger("focuscrawl.source_crawler")

NAME = "source-crawler"


def crawl(args, cfg) -> int:
    from focuscrawl.topics.changelog import ChangelogProducer, changelog_topic
    from focuscrawl.crawl import dead_letters
    from focuscrawl.ephemeral.crawler import CLICKS_PATH, ClickLog, SourceCrawler, remembered_sources
    from focuscrawl.ephemeral.schedule_topic import ScheduleFollower
    from focuscrawl.ephemeral.sources import ACCEPT, discover_sources
    from focuscrawl.fetch import FetchError
    from focuscrawl.fetch.clock import SiteClock, robots_url
    from focuscrawl.parse.canon import canonical_url
    from focuscrawl.topics.specs import TopicSpec, host_key

    # The process is named after the crawler (its metrics' process label, its WARC files), as before.
    with StreamProcess(args.name, args, cfg) as proc:
        proc.ensure_topics([TopicSpec(t, "host") for t in (*HISTORY_TOPICS.values(), args.dead_letter_topic)])
        # Restart-safe: rows and the crawler's state records commit in one transaction,
        # so this process keeps its own transactional producer, not the scaffold's idempotent one.
        producer = proc.until_kafka(lambda: ChangelogProducer(
            proc.bootstrap, changelog_topic(args.name), args.name, partitions=cfg.kafka_partitions,
            replication=cfg.kafka_replication), "connecting the transactional producer")
        proc.on_exit(producer.close)
        # The --fetch-spec site's (User-Agent, politeness, robots, OAuth), counted, --warc archived.
        fetcher = proc.fetcher()
        revalidator = proc.revalidator(fetcher, "sources")
        key_of = args.project_site.canonical if args.project_site is not None else canonical_url

        def fetch(url: str):
            result = fetcher.fetch(url, accept=ACCEPT)
            return result.body, result.content_type, result.url, result.warc, result.headers  # headers: validators

        def emit(table: str, key: str, row: dict) -> None:
            producer.send(HISTORY_TOPICS[table], key.encode(), json.dumps(row).encode())
            proc.metrics.produced.labels(HISTORY_TOPICS[table]).inc()

        def dead_letter(rejection) -> None:
            producer.send(args.dead_letter_topic, host_key(rejection.url),
                          dead_letters.encode(rejection.dead_letter("source-crawler")))
            proc.metrics.produced.labels(args.dead_letter_topic).inc()

        index = None
        if args.skip_near_duplicates:
            from focuscrawl.core.dedup import NearDuplicateIndex

            index = NearDuplicateIndex()
        clock = time.time if args.clock == "wall" else SiteClock(
            lambda: fetcher.fetch(robots_url(args.site[0])), refresh_s=args.clock_refresh).attach(fetcher)
        sources = []
        for site in args.site:
            found, rejections = discover_sources(fetch, site, args.max_sources, key_of)
            with producer.transaction():
                for rejection in rejections:
                    dead_letter(rejection)
            sources.extend(found)
            log.info("%s: %d content sources (%s)", site, len(found), ", ".join(sorted({s.kind for s in found})))
        state = producer.restore()
        sources = remembered_sources(sources, state)
        scope = proc.scope(report=dead_letter)
        soft404 = None
        if scope.rules.detect_soft404:  # [sites.scope] detect_soft404: the revisitor's probe, on new pages
            from focuscrawl.fetch.soft404 import Soft404Probe
            from focuscrawl.outlinks.revisit import page_content

            soft404 = Soft404Probe(fetcher.get, lambda body, url: page_content(body, url)[0])
        source_crawler = SourceCrawler(
            sources, fetch, emit, clock, args.budget, args.default_interval_s, args.min_interval_s,
            on_rejection=dead_letter, near_duplicates=index,
            on_near_duplicate=lambda *_: proc.metrics.near_duplicates.labels("sources").inc(),
            revalidator=revalidator, key_of=key_of,
            relevance=scorer_from_args(args, proc.metrics.page_scored("sources")), scope=scope, soft404=soft404,
            dust=DustRules())
        site = urlsplit(args.site[0])
        # --feedback relevance: the pages' relevance is the profit signal; --no-click-log: the clicks land from the
        # project's own topic. Either way no click log is read.
        clicks = None
        if args.feedback == "clicks" and not args.no_click_log:
            clicks_url = args.clicks_url or f"{site.scheme}://{site.netloc}{CLICKS_PATH}"
            clicks = ClickLog(lambda since: fetcher.get(f"{clicks_url}?since={since!r}", accept=["application/json"]),
                              f"{site.scheme}://{site.netloc}")
        source_crawler.restore(state)
        source_crawler.first_reads()  # discovery's fetches, for the sources the changelog did not restore
        if clicks is not None:
            clicks.restore(state)
        log.info("restored %d sources and %d crawled pages from %s", source_crawler.counts["restored_sources"],
                 source_crawler.counts["restored_pages"], producer.changelog)
        proc.follow(args.schedule_topic, source_crawler.apply, follower_cls=ScheduleFollower)
        control = proc.control("sources", fetches_per_second=args.budget)  # `focuscrawl pause/resume/budget sources`

        def status() -> dict:
            figures = source_crawler.status()
            proc.metrics.frontier.set(figures["frontier"])  # new pages waiting
            proc.metrics.candidates.set(figures["sources"])
            return {**figures, **(revalidator.status() if revalidator else {}), "transactions": producer.transactions}

        proc.status(status)
        log.info("crawling %d sources with %.4g fetches/s; following %s; status in %s",
                 len(sources), args.budget, args.schedule_topic, args.status_file)

        def wall_until(site_time: float) -> float:
            """Wall seconds until the crawler's clock reads ``site_time`` (the site clock's extrapolation)."""
            return site_time - time.time() if clock is time.time else clock.wall_until(site_time)

        next_slot = clock()
        # No click log to poll (--feedback relevance, --no-click-log): no feedback deadline. One left in the past
        # made the loop below wait 0 s on end (0.44 of a core in the e2e of 64e4d23).
        next_feedback = time.monotonic() if clicks is not None else math.inf
        while proc.running():
            if proc.paused():
                continue
            now = clock()
            if now >= next_slot:
                with producer.transaction(source_crawler.changes):
                    source_crawler.step()
                # A slot missed while a fetch was slow is lost, not banked: the budget is a rate.
                next_slot = max(next_slot + 1.0 / control.budget("fetches_per_second"), now)
            if clicks is not None and time.monotonic() >= next_feedback:
                next_feedback = time.monotonic() + args.feedback_every
                with producer.transaction(clicks.changes):
                    try:
                        for row in source_crawler.click_rows(clicks.poll()):
                            emit("page_clicks", host_key(row["source_url"]).decode(), row)
                    except (FetchError, ValueError) as exc:
                        log.warning("click log not readable (%s); next try in %.0f s", exc, args.feedback_every)
            # Asleep until the next slot, click-log read or status write (or a stop), not polling.
            proc.wait(min(wall_until(next_slot), next_feedback - time.monotonic(), proc.status_due_in()))
        log.info("stopped: %s", source_crawler.counts)
    return 0


def land(args, cfg) -> int:
    """The one consumer entry point (``streaming/consumer.py --sink NAME``), kept under this name."""
    from consumer import main as consumer_main

    return consumer_main(["--sink", args.table, "--bootstrap", args.bootstrap, "--batch-seconds", str(args.batch_seconds),
                          *(["--group", args.group] if args.group else [])])


def build_parser(cfg) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The command line: ``crawl`` with the scaffold's common arguments (the platform's plan passes them
    after ``crawl``), ``land``; returns the parser and its ``crawl`` subparser."""
    ap = StreamArgumentParser(prog="source_crawler.py", description=__doc__.splitlines()[0])
    ap.cfg = cfg  # StreamArgumentParser.parse_args reads the --fetch-spec
    ap.add_argument("--bootstrap", dest="top_bootstrap", metavar="BOOTSTRAP",
                    help=f"Kafka bootstrap servers (default {cfg.kafka_bootstrap}; also taken after the command)")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=argparse.ArgumentParser)
    c = sub.add_parser("crawl", help="discover the sites' content sources and crawl them",
                       description="Discover the sites' content sources and crawl them on the pushed schedule.")
    add_common_args(c, NAME, cfg)
    c.add_argument("--site", action="append", metavar="URL",
                   help="a site's root URL (repeat for several; default: the --fetch-spec site's)")
    c.set_defaults(bootstrap=None)
    add_arguments(c, EPHEMERAL, CRAWL_KNOBS)
    c.add_argument("--clock", choices=("site", "wall"), default="site",
                   help="site: the Date header of the site's responses (the world's simulated time); wall: this machine's")
    c.add_argument("--clock-refresh", type=float, default=30.0,
                   help="with --clock site: wall seconds without a response before robots.txt is fetched to read the time")
    c.add_argument("--feedback", choices=[name.lower() for name in PROFIT_SIGNALS.names()],
                   default=EPHEMERAL.feedback.lower(),
                   help="the profit signal (focuscrawl.ephemeral.feedback): clicks read from --clicks-url, or the "
                        "fetched pages' relevance (no click log is read)")
    click_log = c.add_mutually_exclusive_group()
    click_log.add_argument("--clicks-url",
                           help="the search engine's click log (default: the first site's origin + /search/clicks.json)")
    click_log.add_argument("--no-click-log", action="store_true",
                           help="with --feedback clicks: read no click log; the clicks reach page_clicks on the "
                                "project's own topic ([loops.sources] clicks_topic, read by the page_clicks consumer)")
    c.add_argument("--feedback-every", type=float, default=10.0, help="wall seconds between click-log reads")
    c.add_argument("--skip-near-duplicates", action="store_true",
                   help="skip a new page whose text near-duplicates a page crawled before (shingle Jaccard >= 0.7)")
    add_relevance_arguments(c)
    c.add_argument("--schedule-topic", default=SOURCE_SCHEDULE_TOPIC)
    c.add_argument("--name", default=NAME,
                   help="this crawler's name: its changelog topic and transactional id (one process per name)")
    c.add_argument("--dead-letter-topic", default=DEAD_LETTER_TOPIC)
    land_ = sub.add_parser("land", help="land one history topic in its Delta table, exactly once")
    land_.add_argument("--bootstrap", default=None, help="Kafka bootstrap servers")
    land_.add_argument("--table", required=True, choices=sorted(HISTORY_TABLES))
    land_.add_argument("--group", help="consumer group (default: <table>-to-delta)")
    land_.add_argument("--batch-seconds", type=float, default=2.0)
    return ap, c


def parse(argv: list[str] | None, cfg) -> argparse.Namespace:
    ap, crawl_parser = build_parser(cfg)
    args = ap.parse_args(argv)
    # --bootstrap before the command (as it always was) or after it (the scaffold's); after it wins.
    args.bootstrap = args.bootstrap or args.top_bootstrap or cfg.kafka_bootstrap
    if args.command == "crawl" and not args.site:
        if args.project_site is None:
            crawl_parser.error("give --site URL (a site's root; repeat for several), or --fetch-spec FILE")
        args.site = [args.project_site.url(cfg) + "/"]
    return args


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    args = parse(argv, cfg)
    if args.command == "crawl":
        return crawl(args, cfg)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return land(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
