"""``focuscrawl experiment fue``: every user prioritisation method, side by side, on one world.

Seed ``000_c12b299f5bad9cdf.txt`` sections IV-V and Figures 2-4: the methods run in parallel
against the same world from the same start, each with its own chooser and extractor and the same
extraction budget; the harvest ratio over time, users extracted per hour and the ratio to RND
are reported.

How it runs (one process, efficient): one world server (in-process, clock paused) and one
Community Explorer whose posts go through the posts topic to every method's User Updater (its
own consumer group), so all methods see exactly the same evidence. The world clock advances in
steps of ``--step`` simulated seconds; in each step every method (one thread each, real HTTP)
spends its budget - ``--budget`` user-page requests per simulated hour, so a method that picks
users with long histories extracts fewer, as in the paper - extracting its top users in full;
the reference classifier's verdicts go to the stats topic and from there, exactly once, to the
``fue_extractions`` Delta table. With ``--kafka`` the topics are real Kafka topics, otherwise an
in-memory log with the same offsets. Pseudo-trained HCP variants retrain every
``--pseudo-every`` simulated seconds (the DAG ``fue_pseudo_training`` does it for deployments).

Writes under ``--output`` (:mod:`focuscrawl.fue.report`): ``harvest_ratio.png`` (HR, ratio to
RND and users/hour over time), ``fue_table.md``, ``fue_table.csv`` (one row per method, with the
paper's verdict), ``fue_curve.csv`` (per hour) and ``fue_days.csv`` (per simulated day), after
every simulated day and at the end. ``focuscrawl report fue --run-id ID`` rebuilds them from the
Delta table.
"""

from __future__ import annotations

import argparse
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from focuscrawl.config import settings
from focuscrawl.delta_sink import STREAM_DEAD_LETTER_TABLE, DeltaSink, StreamRecord
from focuscrawl.fue.chooser import UserChooser
from focuscrawl.fue import report
from focuscrawl.fue.metrics import HOUR
from focuscrawl.fue.methods import RANKING_METHODS
from focuscrawl.fue.pipeline import (
    COMMUNITY_CHOOSERS, POSTS_TOPIC, STATS_TABLE, STATS_TOPIC, CommunityExplorer, RedditClient, ReferenceJudge,
    StatsEvent, UserExtractor, candidate_texts, events_of, post_from_json, post_to_json,
)
from focuscrawl.fue.pseudo import PseudoLabelling, PseudoTrainer

log = logging.getLogger(__name__)

DEFAULT_METHODS = "RND,HAS,LAS,HAC,LAC,N00,N06,N12,N18,HCP,LCP"


def parse_duration(text: str) -> float:
    """``90s``, ``30m``, ``6h``, ``7d`` or plain seconds -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = text.strip().lower()
    if text[-1:] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


# -- the topics: real Kafka or an in-memory log with the same contract ------------------------


class MemoryLog:
    """Topics as in-memory lists; each consumer group reads from its own position, like Kafka."""

    def __init__(self) -> None:
        self._topics: dict[str, list[tuple[bytes, bytes]]] = {}
        self._positions: dict[tuple[str, str], int] = {}

    def produce(self, topic: str, key: str, value: bytes) -> None:
        self._topics.setdefault(topic, []).append((key.encode(), value))

    def consume(self, topic: str, group: str) -> list[StreamRecord]:
        log_ = self._topics.get(topic, [])
        start = self._positions.get((topic, group), 0)
        self._positions[(topic, group)] = len(log_)
        return [StreamRecord(topic, 0, start + i, v, k) for i, (k, v) in enumerate(log_[start:])]

    def close(self) -> None:
        pass


class KafkaLog:
    """Real topics: one producer, one consumer per (topic, group); ``consume`` reads up to the end.

    Lock-step needs "everything produced so far": the producer is flushed, the end offsets are
    taken, and the group's consumer polls until it reached them.
    """

    def __init__(self, bootstrap: str, run_id: str, partitions: int = 2) -> None:
        from kafka import KafkaProducer

        self.bootstrap, self.run_id, self.partitions = bootstrap, run_id, partitions
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        self._consumers: dict[tuple[str, str], object] = {}
        self._created: set[str] = set()

    def _name(self, topic: str) -> str:
        return f"{topic}.{self.run_id}"  # one run's topics, so a rerun never reads another's records

    def _ensure(self, topic: str) -> None:
        if topic in self._created:
            return
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics([NewTopic(self._name(topic), self.partitions, 1)])
        except TopicAlreadyExistsError:
            pass
        finally:
            admin.close()
        self._created.add(topic)

    def produce(self, topic: str, key: str, value: bytes) -> None:
        self._ensure(topic)
        self.producer.send(self._name(topic), key=key.encode(), value=value)

    def consume(self, topic: str, group: str) -> list[StreamRecord]:
        from kafka import KafkaConsumer, TopicPartition

        self._ensure(topic)
        self.producer.flush()
        name = self._name(topic)
        consumer = self._consumers.get((topic, group))
        if consumer is None:
            consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=f"{group}.{self.run_id}",
                                     enable_auto_commit=False, auto_offset_reset="earliest")
            consumer.assign([TopicPartition(name, p) for p in range(self.partitions)])
            self._consumers[(topic, group)] = consumer
        parts = list(consumer.assignment())
        end = consumer.end_offsets(parts)
        out: list[StreamRecord] = []
        while any(consumer.position(tp) < end[tp] for tp in parts):
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(StreamRecord(r.topic, r.partition, r.offset, r.value, r.key, r.timestamp) for r in records)
        if out:
            consumer.commit()
        return out

    def close(self) -> None:
        for c in self._consumers.values():
            c.close()
        self.producer.close()


# -- one method's pipeline ---------------------------------------------------------------------


@dataclass
class MethodPipeline:
    """One method's User Updater + Chooser, Extractor and Classifier, with its budget account."""

    name: str
    chooser: UserChooser
    extractor: UserExtractor
    pseudo: PseudoTrainer | None = None
    credit: float = 0.0
    requests_used: int = 0
    events: list[StatsEvent] = field(default_factory=list)

    def update(self, records: list[StreamRecord]) -> None:
        self.chooser.add_posts(post_from_json(r.value) for r in records)

    def spend(self, allowance: float, judge: ReferenceJudge, *, run_id: str, sim_time: float,
              sim_epoch: float) -> list[StatsEvent]:
        """Extract top users while the request budget lasts (a history may overdraw it: paid back later)."""
        self.credit += allowance
        out = []
        while self.credit > 0:
            user = self.chooser.choose()
            if user is None:
                self.credit = min(self.credit, allowance)  # idle budget does not pile up
                break
            history = self.extractor.extract(user)
            self.credit -= history.pages
            self.requests_used += history.pages
            event = judge.judge(history, run_id=run_id, method=self.name, sim_time=sim_time, sim_epoch=sim_epoch)
            self.chooser.feedback(user, event.relevant)
            if self.pseudo is not None:
                self.pseudo.add(event.history_text, event.probability)
            out.append(event)
        self.events.extend(out)
        return out

    def pseudo_train(self, top_n: int) -> int:
        """Retrain the candidate classifier with the pseudo-examples and re-score the top candidates."""
        if self.pseudo is None:
            return 0
        model = self.pseudo.retrain()
        if model is None:
            return 0
        self.chooser.method.set_classifier(model)
        top = candidate_texts(self.chooser, top_n)
        if not top:
            return 0
        scores = self.pseudo.rescore(model, [text for _, text, _ in top])
        return self.chooser.set_scores((user, float(s)) for (user, _, _), s in zip(top, scores))


# -- the run -----------------------------------------------------------------------------------


@dataclass
class Settings:
    methods: list[str]
    duration: float
    budget: float = 120.0              # user-page requests per simulated hour, per method
    step: float = 300.0                # simulated seconds per lock-step
    visits_per_step: int = 2           # communities the explorer reads per step
    cap: int = 1000                    # items per user listing (the site's cap)
    pseudo_every: float = 300.0        # seed V: every 5 minutes
    pseudo_top: int = 50_000           # seed V: the Batch Updater re-scored the 50,000 best
    community_chooser: str = "RANDOM"
    seed: int = 0
    run_id: str = ""


@dataclass
class Classifiers:
    reference: object
    candidate: object
    train_documents: list[str]
    train_labels: list[int]


def train_classifiers(corpus, max_donors: dict[bool, int] | None, seed: int = 0) -> Classifiers:
    """Reference (whole histories, the paper's hyper-parameters) and candidate (snippets) classifiers."""
    from focuscrawl.fue.classifier import (
        corpus_histories, short_evidence_corpus, train_candidate_classifier, train_reference_classifier,
    )

    histories, labels = corpus_histories(corpus, max_donors)
    # The paper's min_df=20 assumes its 486 users; a smaller training set keeps words seen by 5% of users.
    reference = train_reference_classifier(histories, labels, min_df=min(20, max(2, len(histories) // 20)))
    candidate = train_candidate_classifier(histories, labels, seed=seed)
    docs, ys = short_evidence_corpus(histories, labels, seed=seed)
    return Classifiers(reference, candidate, docs, ys)


def build_pipelines(opts: Settings, clf: Classifiers, make_client) -> list[MethodPipeline]:
    pipelines = []
    for name in opts.methods:
        method = RANKING_METHODS.create(name, classifier=clf.candidate, seed=opts.seed)
        labelling = getattr(method, "pseudo_labelling", None)
        pseudo = (PseudoTrainer(clf.train_documents, clf.train_labels, PseudoLabelling(*labelling), {"min_df": 5})
                  if labelling is not None else None)
        pipelines.append(MethodPipeline(name, UserChooser(method), UserExtractor(make_client(name), cap=opts.cap), pseudo))
    return pipelines


def run(opts: Settings, clf: Classifiers, world_url: str, eval_url: str, make_client, topics, sink: DeltaSink | None,
        progress: bool = True, checkpoint=None, checkpoint_every: float = 86400.0) -> list[StatsEvent]:
    """Run every method in lock-step with the world's clock; the stats events of all methods.

    ``checkpoint(events, elapsed)`` is called every ``checkpoint_every`` simulated seconds, so a
    long run reports its finished days even if it is stopped before the end.
    """
    import requests
    from tqdm import tqdm

    run_id = opts.run_id
    clock = requests.post(f"{eval_url}/clock", json={"pause": True}, timeout=10).json()
    start = float(clock["sim_now"])
    explorer = CommunityExplorer(make_client("explorer"), COMMUNITY_CHOOSERS.create(opts.community_chooser, seed=opts.seed))
    pipelines = build_pipelines(opts, clf, make_client)
    judge = ReferenceJudge(clf.reference)
    steps = max(1, int(round(opts.duration / opts.step)))
    allowance = opts.budget * opts.step / HOUR
    next_pseudo = opts.pseudo_every
    bar = tqdm(total=steps, desc="fue experiment", unit="step", disable=not progress)
    with ThreadPoolExecutor(max_workers=max(1, len(pipelines))) as pool:
        for k in range(1, steps + 1):
            now = start + k * opts.step
            requests.post(f"{eval_url}/clock", json={"set": now}, timeout=10)
            for _ in range(opts.visits_per_step):
                for post in explorer.visit():
                    topics.produce(POSTS_TOPIC, post.author, post_to_json(post))

            def one(p: MethodPipeline) -> list[StatsEvent]:
                p.update(topics.consume(POSTS_TOPIC, f"fue-updater-{p.name}"))
                return p.spend(allowance, judge, run_id=run_id, sim_time=k * opts.step, sim_epoch=now)

            for events in pool.map(one, pipelines):
                for e in events:
                    topics.produce(STATS_TOPIC, e.user, e.to_json())
            if k * opts.step >= next_pseudo:
                next_pseudo += opts.pseudo_every
                list(pool.map(lambda p: p.pseudo_train(opts.pseudo_top), pipelines))
            records = topics.consume(STATS_TOPIC, "fue-stats-sink")
            if sink is not None and records:
                sink.write(records)
            period_done = k * opts.step // checkpoint_every > (k - 1) * opts.step // checkpoint_every
            if checkpoint is not None and period_done and k < steps:
                checkpoint([e for p in pipelines for e in p.events], k * opts.step)
            bar.update(1)
            bar.set_postfix_str(" ".join(f"{p.name}={_hr(p.events):.2f}" for p in pipelines[:6]))
    bar.close()
    return [e for p in pipelines for e in p.events]


def _hr(events: list[StatsEvent]) -> float:
    return sum(e.relevant for e in events) / len(events) if events else 0.0


# -- the command -------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(prog="focuscrawl experiment fue", description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=DEFAULT_METHODS, help=f"comma-separated (default {DEFAULT_METHODS})")
    ap.add_argument("--duration", default="1d", help="simulated time: 90m, 6h, 7d ...")
    ap.add_argument("--budget", type=float, default=120.0, help="user-page requests per simulated hour, per method")
    ap.add_argument("--step", default="5m", help="simulated time per lock-step")
    ap.add_argument("--visits-per-step", type=int, default=2)
    ap.add_argument("--cap", type=int, default=1000, help="items per user listing (the site's cap)")
    ap.add_argument("--community-chooser", default="RANDOM", type=str.upper, choices=COMMUNITY_CHOOSERS.names())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="auto", help="world data folder, 'none' (generated) or 'auto' (settings)")
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--base-rate", type=float, default=0.02)
    ap.add_argument("--events-per-minute", type=float, default=60.0)
    ap.add_argument("--train-donors", default="83,403", help="positive,negative donors in the original training set")
    ap.add_argument("--kafka", nargs="?", const=cfg.kafka_bootstrap, default=None,
                    help="run the topics on Kafka (default bootstrap from settings)")
    ap.add_argument("--table", default=STATS_TABLE.path(cfg), help="Delta table of the stats events")
    ap.add_argument("--output", type=Path, default=Path(cfg.var_dir) / "reports" / "fue")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    opts = Settings(methods=RANKING_METHODS.parse(args.methods), duration=parse_duration(args.duration),
                    budget=args.budget, step=parse_duration(args.step), visits_per_step=args.visits_per_step,
                    cap=args.cap, community_chooser=args.community_chooser, seed=args.seed,
                    run_id=f"fue-{uuid.uuid4().hex[:8]}")
    data_dir = cfg.data_dir if args.data == "auto" else (None if args.data == "none" else Path(args.data))
    world = build_world(args.seed, data_dir=data_dir, cache_dir=Path(cfg.var_dir), users=args.users,
                        base_rate=args.base_rate, paused=True, rate_limit=0, web=False,
                        events_per_minute=args.events_per_minute)
    pos, neg = (int(x) for x in args.train_donors.split(","))
    print(f"training the reference and candidate classifiers on {pos}+{neg} {type(world.population.corpus).__name__} donors")
    clf = train_classifiers(world.population.corpus, {True: pos, False: neg}, seed=args.seed)
    topics = KafkaLog(args.kafka, opts.run_id) if args.kafka else MemoryLog()
    sink = DeltaSink(args.table, STATS_TABLE, f"fue-stats-{opts.run_id}",
                     dead_letter_uri=STREAM_DEAD_LETTER_TABLE.path(cfg))
    fetchers = []

    def write_report(events: list[StatsEvent], elapsed: float) -> report.FueReport:
        built = report.build(events_of(asdict(e) for e in events), elapsed)
        report.write(built, args.output)
        return built

    def partial_report(events: list[StatsEvent], elapsed: float) -> None:
        write_report(events, elapsed)
        print(f"\n{elapsed / 86400:g} simulated days done: partial report in {args.output}", flush=True)

    with WorldServer(world) as server:
        guard = AddressGuard((*cfg.allow_private_hosts, f"127.0.0.1:{server.crawl.server_address[1]}"))

        def make_client(name: str) -> RedditClient:
            # Lock-step: the budget paces requests in simulated time, so no wall-clock delay.
            fetcher = Fetcher.from_settings(cfg, guard=guard, politeness=HostPoliteness(min_delay=0.0, max_in_flight=4))
            fetchers.append(fetcher)
            return RedditClient(fetcher, server.url)

        try:
            events = run(opts, clf, server.url, server.eval_url, make_client, topics, sink,
                         progress=not args.no_progress, checkpoint=partial_report)
        finally:
            topics.close()
            for f in fetchers:
                f.close()
    print(write_report(events, opts.duration).markdown())
    print(f"run {opts.run_id}: report in {args.output}; stats in Delta table {args.table} "
          f"(focuscrawl sql \"SELECT method, avg(CAST(relevant AS INT)) FROM focuscrawl.{STATS_TABLE.name} "
          f"WHERE run_id = '{opts.run_id}' GROUP BY method\")")
    return 0
