"""Page revisitor process: refetch known pages once per period -> Delta ``page_snapshots``, best first.

    python streaming/revisitor.py --seed http://127.0.0.1:18090/site/x.wiki.test/wiki/Some_Page \
        --discover '/site/[^/]+/wiki/' --max-pages 5000

Seed 002 (``focuscrawl.outlinks.revisit``). Pages come from ``--seed`` URLs, from outlinks matching
``--discover``, and, on a restart, from the snapshot table itself (pages already snapshotted this
period are not fetched twice). Every page is fetched through the fetch layer (robots.txt, per-host
politeness, retries, SSRF guard; the world on localhost is allow-listed by the settings) once per
``--interval-days`` (7) of the clock, periods counted from ``--origin``: ``--clock site`` is the
site's own time, read from the ``Date`` header of its responses (``focuscrawl.fetch.clock``; the
world sends its simulated time there), ``--clock wall`` the machine's. Snapshots are appended to Delta every
``--flush-every`` rows, when the oldest unwritten one has waited ``--flush-seconds``, and whenever no page is due. A background thread follows the compacted
page-priority topic from its beginning, so the pushed scores reorder the revisits without a
restart. The head of the order and the counters go to ``--status-file``, fetch counts and the
frontier to ``--metrics-port`` (``focuscrawl.stream.process``); ``--fetch-spec FILE`` fetches as
the project's site at the loop's pace (``focuscrawl.stream.spec``). ``--skip-near-duplicates`` skips a
newly found page whose text near-duplicates a page
fetched before (``focuscrawl.core.dedup``; the index is rebuilt from the table's latest texts on start),
counted in ``focuscrawl_near_duplicates_skipped_total{loop="revisits"}``. Unless the site's
``conditional_fetches`` is false, every revisit is a conditional
GET with the page's last ``ETag``/``Last-Modified`` (kept in the snapshot rows, so a restart keeps them;
``focuscrawl.fetch.conditional``); 304s and the bytes they saved are counted in
``focuscrawl_not_modified_total``/``focuscrawl_bytes_saved_total``, full bodies identical to the last in
``focuscrawl_unchanged_bodies_total`` (all ``{loop="revisits"}``) and the status file. Pages are keyed by
their canonical URL, with the ``--fetch-spec`` site's ``strip_params``; under ``--virtual-hosts`` the host
segment too (``/site/People.Wiki.Test:80/`` is ``/site/people.wiki.test/``); every alias the revisitor
records (a redirect's end, a ``rel=canonical``) teaches its site a rewrite rule (``focuscrawl.fetch.dust``),
so a page's next URL spelled the same way is rewritten before it is fetched.
A page becomes known only if the site's scope admits its canonical key (``[sites.scope]`` of ``--fetch-spec``,
``focuscrawl.fetch.scope``); each refusal is counted in ``focuscrawl_scope_refused_total{reason}`` and sent to
the dead-letter topic; so is a page refused after its fetch (a redirect loop, a 4xx, a soft-404 with
``detect_soft404``), which is then forgotten. ``--relevance-store DIR`` scores every snapshot with the
champion page relevance model there (``focuscrawl.relevance.score``; ``--languages``: pages in other
languages score 0), landed as ``relevance`` in the row; an unchanged (304) snapshot repeats its previous
snapshot's score. SIGTERM/SIGINT flush and stop.
"""

from __future__ import annotations

import logging
import sys
import time

from focuscrawl.config import settings
from focuscrawl.outlinks.params import WEEK
from focuscrawl.relevance.score import add_relevance_arguments, scorer_from_args
from focuscrawl.stream.process import StreamProcess, parser

log = logging.getLogger("focuscrawl.revisitor")

NAME = "revisitor"


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser(NAME, __doc__, cfg)
    ap.add_argument("--seed", action="append", default=[], help="a page to revisit (repeatable)")
    ap.add_argument("--discover", help="regex: outlinks matching it become known pages")
    ap.add_argument("--max-pages", type=int, default=100_000, help="known pages at most")
    ap.add_argument("--virtual-hosts", default="/site/",
                    help="path prefix under which one origin serves several sites (the world's /site/<host>/); "
                         "'' to classify outlinks by registered domain only")
    ap.add_argument("--clock", choices=("site", "wall"), default="site",
                    help="site: the Date header of the site's responses; wall: this machine's clock")
    ap.add_argument("--origin", type=float, default=0.0, help="clock time (Unix seconds) period 0 starts at")
    ap.add_argument("--clock-refresh", type=float, default=30.0,
                    help="with --clock site: wall seconds without a response before robots.txt is fetched to read the time")
    ap.add_argument("--interval-days", type=float, default=WEEK / 86400, help="revisit period on the clock")
    ap.add_argument("--table", default=None, help="snapshot table location (default: page_snapshots in the lake)")
    ap.add_argument("--priority-topic", default=None, help="compacted page-priority topic")
    ap.add_argument("--flush-every", type=int, default=200, help="snapshot rows per Delta commit")
    ap.add_argument("--flush-seconds", type=float, default=30.0,
                    help="a snapshot waits at most this long for its Delta commit (the loop's data clock)")
    ap.add_argument("--idle", type=float, default=1.0, help="seconds to wait when no page is due")
    ap.add_argument("--skip-near-duplicates", action="store_true",
                    help="skip a new page whose text near-duplicates a page fetched before (shingle Jaccard >= 0.7)")
    add_relevance_arguments(ap)
    args = ap.parse_args(argv)

    from focuscrawl.fetch.clock import SiteClock, robots_url
    from focuscrawl.fetch.dust import DustRules
    from focuscrawl.parse.canon import canonical_url, virtual_host_key
    from focuscrawl.outlinks.revisit import PageRevisitor, SnapshotWriter
    from focuscrawl.outlinks.tables import PAGE_PRIORITIES_TOPIC, SNAPSHOTS
    from focuscrawl.outlinks.urls import registered_domain, virtual_host_domain
    from focuscrawl.lake.storage import storage_options
    from focuscrawl.topics.priority import RowFollower

    writer = SnapshotWriter(args.table or SNAPSHOTS.path(cfg), storage_options(cfg) or None)
    seen = writer.history()  # the frontier is rebuilt from the table it lands (restart-safe)
    latest = writer.latest()  # and each page's last content and validators
    if not args.seed and not seen:
        ap.error("no page to revisit: give --seed (the snapshot table has none yet)")
    index = None
    if args.skip_near_duplicates:
        from focuscrawl.core.dedup import NearDuplicateIndex

        index = NearDuplicateIndex()
        for url, row in latest.items():
            index.add(url, row.get("text") or "")
    with StreamProcess(NAME, args, cfg) as proc:
        scorer = scorer_from_args(args, proc.metrics.page_scored("revisits"))  # counts the loop's harvest
        fetcher = proc.fetcher()  # the --fetch-spec site's, at the spec's pace
        site = args.project_site
        revalidator = proc.revalidator(fetcher, "revisits")
        key_of = site.canonical if site is not None else canonical_url
        scope = proc.scope(host_of=virtual_host_domain(args.virtual_hosts) if args.virtual_hosts else registered_domain)
        soft404 = None
        if scope.rules.detect_soft404:
            from focuscrawl.fetch.soft404 import Soft404Probe
            from focuscrawl.outlinks.revisit import page_content

            soft404 = Soft404Probe(fetcher.get, lambda body, url: page_content(body, url)[0])
        clock = SiteClock(refresh_s=args.clock_refresh).attach(fetcher) if args.clock == "site" else time.time
        revisitor = PageRevisitor(fetcher, writer, clock, origin=args.origin, interval=args.interval_days * 86400,
                                  domain_of=virtual_host_domain(args.virtual_hosts) if args.virtual_hosts
                                  else registered_domain, discover=args.discover, max_pages=args.max_pages,
                                  near_duplicates=index,
                                  on_near_duplicate=lambda *_: proc.metrics.near_duplicates.labels("revisits").inc(),
                                  key_of=virtual_host_key(args.virtual_hosts, key_of) if args.virtual_hosts else key_of,
                                  revalidator=revalidator,
                                  scope=scope, on_rejection=proc.dead_letter, soft404=soft404, relevance=scorer,
                                  dust=DustRules(virtual_host_domain(args.virtual_hosts)) if args.virtual_hosts
                                  else DustRules())
        if args.clock == "site":  # before any page, and idle between periods: the time is read from robots.txt
            probe = robots_url(args.seed[0] if args.seed else seen[0][0])
            clock.probe = lambda: fetcher.fetch(probe)
        revisitor.restore(seen, seeds=args.seed, latest=latest)
        topic = args.priority_topic or PAGE_PRIORITIES_TOPIC
        proc.follow(topic, revisitor.apply_pushed, RowFollower)  # whole rows: each snapshot lands what chose it
        # `focuscrawl pause/resume revisits`, `budget revisits fetches_per_second` (the pace per host), `seeds add`
        control = proc.control("revisits", paced=fetcher)

        def status() -> dict:
            proc.metrics.candidates.set(len(revisitor.ranking))
            proc.metrics.frontier.set(revisitor.due())
            return {**revisitor.status(), **(revalidator.status() if revalidator else {}), "written": writer.written}

        proc.status(status)
        log.info("revisiting %d known pages every %.1f days (%s clock) into %s; following %s",
                 len(revisitor.ranking), args.interval_days, args.clock, writer.table_path, topic)

        while proc.running():
            if proc.paused():
                continue
            seeds = control.new_seeds()
            if seeds:
                log.info("%d seed page(s) added, %d of them new", len(seeds), revisitor.add(seeds))
            try:
                revisitor.revisit_next()
            except Exception:  # noqa: BLE001 - the site did not answer (its clock probe neither): log, wait, go on
                log.exception("revisit failed; retrying in %.1f s", args.idle)
            idle = revisitor.due() == 0
            if idle or writer.due(args.flush_every, args.flush_seconds):
                try:
                    if writer.flush():
                        log.info("period %s: %d snapshots in Delta, %d known pages",
                                 revisitor.current_period, writer.written, len(revisitor.ranking))
                except Exception:  # noqa: BLE001 - rows stay buffered and go with the next flush
                    log.exception("writing %d snapshots failed; keeping them for the next flush", len(writer.rows))
            if idle:
                proc.wait(args.idle)
        writer.flush()
        log.info("stopping after %d revisits (%d failed)", revisitor.revisits, revisitor.failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
