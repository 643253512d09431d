"""The real consumer process against the real broker: SIGKILLs and a broker restart lose and duplicate nothing.

Rows are read back with delta-spark (the ``spark`` fixture), not with the library that wrote them,
once the table's own Delta positions reached the topic's end offsets (``tests/stream_positions.py``): from then
on nothing more can land, so the counts are final without a fixed sleep. The restart test restarts
a broker of its own (``own_kafka_broker``), not the session's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from focuscrawl.services.process import wait_until
from stream_positions import delta_lag

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def post(i: int) -> dict:
    return {"name": f"t3_{i:06d}", "id": f"{i:06d}", "kind": "t3", "author": f"user{i % 37}",
            "subreddit": "all", "title": f"post {i}", "score": i % 11, "num_comments": i % 5,
            "created_utc": 1.7e9 + i}


def produce(bootstrap: str, topic: str, ids, rate: float | None = None, extra: list[bytes] = ()) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
    for i in ids:
        p = post(i)
        producer.send(topic, key=p["author"].encode(), value=json.dumps(p).encode())
        if rate:
            time.sleep(1.0 / rate)
    for raw in extra:
        producer.send(topic, key=b"bad", value=raw)
    producer.flush(timeout=60)
    producer.close()


class ConsumerProcess:
    def __init__(self, cfg, tmp_path: Path, topic: str, group: str, bootstrap: str) -> None:
        self.cfg, self.topic, self.group, self.bootstrap = cfg, topic, group, bootstrap
        self.lake = str(tmp_path / "lake")
        self.env = {**os.environ, "FOCUSCRAWL_LAKE": self.lake}
        self.log = tmp_path / "consumer.log"
        self.args = [sys.executable, str(ROOT / "streaming" / "consumer.py"), "--topic", topic,
                     "--table", "reddit_posts", "--group", group, "--batch-size", "40",
                     "--batch-seconds", "0.3", "--session-timeout-ms", "6000", "--bootstrap", bootstrap]
        self.proc: subprocess.Popen | None = None
        self.table = str(tmp_path / "lake" / "reddit_posts")
        self.dead = str(tmp_path / "lake" / "dead_letter")

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def rows(self) -> int:
        try:
            return DeltaTable(self.table).to_pyarrow_table(columns=["kafka_offset"]).num_rows
        except Exception:  # noqa: BLE001 - not created yet
            return 0

    def _alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"consumer exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")

    def _wait(self, check, timeout: float, what: str) -> None:
        try:
            wait_until(lambda: self._alive() or check(), timeout, what, interval=0.3)
        except TimeoutError as exc:
            raise AssertionError(f"{exc} ({self.rows()} rows):\n{self.log.read_text()[-3000:]}") from None

    def wait_rows(self, n: int, timeout: float) -> None:
        self._wait(lambda: self.rows() >= n, timeout, f"{n} rows")

    def wait_landed(self, timeout: float) -> None:
        """Until the table's positions are at the topic's end offsets: every record landed or dead-lettered."""
        self._wait(lambda: delta_lag(self.cfg, self.lake, "reddit_posts", self.group, self.topic, self.bootstrap) == 0,
                   timeout, f"the table's positions at the end offsets of {self.topic}")


def assert_exactly_once(spark, path: str, n: int) -> None:
    from pyspark.sql import functions as F

    # One Spark job for all counts: the machine is small and shared.
    got = spark.read.format("delta").load(path).agg(
        F.count("*").alias("rows"),
        F.countDistinct("kafka_topic", "kafka_partition", "kafka_offset").alias("offsets"),
        F.countDistinct("name").alias("posts"),
        F.countDistinct("kafka_partition").alias("partitions"),
    ).first()
    assert (got.rows, got.offsets, got.posts) == (n, n, n)
    assert got.partitions > 1  # the keys spread over partitions


def test_sigkill_while_consuming_neither_loses_nor_duplicates(kafka_broker, topic, tmp_path, spark, cfg):
    total = 1500
    bad = [b"not json", json.dumps({"author": "x"}).encode()]
    consumer = ConsumerProcess(cfg, tmp_path, topic, "g-kill", kafka_broker.url)
    producer = threading.Thread(target=produce, args=(kafka_broker.url, topic, range(total), 150.0, bad))
    producer.start()
    consumer.start()
    kills = 0
    for threshold in (100, 400, 800):
        consumer.wait_rows(threshold, timeout=90)
        consumer.kill()  # mid-stream: records keep arriving
        kills += 1
        consumer.start()
    producer.join()
    consumer.wait_landed(timeout=120)  # anything extra would be there now
    assert consumer.terminate() == 0
    assert kills == 3
    assert_exactly_once(spark, consumer.table, total)
    dead = spark.read.format("delta").load(consumer.dead)
    assert sorted(r.payload for r in dead.collect()) == sorted(bad)


def test_broker_restart_during_consumption_loses_nothing(own_kafka_broker, topic, tmp_path, spark, cfg):
    broker = own_kafka_broker  # the test's own: stopping it disturbs no other test
    consumer = ConsumerProcess(cfg, tmp_path, topic, "g-restart", broker.url)
    produce(broker.url, topic, range(0, 600))
    consumer.start()
    consumer.wait_rows(40, timeout=90)
    broker.stop()  # returns once the broker's process is gone; it stays down for a JVM boot
    broker.start(timeout=180)
    produce(broker.url, topic, range(600, 1000))
    consumer.wait_landed(timeout=150)
    assert consumer.proc.poll() is None  # survived the outage
    assert consumer.terminate() == 0
    assert_exactly_once(spark, consumer.table, 1000)


def test_sigterm_lands_everything_that_reached_the_topic_before_it(kafka_broker, topic, tmp_path, cfg):
    """A clean stop drains: the records produced just before the SIGTERM are in Delta when the process
    has exited, without another start (what ``focuscrawl down`` relies on, the fetchers stopped first)."""
    consumer = ConsumerProcess(cfg, tmp_path, topic, "g-drain", kafka_broker.url)
    produce(kafka_broker.url, topic, range(0, 40))
    consumer.start()
    consumer.wait_rows(40, timeout=90)  # assigned and landing
    produce(kafka_broker.url, topic, range(40, 2040))  # 50 batches of 40: more than one poll can hold
    landed_at_stop = consumer.rows()
    assert consumer.terminate() == 0
    assert landed_at_stop < 2040  # the stop came while most of them were still in the topic
    assert delta_lag(cfg, consumer.lake, "reddit_posts", "g-drain", topic, kafka_broker.url) == 0
    assert consumer.rows() == 2040
    assert "stopping: drained" in consumer.log.read_text()
