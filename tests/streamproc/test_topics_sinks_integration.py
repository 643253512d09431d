"""The topic factory, the compacted-topic followers and the one consumer entry point, on the real broker."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from deltalake import DeltaTable

from focuscrawl.fue.pipeline import StatsEvent
from focuscrawl.stream.metrics import scrape
from focuscrawl.topics.specs import TopicSpec, ensure_topics
from helpers import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def describe(bootstrap: str, topics: list[str]) -> dict[str, tuple[int, str]]:
    """topic -> (partitions, cleanup.policy) as the broker reports them."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        parts = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(topics)}
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in topics])["topic"]
        # The broker lists only the configs set on the topic; "delete" is Kafka's default policy.
        return {t: (parts[t], configs.get(t, {}).get("cleanup.policy", {}).get("value", "delete")) for t in topics}
    finally:
        admin.close()


def test_every_topic_gets_the_configured_partitions_compacted_included(kafka_broker, cfg):
    names = [f"tf-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    three = dataclasses.replace(cfg, kafka_partitions=3)
    created = ensure_topics(kafka_broker.url, [TopicSpec(names[0], "k"), TopicSpec(names[1], "k", compacted=True)],
                            cfg=three)
    assert created == names[:2]
    # What a feedback topic's publisher calls: no counts given, so the settings' (4 by default).
    from focuscrawl.topics.priority import ensure_compacted_topic

    ensure_compacted_topic(kafka_broker.url, names[2])
    assert describe(kafka_broker.url, names) == {
        names[0]: (3, "delete"), names[1]: (3, "compact"), names[2]: (cfg.kafka_partitions, "compact")}
    # An existing topic keeps its counts.
    assert ensure_topics(kafka_broker.url, [TopicSpec(names[0], "k")], cfg=cfg) == []


def test_a_compacted_topic_rolls_segments_so_the_cleaner_compacts_it_during_a_run(kafka_broker, cfg):
    """Kafka never cleans the active segment; the defaults roll one after 7 days or 1 GiB."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    name = f"tc-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_broker.url, [TopicSpec(name, "k", compacted=True)], cfg=cfg)
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.url)
    try:
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
    finally:
        admin.close()
    assert {k: configs[k]["value"] for k in ("cleanup.policy", "segment.ms", "segment.bytes", "min.cleanable.dirty.ratio")} \
        == {"cleanup.policy": "compact", "segment.ms": "600000", "segment.bytes": "16777216", "min.cleanable.dirty.ratio": "0.1"}


def test_bad_counts_name_the_setting(cfg):
    with pytest.raises(ValueError, match="FOCUSCRAWL_KAFKA_PARTITIONS"):
        ensure_topics("127.0.0.1:1", [TopicSpec("x", "k")], cfg=dataclasses.replace(cfg, kafka_partitions=0))


def test_followers_read_every_partition_of_a_feedback_topic(kafka_broker, cfg):
    from focuscrawl.ephemeral.schedule_topic import ScheduleFollower
    from focuscrawl.topics.priority import PriorityFollower, publish

    assert cfg.kafka_partitions == 4
    topic = f"fb-{uuid.uuid4().hex[:8]}"
    keys = [f"user{i}" for i in range(60)]
    publish(kafka_broker.url, topic, [(k, i / 100, {}) for i, k in enumerate(keys)])
    assert describe(kafka_broker.url, [topic])[topic] == (4, "compact")

    for cls in (PriorityFollower, ScheduleFollower):
        got: dict = {}
        lock = threading.Lock()

        def apply(key, value, got=got):
            with lock:
                got[key] = value

        stamps: list[int] = []
        follower = cls(kafka_broker.url, topic, apply, on_applied=lambda rec: stamps.append(rec.timestamp))
        follower.start()
        try:
            assert follower.caught_up.wait(60), cls.__name__
        finally:
            follower.stop()
            follower.join(10)
        assert sorted(got) == sorted(keys), cls.__name__
        # each record applied is handed over with its Kafka timestamp (when it was pushed: bench/freshness)
        assert len(stamps) == len(keys) and abs(min(stamps) / 1000 - time.time()) < 120, cls.__name__
        score = got["user7"] if cls is PriorityFollower else got["user7"]["score"]
        assert score == 0.07


def verdict(i: int) -> StatsEvent:
    return StatsEvent(run_id="t", method="HCP" if i % 2 else "RND", user=f"u{i}", sim_time=float(i), sim_epoch=1.7e9 + i,
                      extraction_seconds=0.1, items=3, pages=1, probability=0.5, relevant=i % 4 == 1, history_text="x")


def test_consumer_entry_point_lands_a_registered_sink_with_its_metrics(kafka_broker, tmp_path):
    """``consumer.py --sink fue_extractions`` (what streaming/fue/stats_sink.py was) on a fresh topic:
    rows, harvest by method and the lag back to 0 on the endpoint."""
    from kafka import KafkaProducer


    topic, n = f"st-{uuid.uuid4().hex[:8]}", 40
    producer = KafkaProducer(bootstrap_servers=kafka_broker.url, acks="all")
    for i in range(n):
        producer.send(topic, key=f"u{i}".encode(), value=verdict(i).to_json())
    producer.send(topic, key=b"bad", value=b"not json")
    producer.flush(30)
    producer.close()

    port = free_port()
    lake = tmp_path / "lake"
    log = tmp_path / "consumer.log"
    status = tmp_path / "consumer.json"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "streaming/consumer.py", "--sink", "fue_extractions", "--topic", topic,
             "--metrics-port", str(port), "--status-file", str(status), "--batch-seconds", "0.3"],
            cwd=ROOT, env={**os.environ, "FOCUSCRAWL_LAKE": str(lake)}, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        got: dict = {}
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                got = scrape(f"http://127.0.0.1:{port}/metrics")
            except OSError:
                got = {}
            if got.get("rows_written_total") == n and got.get("consumer_lag") == 0:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"{got}\n{log.read_text()[-3000:]}")
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
    assert rc == 0, log.read_text()[-3000:]
    relevant = {m: sum(verdict(i).relevant for i in range(n) if verdict(i).method == m) for m in ("HCP", "RND")}
    assert (got["extracted_users_total"], got["relevant_users_total"], got["dead_letters_total"]) == (n, 10, 1)
    assert (got["harvest_ratio[HCP]"], got["harvest_ratio[RND]"]) == (relevant["HCP"] / (n / 2), 0.0)
    # Every record read at least once: a group that rebalances at once (the fresh topic's metadata arriving, seen in
    # the CI of 2026-12-05) drops the batch it had polled and reads it again from the table's offsets; the rows and
    # the dead letter above are each landed once.
    assert got["records_consumed_total"] >= n + 1
    assert DeltaTable(str(lake / "fue_extractions")).to_pyarrow_table().num_rows == n
    final = json.loads(status.read_text())
    assert (final["group"], final["table"], final["written"]) == ("fue_extractions-to-delta", "fue_extractions", n)
