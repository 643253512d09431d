"""Ingest throughput and lag, crawler -> Kafka -> Delta, against raw Kafka, and 1 vs 2 consumer instances.

All in one run on this machine (docs/benchmarks.md and docs/scale-out.md):

1. raw Kafka: kafka-python producer (idempotent, acks=all) then a consumer, no Delta, on records
   shaped like the crawler's (real listing posts from the world);
2. the pipeline: ``streaming/crawler.py`` (the fetch layer) against the world, one
   ``streaming/consumer.py`` into Delta, for ``--seconds`` (60; ``--long`` 300). Records/s is the
   Kafka offsets the consumer committed into Delta per second (the posts the crawler re-reads
   included; the sink stores each post once, so rows/s is given apart); lag is from the crawler's
   fetch (``fetched_at_ms``, the produce follows within the producer's 50 ms linger) to the Delta
   commit that holds the row, from the table's own log;
3. paced: distinct posts produced at exactly ``--rate`` records/s (1,000) for
   ``--paced-seconds`` (default ``--seconds``) into one ``streaming/consumer.py`` with the platform's own
   batch settings (the consumer's defaults, as ``focuscrawl up`` runs it). Lag is produce -> the Delta
   commit that holds the row, and where it goes is split per row into waiting for the batch to close
   (the batch's newest record minus the row's), the rest of the way to the commit (poll, Arrow build,
   Parquet write, log commit) and delta-rs's own ``execution_time_ms`` of the write, plus the files and
   bytes each commit adds (the small files ``delta_maintenance`` compacts). The crawler pipeline above
   is not paced: it offers what the world and crawler give, so its lag shows what happens beyond capacity;
4. scaling: a backlog of ``--backlog`` distinct posts drained into Delta by 1 consumer, then by 2
   consumers in one group (fresh group and table), rate from the first to the last commit.

    python bench/ingest_bench.py [--seconds 60 | --long] [--rate 1000] [--backlog 10000]

Uses the broker and world ports of the settings (starts the broker if it is not up, and stops
what it started). Writes ``--out`` (default ``$FOCUSCRAWL_VAR/bench/ingest.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import requests

from focuscrawl.config import settings
from focuscrawl.world import build_world
from focuscrawl.world.server import WorldServer
from result_json import default_out, write_result

ROOT = Path(__file__).resolve().parents[1]


def sample_posts(world_url: str) -> list[dict]:
    doc = requests.get(world_url + "/r/all/new.json?limit=100", headers={"X-Client-Id": "bench"}, timeout=30).json()
    return [{**c["data"], "kind": c["kind"]} for c in doc["data"]["children"]]


def post_record(samples: list[dict], i: int, tag: str) -> tuple[bytes, bytes]:
    """The ``i``-th distinct post shaped like the samples (a unique name, its author as key), stamped now."""
    p = dict(samples[i % len(samples)])
    p["name"], p["id"] = f"t3_{tag}{i}", f"{tag}{i}"
    p["fetched_at_ms"] = int(time.time() * 1000)
    return p["author"].encode(), json.dumps(p).encode()


def post_stream(samples: list[dict], n: int, tag: str):
    """``n`` distinct posts shaped like the samples."""
    for i in range(n):
        yield post_record(samples, i, tag)


def produce(bootstrap: str, topic: str, records) -> dict:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=50)
    t0, n = time.perf_counter(), 0
    for key, value in records:
        producer.send(topic, key=key, value=value)
        n += 1
    producer.flush(timeout=120)
    elapsed = time.perf_counter() - t0
    producer.close()
    return {"records": n, "seconds": round(elapsed, 2), "records_per_s": round(n / elapsed, 1)}


def consume_raw(bootstrap: str, topic: str, n: int) -> dict:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"raw-{uuid.uuid4().hex[:6]}",
                             auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=500)
    got, t0 = 0, None
    while got < n:
        for records in consumer.poll(timeout_ms=1000).values():
            t0 = t0 or time.perf_counter()
            got += len(records)
    elapsed = time.perf_counter() - t0
    consumer.close()
    return {"records": got, "seconds": round(elapsed, 2), "records_per_s": round(got / elapsed, 1)}


class Procs:
    def __init__(self, env: dict, log_dir: Path) -> None:
        self.env, self.log_dir, self.procs = env, log_dir, []

    def start(self, name: str, script: str, *args: str) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "ab")
        proc = subprocess.Popen([sys.executable, str(ROOT / "streaming" / script), *args], cwd=ROOT, env=self.env,
                                stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []


def commits(table: str) -> list[tuple[int, float, int, list[dict], dict]]:
    """(version, commit time s, records the commit moved the offsets by, its ``add`` actions, delta-rs's
    ``operationMetrics``) per commit, from the table's own log."""
    out, last = [], {}
    for f in sorted((Path(table) / "_delta_log").glob("*.json")):
        ts, moved, added, metrics = None, 0, [], {}
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                ts = action["commitInfo"]["timestamp"] / 1000
                metrics = action["commitInfo"].get("operationMetrics") or {}
            elif "txn" in action:
                app, version = action["txn"]["appId"], action["txn"]["version"]
                moved += version - last.get(app, 0)
                last[app] = version
            elif "add" in action:
                added.append(action["add"])
        out.append((int(f.stem), ts, moved, added, metrics))
    return out


def consumed(table: str) -> int:
    return sum(c[2] for c in commits(table))


def wait_consumed(table: str, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (Path(table) / "_delta_log").is_dir() and consumed(table) >= n:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{table}: {consumed(table)} of {n} records after {timeout:.0f}s")


def drain_rate(table: str) -> dict:
    cs = [c for c in commits(table) if c[2] > 0]
    first, last = cs[0], cs[-1]
    moved = sum(c[2] for c in cs[1:])
    span = last[1] - first[1]
    return {"records": sum(c[2] for c in cs), "commits": len(cs), "seconds": round(span, 2),
            "records_per_s": round(moved / span, 1) if span > 0 else None}


def pipeline(cfg, env, procs: Procs, topic: str, lake: Path, seconds: float, warmup: float) -> dict:
    table = str(lake / "reddit_posts")
    procs.start("crawler", "crawler.py", "--base-url", cfg.world_url, "--topic", topic, "--dead-letter-topic",
                topic + "-dl", "--priority-topic", topic + "-prio", "--politeness-delay", "0",
                "--interval", "0", "--status-file", str(lake.parent / "crawler.json"))
    procs.start("consumer", "consumer.py", "--topic", topic, "--table", "reddit_posts", "--group", topic,
                "--batch-size", "500", "--batch-seconds", "1.0")
    # The window opens a warm-up after the first records landed, not after a fixed sleep: on a loaded
    # machine the processes' start alone outlasted the smoke run's whole window (0 records measured).
    wait_consumed(table, 1, timeout=300)
    time.sleep(warmup)
    t0 = time.time()
    time.sleep(seconds)
    t1 = time.time()
    procs.stop()
    window = [c for c in commits(table) if t0 <= c[1] < t1]
    lags, rows = [], 0
    for _, ts, _, added, _ in window:
        for a in added:
            fetched = pq.read_table(Path(table) / a["path"], columns=["fetched_at_ms"]).column(0).to_numpy()
            lags.append(ts - fetched / 1000)
            rows += len(fetched)
    lag = np.concatenate(lags) if lags else np.array([np.nan])
    moved = sum(c[2] for c in window)
    return {"seconds": round(t1 - t0, 1), "records": moved, "records_per_s": round(moved / (t1 - t0), 1),
            "rows": rows, "rows_per_s": round(rows / (t1 - t0), 1), "commits": len(window),
            "lag_p50_s": round(float(np.percentile(lag, 50)), 3), "lag_p99_s": round(float(np.percentile(lag, 99)), 3)}


def quantiles(values) -> dict:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(float(np.percentile(v, 50)), 3), "p99": round(float(np.percentile(v, 99)), 3),
            "max": round(float(v.max()), 3)}


def paced(cfg, env, procs: Procs, samples, rate: float, seconds: float, lake: Path) -> dict:
    """Point 3 of the module docstring: ``rate`` distinct records/s for ``seconds`` through one consumer."""
    from kafka import KafkaProducer

    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    topic = f"bench-paced-{uuid.uuid4().hex[:6]}"
    ensure_topics(cfg.kafka_bootstrap, [TopicSpec(topic, "author")], cfg.kafka_partitions, cfg.kafka_replication)
    env_p = {**env, "FOCUSCRAWL_LAKE": str(lake)}
    run = Procs(env_p, procs.log_dir)
    run.start("paced-consumer", "consumer.py", "--topic", topic, "--table", "reddit_posts", "--group", topic)
    producer = KafkaProducer(bootstrap_servers=cfg.kafka_bootstrap, enable_idempotence=True, acks="all", linger_ms=50)
    n = int(rate * seconds)
    time.sleep(5.0)  # the consumer joins its group before the first record
    t0 = time.perf_counter()
    behind = 0.0
    for i in range(n):
        late = time.perf_counter() - (t0 + i / rate)
        if late < 0:
            time.sleep(-late)
        behind = max(behind, late)
        key, value = post_record(samples, i, "p")  # stamped as it is sent
        producer.send(topic, key=key, value=value)
    offered = n / (time.perf_counter() - t0)
    producer.flush(timeout=120)
    producer.close()
    table = str(lake / "reddit_posts")
    try:
        wait_consumed(table, n, timeout=max(120.0, seconds))
    finally:
        run.stop()
    lag, batch_wait, after_batch, exec_ms, files, sizes = [], [], [], [], [], []
    for _, ts, _, added, metrics in commits(table):
        if not added:
            continue
        produced = np.concatenate([pq.read_table(Path(table) / a["path"], columns=["fetched_at_ms"]).column(0)
                                   .to_numpy() / 1000 for a in added])
        lag.append(ts - produced)
        batch_wait.append(produced.max() - produced)
        after_batch.append(ts - produced.max())
        exec_ms.append(metrics.get("execution_time_ms", np.nan))
        files.append(len(added))
        sizes += [a["size"] for a in added]
    lag_all = np.concatenate(lag)
    return {"rate": rate, "seconds": seconds, "records": n, "offered_records_per_s": round(offered, 1),
            "producer_max_behind_s": round(behind, 3), "rows": int(len(lag_all)), "commits": len(files),
            "lag_s": quantiles(lag_all), "batch_wait_s": quantiles(np.concatenate(batch_wait)),
            "commit_after_batch_s": quantiles(after_batch), "write_execution_ms": quantiles(exec_ms),
            "files_per_commit": round(float(np.mean(files)), 2), "file_kb": quantiles(np.asarray(sizes) / 1024),
            "batch": "consumer defaults (streaming/consumer.py, as focuscrawl up runs it)"}


def scaling(cfg, env, procs: Procs, samples, backlog: int, lake: Path) -> dict:
    topic = f"bench-backlog-{uuid.uuid4().hex[:6]}"
    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    ensure_topics(cfg.kafka_bootstrap, [TopicSpec(topic, "author")], cfg.kafka_partitions, cfg.kafka_replication)
    produce(cfg.kafka_bootstrap, topic, post_stream(samples, backlog, "s"))
    out = {"backlog": backlog, "partitions": cfg.kafka_partitions}
    for n in (1, 2):
        env_n = {**env, "FOCUSCRAWL_LAKE": str(lake / f"consumers-{n}")}
        run = Procs(env_n, procs.log_dir)
        for i in range(n):
            run.start(f"scale-{n}-{i}", "consumer.py", "--topic", topic, "--table", "reddit_posts",
                      "--group", f"{topic}-{n}", "--batch-size", "500", "--batch-seconds", "1.0")
        table = str(lake / f"consumers-{n}" / "reddit_posts")
        wait_consumed(table, backlog, timeout=600)
        run.stop()
        out[f"consumers_{n}"] = drain_rate(table)
    r1, r2 = out["consumers_1"]["records_per_s"], out["consumers_2"]["records_per_s"]
    out["scaling_ratio_2_vs_1"] = round(r2 / r1, 2) if r1 and r2 else None
    return out


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="measured pipeline time")
    ap.add_argument("--long", action="store_true", help="measure the pipeline for 300 s")
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=1000.0, help="records/s of the paced measurement (1,000)")
    ap.add_argument("--paced-seconds", type=float, help="seconds of the paced measurement (default: --seconds)")
    ap.add_argument("--raw-records", type=int, default=20000)
    ap.add_argument("--backlog", type=int, default=10000, help="records drained by 1 and by 2 consumers")
    ap.add_argument("--out", type=Path, default=default_out("ingest"))
    args = ap.parse_args(argv)
    seconds = 300.0 if args.long else args.seconds

    from focuscrawl.services.kafka import KafkaBroker

    broker = KafkaBroker(cfg)
    started_broker = not broker.healthy()
    broker.start()
    # A busy world: new posts keep arriving, no rate limit, no faults.
    world = WorldServer(build_world(5, speedup=10.0, data_dir=None, cache_dir=cfg.var_dir, web=False, rate_limit=0,
                                    events_per_minute=600), cfg.bind_host, cfg.world_port, cfg.world_eval_port).start()
    work = Path(tempfile.mkdtemp(prefix="ingest-bench-", dir=cfg.var_dir))
    env = {**os.environ, "FOCUSCRAWL_LAKE": str(work / "lake"), "PYTHONUNBUFFERED": "1"}
    procs = Procs(env, work)
    try:
        samples = sample_posts(cfg.world_url)
        raw_topic = f"bench-raw-{uuid.uuid4().hex[:6]}"
        raw_produce = produce(cfg.kafka_bootstrap, raw_topic, post_stream(samples, args.raw_records, "r"))
        raw_consume = consume_raw(cfg.kafka_bootstrap, raw_topic, args.raw_records)
        pipe = pipeline(cfg, env, procs, f"bench-posts-{uuid.uuid4().hex[:6]}", work / "lake", seconds, args.warmup)
        steady = paced(cfg, env, procs, samples, args.rate, args.paced_seconds or seconds, work / "paced")
        scale = scaling(cfg, env, procs, samples, args.backlog, work)
    finally:
        procs.stop()
        world.stop()
        if started_broker:
            broker.stop()
    raw_rate = min(raw_produce["records_per_s"], raw_consume["records_per_s"])
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "note": "shared with other jobs"},
        "raw_kafka": {"produce": raw_produce, "consume": raw_consume, "record_bytes": len(json.dumps(samples[0]))},
        "pipeline": pipe,
        "paced": steady,
        "ratios": {
            "pipeline_vs_raw_produce": round(pipe["records_per_s"] / raw_produce["records_per_s"], 4),
            "pipeline_vs_raw_consume": round(pipe["records_per_s"] / raw_consume["records_per_s"], 4),
            "delta_sink_1_consumer_vs_raw_consume": round(scale["consumers_1"]["records_per_s"] / raw_consume["records_per_s"], 4),
            "pipeline_vs_raw_min": round(pipe["records_per_s"] / raw_rate, 4),
        },
        "scaling": scale,
        "logs": str(work),
    }
    write_result(args.out, result, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
