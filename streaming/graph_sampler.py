"""Graph sampler process (seed 003): a fresh crawl of the site's graph every round -> ``graph_sample``.

    python streaming/graph_sampler.py --base-url http://127.0.0.1:18090 --sampler RW --query-budget 500 --every-s 300

Every ``--every-s`` wall seconds the sampler named by ``--sampler`` (UNI, RW, MHRW, FS:
``focuscrawl.graph.samplers.SAMPLERS``) spends ``--query-budget`` vertex queries on the site's graph
(``/graph/vertex/{id}.json``, ``/graph/random.json``: ``focuscrawl.graph.access.HttpGraphAccess``)
through the fetch layer (robots.txt, per-host politeness, retries, SSRF guard). The crawl's rows
(``focuscrawl.graph.tables.GRAPH_SAMPLE``) go to ``focuscrawl.graph.sample`` in one Kafka
transaction with the round's record on the compacted ``focuscrawl.graph.sampler.state`` topic, so a
SIGKILL mid-round leaves nothing a ``read_committed`` consumer sees and the restarted sampler goes on
from its last committed round (``focuscrawl.graph.live``). ``streaming/consumer.py --sink
graph_sample`` lands the rows in Delta, where the ``graph_estimation`` DAG picks them up.
``--relevance-store DIR`` (the project's page focus) scores the page of every distinct sampled vertex with
the champion page relevance model there (``focuscrawl.graph.live.PageRelevance``): the rows carry its
relevance, counted as the loop's harvest in ``focuscrawl_pages_scored_total`` and
``focuscrawl_relevant_pages_total``. ``--rounds N`` stops after N rounds in all (0: never). SIGTERM/SIGINT stop between queries;
the open round is dropped, never committed.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from focuscrawl.config import settings
from focuscrawl.graph.live import GRAPH_SAMPLE_TOPIC, GRAPH_SAMPLER_STATE_TOPIC, RoundRecord, SamplingRounds
from focuscrawl.graph.params import DEFAULT as GRAPH, SAMPLER_KNOBS
from focuscrawl.core.params import add_arguments
from focuscrawl.relevance.score import add_relevance_arguments, scorer_from_args
from focuscrawl.stream.process import Stopped, StreamProcess, parser
from focuscrawl.topics.specs import TopicSpec

log = logging.getLogger("focuscrawl.graph_sampler")
NAME = "graph-sampler"


def last_round(proc: StreamProcess, name: str, timeout: float = 60.0) -> RoundRecord | None:
    """The last committed round of sampler ``name``, read from the state topic (read_committed)."""
    from kafka import TopicPartition

    consumer = proc.consumer([], None, isolation_level="read_committed")
    try:
        parts = consumer.partitions_for_topic(GRAPH_SAMPLER_STATE_TOPIC) or set()
        tps = [TopicPartition(GRAPH_SAMPLER_STATE_TOPIC, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        found, deadline = None, time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{GRAPH_SAMPLER_STATE_TOPIC} not read to its end in {timeout:.0f} s; is the broker up?")
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    if r.key == name.encode() and r.value is not None:
                        record = RoundRecord.from_json(r.value)
                        if found is None or record.round > found.round:
                            found = record
        return found
    finally:
        consumer.close(autocommit=False)


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser(NAME, __doc__, cfg)
    ap.add_argument("--base-url", default=cfg.world_url, help="the site whose graph is sampled")
    add_arguments(ap, GRAPH, SAMPLER_KNOBS)
    ap.add_argument("--rounds", type=int, default=0, help="rounds in all, then stop (0: never stop)")
    ap.add_argument("--name", help="crawl name; crawls are <name>-r00000, ... (default: live-<sampler>)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the walks' random choices (per round: seed, round)")
    ap.add_argument("--start", help="start vertex of the walks (default: a uniform vertex from the site)")
    ap.add_argument("--no-uniform", action="store_true", help="the site offers no uniform vertex (/graph/random.json)")
    ap.add_argument("--burn-in", type=int, default=0, help="draws dropped from the start of each walk")
    ap.add_argument("--thinning", type=int, default=1, help="keep every k-th draw")
    add_relevance_arguments(ap)
    args = ap.parse_args(argv)
    if args.no_uniform and (args.sampler.upper() == "UNI" or args.start is None):
        ap.error("--no-uniform: the site draws no uniform vertex, so UNI cannot run and the walks need "
                 "--start VERTEX; give --start with RW, MHRW or FS")
    name = args.name or f"live-{args.sampler.upper()}"
    params = {"burn_in": args.burn_in, "thinning": args.thinning}
    if args.start is not None:
        params["start"] = args.start
    try:
        rounds = SamplingRounds(name, args.sampler, args.query_budget, args.every_s, args.seed, params,
                                args.rounds or None)
    except (KeyError, ValueError) as exc:
        ap.error(str(exc).strip('"'))

    from kafka import KafkaProducer

    from focuscrawl.fetch import FetchError
    from focuscrawl.graph.access import HttpGraphAccess
    from focuscrawl.graph.live import PageRelevance

    with StreamProcess(NAME, args, cfg) as proc:
        proc.ensure_topics([TopicSpec(GRAPH_SAMPLE_TOPIC, "crawl id"),
                            TopicSpec(GRAPH_SAMPLER_STATE_TOPIC, "sampler name", compacted=True)])
        producer = proc.until_kafka(lambda: KafkaProducer(
            bootstrap_servers=proc.bootstrap, transactional_id=f"focuscrawl-{NAME}-{name}", enable_idempotence=True,
            acks="all", linger_ms=20, client_id=f"focuscrawl-{NAME}"), "connecting the transactional producer")
        proc.on_exit(producer.close)
        producer.init_transactions()  # fences a killed predecessor and aborts its open round
        rounds.restore(last_round(proc, name))
        fetcher = proc.fetcher()  # the --fetch-spec site's, at the spec's pace
        scorer = scorer_from_args(args, proc.metrics.page_scored("graph"))
        score = None if scorer is None else PageRelevance(fetcher, scorer)
        proc.status(rounds.status)
        log.info("%s: %s, %d queries a round, every %.0f s, on %s; resuming at round %d",
                 name, rounds.sampler_name, rounds.budget, rounds.every, args.base_url, rounds.next_round)

        proc.control("graph", paced=fetcher)  # `focuscrawl pause/resume graph`, `budget graph fetches_per_second`

        class Access(HttpGraphAccess):
            def _charge(self) -> None:  # between queries: status kept fresh, a stop ends the round uncommitted
                while proc.paused():  # a paused round waits, uncommitted
                    pass
                if not proc.running():
                    raise Stopped()
                super()._charge()

        def access(budget: int) -> HttpGraphAccess:
            return Access(args.base_url, budget=budget, uniform=not args.no_uniform, fetcher=fetcher)

        while proc.running() and not rounds.finished():
            if rounds.due_in() > 0:
                proc.wait(min(rounds.due_in(), 1.0))
                continue
            try:
                record, rows = rounds.sample(access, score)
            except (FetchError, ValueError, NotImplementedError) as exc:
                log.warning("round %d failed (%s); next try in %.0f s", rounds.next_round, exc, max(5.0, args.every_s))
                proc.wait(max(5.0, args.every_s))
                continue
            producer.begin_transaction()
            for row in rows:
                producer.send(GRAPH_SAMPLE_TOPIC, key=record.crawl_id.encode(),
                              value=json.dumps(row, sort_keys=True).encode())
            producer.send(GRAPH_SAMPLER_STATE_TOPIC, key=name.encode(), value=record.to_json())
            producer.commit_transaction()
            proc.metrics.produced.labels(GRAPH_SAMPLE_TOPIC).inc(len(rows))
            rounds.committed(record)
            log.info("round %d committed: crawl %s, %d draws, %d rows, %d queries, %d pages scored, %d relevant",
                     record.round, record.crawl_id, record.draws, record.rows, record.queries, record.pages_scored,
                     record.relevant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
