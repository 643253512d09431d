"""The crawler process against the real broker: posts reach Kafka keyed by author, and its next pick
follows priorities published to the compacted topic while it runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from focuscrawl.lake import ensure_table
from focuscrawl.topics.priority import publish, publish_table
from focuscrawl.crawl.user_priority import USER_PRIORITIES_TABLE

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def wait_status(path: Path, pred, proc, log: Path, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"crawler exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        try:
            status = json.loads(path.read_text())
        except (OSError, ValueError):
            status = None
        if status is not None and pred(status):
            return status
        time.sleep(0.3)
    raise AssertionError(f"status {status} after {timeout}s:\n{log.read_text()[-3000:]}")


def read_topic(bootstrap: str, topic: str, n: int) -> list[tuple[str, dict]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", consumer_timeout_ms=15000)
    got = []
    for rec in consumer:
        got.append((rec.key.decode(), json.loads(rec.value)))
        if len(got) >= n:
            break
    consumer.close()
    return got


def test_next_pick_follows_published_priorities(kafka_broker, listing_site, topic, tmp_path):
    priority_topic = f"prio-{uuid.uuid4().hex[:8]}"
    status_file = tmp_path / "status.json"
    log = tmp_path / "crawler.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "streaming" / "crawler.py"), "--base-url", listing_site.url,
             "--topic", topic, "--priority-topic", priority_topic, "--interval", "0.2", "--max-pages", "2",
             "--status-file", str(status_file)],
            # The fetch layer refuses loopback addresses unless allow-listed, as for the world.
            cwd=ROOT, env={**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": listing_site.url.split("//", 1)[1]},
            stdout=out, stderr=subprocess.STDOUT)
    try:
        status = wait_status(status_file, lambda s: s["pages"] == 2, proc, log)
        assert (status["candidates"], status["posts"], status["next_pick"]) == (4, 5, "alice")

        # What the DAG's publish task does: every row of the priority table to the compacted topic.
        table = str(tmp_path / "user_priorities")
        ensure_table(table, USER_PRIORITIES_TABLE)
        write_deltalake(table, pa.Table.from_pylist([
            {"author": a, "posts": 1, "avg_score": 1.0, "avg_comments": 0.0, "last_post_utc": 1.0,
             "priority": p, "method": "HAS", "computed_at": datetime.now(timezone.utc)}
            for a, p in (("dave", 0.9), ("bob", 0.5))], schema=USER_PRIORITIES_TABLE.arrow_schema()), mode="append")
        assert publish_table(table, kafka_broker.url, priority_topic) == 2
        status = wait_status(status_file, lambda s: s["next_pick"] != "alice", proc, log)
        assert (status["next_pick"], status["next_pick_score"]) == ("dave", 0.9)

        publish(kafka_broker.url, priority_topic, [("dave", None, {})])  # deleted: bob leads
        status = wait_status(status_file, lambda s: s["next_pick"] != "dave", proc, log)
        assert (status["next_pick"], status["candidates"]) == ("bob", 3)

        posts = read_topic(kafka_broker.url, topic, 5)
        assert sorted(k for k, _ in posts) == ["alice", "bob", "bob", "carol", "dave"]
        assert all(k == v["author"] for k, v in posts)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
