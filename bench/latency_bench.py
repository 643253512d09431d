"""Evidence latency on the live platform: a post first shown in a world listing -> its author's new rank (docs/benchmarks.md).

Real engines, wired as ``focuscrawl up`` wires the FUE loop's front half: the world's HTTP server (in
this process), the Community Explorer (``streaming/fue/explorer.py``: listings fetched with requests
through the product's Fetcher, with the world site of ``projects/world.toml``: politeness 0.05 s,
robots.txt, and its ``[loops.fue] front_page_interval`` and ``visit_interval``, as ``focuscrawl up``
passes them), a Kafka broker, and the User Chooser (``streaming/fue/chooser.py``). For every live
stream item the world lists while the pipeline runs, three times on this machine's clock:

- *visible*: when the world first lists it, the end of its stream bucket (``Population.visible_at``:
  the stream is built a bucket at a time, so not its ``created_utc``) on the world's clock mapped to
  the wall clock (``SimClock.wall_at``);
- *fetched*: the arrival of the first request whose listing delivered it (the world's access log);
- *ranked*: when the chooser's new state of the author, counting the post (its changelog record,
  ``UserState``, lists the post ids its evidence holds), became readable: a ``read_committed``
  consumer of the chooser's changelog topic receives it. The record's CreateTime (when the chooser
  sent it, inside its transaction) is kept too: ``sent - fetched`` is the explorer, Kafka and the fold.

latency = ranked - visible = (fetched - visible) + (ranked - fetched). Every post shows first on the
front page, ``/r/all/new``, which the explorer reads every ``--front-page-interval`` seconds (start to
start), whatever its community visits do; a post waits for the next read, so listing-to-fetch is
at most about that period (the ``all_new_period_s`` measured): a p99 <= 2 s target needs a period
well under 2 s. Posts turn visible a bucket at a time (``bucket_wall_s``, 1 s): with a 1 s period
every post of a run waits about the same share of it, set by the phase between the two clocks. The explorer sends each post once (its listings
overlap), so a short period does not flood the chooser with posts it has counted already. Comments
(``t1``) are listed only by their community's ``comments.json``, visited at random: reported apart,
not in the target. The chooser runs with ``--lead 0`` (no extractor runs here: a chosen user would
wait for a verdict forever), so every author stays a candidate and each new post re-ranks it.

    python bench/latency_bench.py [--seconds 60] [--warmup 10] [--front-page-interval S] [--interval S]
                                  [--method HCP --classifier-data sdcnl]

Uses the broker and world ports of the settings (starts the broker if it is not up, and stops what
it started). Writes ``--out`` (default ``$FOCUSCRAWL_VAR/bench/latency.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np

from focuscrawl.config import settings
from ingest_bench import Procs
from result_json import default_out, write_result

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (ps TIME), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return round((int(fields[11]) + int(fields[12])) / CLOCK_TICK, 2)


def spread(values) -> dict:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {"n": 0}
    return {"n": int(len(v)), **{f"p{q}": round(float(np.percentile(v, q)), 3) for q in (50, 90, 99)},
            "max": round(float(v.max()), 3), "mean": round(float(v.mean()), 3)}


class RankWatcher:
    """A ``read_committed`` reader of the chooser's changelog: when each post first counts in its author's state."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.ranked: dict[str, tuple[float, float]] = {}  # post id -> (received, record CreateTime), epoch s
        self.records = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="rank-watcher", daemon=True)

    def start(self) -> "RankWatcher":
        self.thread.start()
        return self

    def _run(self) -> None:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                                 isolation_level="read_committed", auto_offset_reset="earliest",
                                 fetch_max_wait_ms=20)
        try:
            parts = None
            while not parts and not self.stopping.is_set():  # the chooser creates its changelog when it starts
                consumer.topics()  # refreshes the metadata
                parts = consumer.partitions_for_topic(self.topic)
                if not parts:
                    time.sleep(0.2)
            if not parts:
                return
            tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            while not self.stopping.is_set():
                for records in consumer.poll(timeout_ms=100).values():
                    received = time.time()
                    for r in records:
                        self.records += 1
                        state = json.loads(r.value) if r.value else {}
                        if state.get("status") != "candidate" or not state.get("evidence"):
                            continue
                        for post_id in state["evidence"].get("post_ids", ()):
                            self.ranked.setdefault(post_id, (received, r.timestamp / 1000))
        finally:
            consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)


def listed_items(world, since_wall: float, until_wall: float, offset: float):
    """``(fullname, kind, visible epoch s)`` of every live stream item first listed in ``[since, until)``."""
    from focuscrawl.world.population import base36

    pop, clock = world.population, world.clock
    for num in list(pop.posts_all) + list(pop.comments_all):  # every live stream item, by its id
        item = pop.item(num)
        visible = clock.wall_at(pop.visible_at(item)) + offset
        if since_wall <= visible < until_wall:
            yield f"{item.kind}_{base36(item.num)}", item.kind, visible


def first_fetches(world) -> tuple[dict[str, float], list[float]]:
    """When each thing was first delivered in a listing, and the arrivals of the ``/r/all/new`` requests."""
    fetched: dict[str, float] = {}
    polls = []
    seq = 0
    while True:
        page = world.access_log.since(seq, 10_000)
        for entry in page["entries"]:
            if entry["path"].startswith("/r/all/new"):
                polls.append(entry["at"])
            for thing in entry["things"]:
                fetched.setdefault(thing, entry["at"])
        if not page["entries"]:
            return fetched, polls
        seq = page["next"]


def fit_classifier(data: str, path: Path) -> dict:
    """A candidate classifier for an HCP-like chooser, fitted as ``bench/chooser_bench.py`` fits it."""
    from chooser_bench import data_dir, erisk, sdcnl

    from focuscrawl.fue import UserClassifier

    t0 = time.perf_counter()
    if data == "erisk":
        _, docs, labels = erisk(data_dir() / "erisk2017" / "erisk2017-train.tar.xz")
        params: dict = {}
    else:
        _, docs, labels = sdcnl(data_dir() / "sdcnl" / "combined-set.csv")
        params = {"min_df": 5}
    classifier = UserClassifier(**params).fit(docs, labels)
    classifier.save(path)
    return {"data": data, "vocabulary": len(classifier.vectorizer_.vocabulary_),
            "fit_seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="posts first listed within this window are timed")
    ap.add_argument("--warmup", type=float, default=10.0,
                    help="seconds after the first rank change before the window (group joins, first transactions)")
    ap.add_argument("--drain", type=float, default=30.0, help="seconds after the window the last posts may take")
    ap.add_argument("--interval", type=float, default=None,
                    help="the explorer's --interval (default: the world project's [loops.fue] visit_interval)")
    ap.add_argument("--front-page-interval", type=float, default=None,
                    help="the explorer's --front-page-interval (default: the world project's [loops.fue] "
                         "front_page_interval)")
    ap.add_argument("--method", default="HAS", help="the chooser's ranking method")
    ap.add_argument("--classifier-data", choices=("sdcnl", "erisk"), default="sdcnl",
                    help="what an HCP-like method's candidate classifier is fitted on")
    ap.add_argument("--speedup", type=float, default=60.0, help="the world's clock (the platform's default)")
    ap.add_argument("--events-per-minute", type=float, default=60.0, help="new posts + comments per simulated minute")
    ap.add_argument("--out", type=Path, default=default_out("latency"))
    args = ap.parse_args(argv)

    from focuscrawl.fue import RANKING_METHODS
    from focuscrawl.fue.pipeline import EXTRACT_TOPIC, SCORES_TOPIC, STATS_TOPIC
    from focuscrawl.project.loading import load_project
    from focuscrawl.stream.spec import FetchSpec
    from focuscrawl.services.kafka import KafkaBroker
    from focuscrawl.topics.specs import TopicSpec, ensure_topics
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    load_start = [round(v, 2) for v in os.getloadavg()]
    work = Path(tempfile.mkdtemp(prefix="latency-bench-", dir=cfg.var_dir))
    chooser_args = ["--method", args.method, "--lead", "0"]
    classifier = None
    if RANKING_METHODS.get(args.method).needs_classifier:
        classifier = fit_classifier(args.classifier_data, work / "candidate.joblib")
        chooser_args += ["--classifier", str(work / "candidate.joblib")]

    broker = KafkaBroker(cfg)
    started_broker = not broker.healthy()
    broker.start(timeout=300)
    world = WorldServer(build_world(5, speedup=args.speedup, data_dir=None, cache_dir=cfg.var_dir, web=False,
                                    rate_limit=0, events_per_minute=args.events_per_minute),
                        cfg.bind_host, cfg.world_port, cfg.world_eval_port).start()
    tag = uuid.uuid4().hex[:6]
    posts, group = f"bench-latency-posts-{tag}", f"bench-latency-{tag}"
    topics = {"--posts-topic": posts, "--stats-topic": f"{STATS_TOPIC}-{tag}",
              "--scores-topic": f"{SCORES_TOPIC}-{tag}", "--extract-topic": f"{EXTRACT_TOPIC}-{tag}"}
    ensure_topics(cfg.kafka_bootstrap, [TopicSpec(posts, "author"), TopicSpec(topics["--stats-topic"], "user"),
                                        TopicSpec(topics["--scores-topic"], "user", compacted=True),
                                        TopicSpec(topics["--extract-topic"], "user")],
                  cfg.kafka_partitions, cfg.kafka_replication)
    project = ROOT / "projects" / "world.toml"
    loaded = load_project(project, check_files=False, check_env=False)
    site, fue_loop = loaded.site("world"), loaded.loops.fue
    politeness = site.politeness_delay
    spec = FetchSpec(site=site).write(work / "explorer.fetch.json")  # what the platform's plan hands the explorer
    intervals_from = {}
    for knob in ("interval", "front_page_interval"):
        key = "visit_interval" if knob == "interval" else knob
        intervals_from[key] = f"--{knob.replace('_', '-')}"
        if getattr(args, knob) is None:
            setattr(args, knob, getattr(fue_loop, key))
            intervals_from[key] = f"{project.relative_to(ROOT)} [loops.fue] {key}"
    watcher = RankWatcher(cfg.kafka_bootstrap, f"focuscrawl.changelog.{group}").start()
    procs = Procs({**os.environ, "PYTHONUNBUFFERED": "1"}, work)
    offset = time.time() - time.monotonic()  # the world's clock runs on time.monotonic
    cpu0 = time.process_time()
    try:
        chooser = procs.start("chooser", "fue/chooser.py", *chooser_args, "--group", group,
                              *[a for kv in topics.items() for a in kv],
                              "--status-file", str(work / "chooser.json"))
        explorer = procs.start("explorer", "fue/explorer.py", "--base-url", cfg.world_url, "--topic", posts,
                               "--fetch-spec", str(spec), "--interval", str(args.interval),
                               "--front-page-interval", str(args.front_page_interval),
                               "--status-file", str(work / "explorer.json"))
        deadline = time.monotonic() + 300
        while not watcher.ranked:  # live: a post went world -> explorer -> Kafka -> chooser -> changelog
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.procs):
                raise RuntimeError(f"no rank change read within 300 s (or a process died); logs in {work}")
            time.sleep(0.2)
        start = time.time() + args.warmup
        time.sleep(args.warmup + args.seconds)
        end = time.time()
        window = list(listed_items(world.world, start, end, offset))
        drain_until = time.monotonic() + args.drain
        while time.monotonic() < drain_until and not all(name in watcher.ranked for name, kind, _ in window
                                                          if kind == "t3"):
            time.sleep(0.5)  # the window's last posts wait for the explorer's next visit
        cpu = {"explorer": cpu_seconds(explorer.pid), "chooser": cpu_seconds(chooser.pid)}
    finally:
        procs.stop()
        watcher.stop()
        world.stop()
        if started_broker:
            broker.stop()
    cpu["bench_process"] = round(time.process_time() - cpu0, 2)  # world server, changelog reader
    explorer_json = work / "explorer.json"
    explorer_status = ({k: v for k, v in json.loads(explorer_json.read_text()).items()
                        if k in ("posts", "front_page", "visits", "failed_reads")} if explorer_json.exists() else None)
    fetched, polls = first_fetches(world.world)
    gaps = np.diff([p for p in polls if start - 5 <= p < end])
    kinds = {}
    for kind, label in (("t3", "posts"), ("t1", "comments")):
        items = [(name, visible) for name, k, visible in window if k == kind]
        done = [(visible, fetched[name], *watcher.ranked[name]) for name, visible in items
                if name in fetched and name in watcher.ranked]
        kinds[label] = {
            "listed": len(items), "fetched": sum(name in fetched for name, _ in items), "ranked": len(done),
            "latency_s": spread([r - v for v, f, r, s in done]),
            "listing_to_fetch_s": spread([f - v for v, f, r, s in done]),
            "fetch_to_rank_s": spread([r - f for v, f, r, s in done]),
            "fetch_to_sent_s": spread([s - f for v, f, r, s in done]),
        }
    result = {
        "bench": "latency", "method": args.method, "classifier": classifier,
        "window_seconds": round(end - start, 1), "posts_per_s": round(kinds["posts"]["ranked"] / (end - start), 2),
        **kinds,
        "poll": {"front_page_interval_s": args.front_page_interval, "visit_interval_s": args.interval,
                 "intervals_from": intervals_from, "politeness_delay_s": politeness,
                 "all_new_period_s": spread(gaps), "explorer": explorer_status,
                 "note": "posts wait for the explorer's next /r/all/new: listing-to-fetch is bounded below by this "
                         "period; explorer: its status at the end (posts sent, each once; listings read)"},
        "world": {"speedup": args.speedup, "events_per_minute": args.events_per_minute,
                  "bucket_wall_s": world.world.population.config.bucket_seconds / args.speedup},
        "cpu_seconds": cpu, "changelog_records_read": watcher.records,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_start": load_start,
                    "load_end": [round(v, 2) for v in os.getloadavg()], "nice": os.nice(0),
                    "threads": {v: os.environ.get(v) for v in THREAD_VARS},
                    "note": "world, explorer, chooser, broker and the changelog reader share the machine's cores"},
        "logs": str(work),
    }
    write_result(args.out, result, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
