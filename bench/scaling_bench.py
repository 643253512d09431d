"""Scale-out in one run: 1 vs 2 instances of each scalable part, on this machine (docs/scale-out.md).

1. ingest: a backlog of ``--backlog`` distinct listing posts (real shapes, from the world) drained
   from a partitioned topic into Delta by 1, then 2, ``streaming/consumer.py`` in one group
   (``ingest_bench.scaling``: rate between the first and last Delta commit);
2. FUE chooser: ``--posts`` posts by ``--users`` authors, keyed by author, drained by 1, then 2,
   ``streaming/fue/chooser.py`` instances in one group (rate between the group's first and last
   offset commit, read with Kafka's admin API);
3. Spark: the related-pages job (``spark_jobs/outlinks_related.py``, exact KNN) over ``--pages``
   unit vectors on the product's standalone cluster with 1, then 2, one-core workers; the
   application's duration as the master reports it, and the spark-submit wall time.

    python bench/scaling_bench.py [--backlog 10000] [--posts 20000] [--pages 20000]

Uses the broker, world and Spark ports of the settings (starts what is not up and stops what it
started). Writes ``--out`` (default ``$FOCUSCRAWL_VAR/bench/scaling.json``) and prints it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from focuscrawl.config import Settings, settings
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS
from focuscrawl.core.params import add_arguments
from ingest_bench import Procs, sample_posts, scaling
from result_json import default_out, write_result

ROOT = Path(__file__).resolve().parents[1]


def ratio(one: float | None, two: float | None) -> float | None:
    return round(two / one, 2) if one and two else None


def post_backlog(posts: int, users: int, seed: int = 0):
    """FUE posts (``focuscrawl.fue.evidence.Post`` as JSON) keyed by author, like the explorer's."""
    rng = random.Random(seed)
    t0 = time.time() - 30 * 86400
    for i in range(posts):
        author = f"u{rng.randrange(users)}"
        post = {"author": author, "created_utc": t0 + rng.random() * 30 * 86400, "score": rng.randrange(200),
                "num_comments": rng.randrange(50), "title": f"post {i}", "text": "", "community": f"c{i % 20}",
                "post_id": f"p{i}"}
        yield author.encode(), json.dumps(post).encode()


def group_committed(admin, group: str, topic: str) -> int:
    """Offsets ``group`` committed over every partition of ``topic`` (0 before its first commit)."""
    offsets = admin.list_group_offsets({group: None}).get(group, {})  # empty for an unknown group
    return sum(m.offset for tp, m in offsets.items() if tp.topic == topic and m.offset > 0)


def end_offsets(cfg: Settings, topic: str) -> int:
    """What a group reading ``topic`` from the start has to commit to be through it."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cfg.kafka_bootstrap)
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        return sum(consumer.end_offsets(parts).values())
    finally:
        consumer.close()


def chooser_scaling(cfg: Settings, env: dict, log_dir: Path, posts: int, users: int, method: str) -> dict:
    """Posts/s a chooser group folds into its ranking with 1 and with 2 instances."""
    from kafka import KafkaAdminClient

    from focuscrawl.fue.pipeline import POSTS_TOPIC, STATS_TOPIC
    from focuscrawl.topics.specs import TopicSpec, ensure_topics
    from ingest_bench import produce

    ensure_topics(cfg.kafka_bootstrap, [TopicSpec(POSTS_TOPIC, "author"), TopicSpec(STATS_TOPIC, "user")],
                  cfg.kafka_partitions, cfg.kafka_replication)
    produce(cfg.kafka_bootstrap, POSTS_TOPIC, post_backlog(posts, users))
    total = end_offsets(cfg, POSTS_TOPIC)
    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka_bootstrap)
    group = f"fue-chooser-{method}"
    out = {"posts": posts, "users": users, "method": method, "partitions": cfg.kafka_partitions}
    try:
        for n in (1, 2):
            # A fresh group each time: both runs fold the whole topic from its first offset.
            if group_committed(admin, group, POSTS_TOPIC):
                admin.delete_groups([group])
            run = Procs(env, log_dir)
            for i in range(n):
                run.start(f"chooser-{n}-{i}", "fue/chooser.py", "--method", method)
            first = last = None
            deadline, done = time.monotonic() + 600, 0
            while time.monotonic() < deadline and last is None:
                done, now = group_committed(admin, group, POSTS_TOPIC), time.monotonic()
                if done and first is None:
                    first = (now, done)
                if done >= total:
                    last = (now, done)
                time.sleep(0.2)
            run.stop()
            if last is None:
                raise RuntimeError(f"{n} chooser(s): {done} of {total} offsets committed after 600 s; logs in {log_dir}")
            span, folded = last[0] - first[0], last[1] - first[1]
            out[f"instances_{n}"] = {"posts": folded, "seconds": round(span, 2),
                                     "posts_per_s": round(folded / span, 1) if span > 0 else None}
    finally:
        admin.close()
    out["scaling_ratio_2_vs_1"] = ratio(out["instances_1"]["posts_per_s"], out["instances_2"]["posts_per_s"])
    return out


def spark_scaling(cfg: Settings, work: Path, pages: int, dimensions: int, k: int, timeout: float) -> dict:
    """The related-pages job on 1 and on 2 one-core workers of the product's standalone cluster."""
    from deltalake import write_deltalake

    from focuscrawl.outlinks.embedding import normalise_rows
    from focuscrawl.outlinks.tables import EMBEDDINGS
    from focuscrawl.services.spark_cluster import SparkCluster, spark_submit

    rng = np.random.default_rng(0)
    # Clustered unit vectors (LSA-like topics): timing only, the job's results are tested elsewhere.
    centres = rng.normal(size=(50, dimensions))
    vectors = normalise_rows(centres[rng.integers(0, 50, pages)] + 0.5 * rng.normal(size=(pages, dimensions)))
    out = {"job": "outlinks_related EXACT", "pages": pages, "dimensions": dimensions, "k": k}
    for n in (1, 2):
        run_cfg = dataclasses.replace(cfg, var_dir=work / f"spark-{n}", lake=str(work / f"spark-{n}" / "lake"))
        table = pa.table({"url": [f"https://site/p{i}" for i in range(pages)],
                          "as_of_period": pa.array(np.zeros(pages, np.int32)),
                          "vector": list(vectors.astype(np.float32))}, schema=EMBEDDINGS.arrow_schema())
        write_deltalake(EMBEDDINGS.path(run_cfg), table)
        cluster = SparkCluster(run_cfg, workers=n, worker_cores=1, worker_memory="1g")
        cluster.start(timeout=300)
        try:
            on_cluster = dataclasses.replace(run_cfg, spark_master=cluster.url)
            t0 = time.perf_counter()
            spark_submit(on_cluster, ROOT / "spark_jobs" / "outlinks_related.py", "--k", str(k), timeout=timeout)
            wall = time.perf_counter() - t0
            app = [a for a in cluster.state().get("completedapps", []) if a["name"] == "outlinks_related"][-1]
            out[f"workers_{n}"] = {"cores": sum(w["cores"] for w in cluster.state()["workers"]),
                                   "app_seconds": round(app["duration"] / 1000, 2), "submit_seconds": round(wall, 2),
                                   "pages_per_s": round(pages / (app["duration"] / 1000), 1)}
        finally:
            cluster.stop()
    out["scaling_ratio_2_vs_1"] = ratio(out["workers_1"]["pages_per_s"], out["workers_2"]["pages_per_s"])
    return out


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backlog", type=int, default=10000, help="listing posts drained into Delta by 1 and 2 consumers")
    ap.add_argument("--posts", type=int, default=20000, help="FUE posts folded by 1 and 2 choosers")
    ap.add_argument("--users", type=int, default=5000, help="distinct authors of those posts")
    ap.add_argument("--method", default="HAS", help="the choosers' ranking method")
    ap.add_argument("--pages", type=int, default=5000, help="pages of the related-pages Spark job")
    ap.add_argument("--spark-timeout", type=float, default=1800.0, help="seconds one spark-submit may take")
    add_arguments(ap, OUTLINKS, ["dimensions", "k"])
    ap.add_argument("--out", type=Path, default=default_out("scaling"))
    args = ap.parse_args(argv)

    from focuscrawl.services.kafka import KafkaBroker
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    broker = KafkaBroker(cfg)
    started_broker = not broker.healthy()
    broker.start(timeout=300)
    world = WorldServer(build_world(5, speedup=10.0, data_dir=None, cache_dir=cfg.var_dir, web=False, rate_limit=0),
                        cfg.bind_host, cfg.world_port, cfg.world_eval_port).start()
    work = Path(tempfile.mkdtemp(prefix="scaling-bench-", dir=cfg.var_dir))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = Procs(env, work)
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_at_start": round(os.getloadavg()[0], 1),
                    "note": "every instance shares the same 2 cores with the broker and the other engineers' jobs"},
        "arguments": {k: str(v) for k, v in vars(args).items()},
        "logs": str(work),
    }
    started = time.time()

    def save(section: str, value: dict) -> None:
        # Written after each part, so a part that fails leaves the others measured.
        result[section] = value
        result["seconds"] = round(time.time() - started, 1)
        result["ratios_2_vs_1"] = {name: result[part]["scaling_ratio_2_vs_1"] for name, part in
                                   (("ingest_consumers", "ingest"), ("chooser_instances", "chooser"),
                                    ("spark_workers", "spark")) if part in result}
        write_result(args.out, result, echo=section == "spark")  # the last part: the whole result on stdout

    try:
        save("ingest", scaling(cfg, env, procs, sample_posts(cfg.world_url), args.backlog, work))
        save("chooser", chooser_scaling(cfg, env, work, args.posts, args.users, args.method))
    finally:
        procs.stop()
        world.stop()
        if started_broker:
            broker.stop()
    save("spark", spark_scaling(cfg, work, args.pages, args.dimensions, args.k, args.spark_timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
