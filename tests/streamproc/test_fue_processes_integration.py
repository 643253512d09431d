"""The FUE explorer and extractor processes on the scaffold, against the world and the real broker:
posts keyed by author, histories for the chosen users at the paced rate, their fetches in the metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from focuscrawl.fue.pipeline import HISTORIES_TOPIC, extract_topic
from focuscrawl.topics.specs import TopicSpec, ensure_topics

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def spawn(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=os.environ.copy(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def read(bootstrap: str, topic: str, until, timeout: float = 120.0) -> list:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
                             isolation_level="read_committed")
    got, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not until(got):
            for records in consumer.poll(timeout_ms=500).values():
                got += records
    finally:
        consumer.close()
    return got


def stop(proc: subprocess.Popen, log: Path) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(40) == 0, log.read_text()[-3000:]


def test_explorer_then_extractor_at_the_paced_rate(kafka_broker, serve_world, tmp_path):
    from kafka import KafkaProducer

    world = serve_world()
    posts_topic, method = f"fp-{uuid.uuid4().hex[:8]}", f"T{uuid.uuid4().hex[:6]}"
    explorer_log = tmp_path / "explorer.log"
    explorer = spawn(["streaming/fue/explorer.py", "--base-url", world, "--topic", posts_topic, "--interval", "0.5",
                      "--status-file", str(tmp_path / "explorer.json")], explorer_log)
    try:
        posts = read(kafka_broker.url, posts_topic, lambda got: len(got) >= 20)
    finally:
        stop(explorer, explorer_log)
    assert len(posts) >= 20, explorer_log.read_text()[-3000:]
    assert all(r.key.decode() == json.loads(r.value)["author"] for r in posts)
    status = json.loads((tmp_path / "explorer.json").read_text())
    assert status["process"] == "fue-explorer" and status["communities"] > 0
    # Every listing read is a fetch: a front page, or one of a community visit's two (robots.txt besides).
    assert status["metrics"]["fetches_total"] >= status["front_page"] + 2 * status["visits"] and status["front_page"] > 0

    users = sorted({r.key.decode() for r in posts})[:3]
    producer = KafkaProducer(bootstrap_servers=kafka_broker.url, acks="all")
    for user in users:
        producer.send(extract_topic(method), key=user.encode(), value=json.dumps({"user": user}).encode())
    producer.flush(30)
    producer.close()
    extractor_log = tmp_path / "extractor.log"
    extractor = spawn(["streaming/fue/extractor.py", "--method", method, "--base-url", world,
                       "--users-per-hour", "1800", "--status-file", str(tmp_path / "extractor.json")], extractor_log)
    try:
        ours = lambda got: [r for r in got if json.loads(r.value)["method"] == method]  # noqa: E731
        histories = ours(read(kafka_broker.url, HISTORIES_TOPIC, lambda got: len(ours(got)) >= 3))
    finally:
        stop(extractor, extractor_log)
    assert sorted(r.key.decode() for r in histories) == users, extractor_log.read_text()[-3000:]
    # 1800 users an hour: one extraction starts every 2 s, so the third starts 4 s after the first. A
    # record is stamped when produced, after its own fetch, so the first fetch's time comes off that
    # (CI: 3908 ms); up to one interval is allowed for it. Unpaced, the three come milliseconds apart.
    stamps = sorted(r.timestamp for r in histories)
    assert stamps[2] - stamps[0] >= 2000
    status = json.loads((tmp_path / "extractor.json").read_text())
    assert (status["process"], status["extracted"]) == (f"fue-extractor-{method}", 3)
    assert status["metrics"]["fetches_total"] >= 3 and status["metrics"]["records_produced_total"] == 3


def test_classifier_judges_every_history_on_the_scaffold(kafka_broker, tmp_path):
    from kafka import KafkaProducer

    from focuscrawl.fue.classifier import train_reference_classifier
    from focuscrawl.fue.pipeline import STATS_TOPIC, History

    sad, glad = "sad hopeless tired alone crying", "football pizza weekend friends match"
    model = tmp_path / "reference.joblib"
    train_reference_classifier([[sad, sad]] * 12 + [[glad, glad]] * 12, [1] * 12 + [0] * 12, min_df=2).save(model)
    method, run = f"T{uuid.uuid4().hex[:6]}", f"r{uuid.uuid4().hex[:6]}"
    users = [f"{method}-u{i}" for i in range(4)]
    # A reader subscribing to a topic that does not exist yet waits for a metadata refresh (minutes).
    ensure_topics(kafka_broker.url, [TopicSpec(STATS_TOPIC, "user"), TopicSpec(HISTORIES_TOPIC, "user")])
    producer = KafkaProducer(bootstrap_servers=kafka_broker.url, acks="all")
    for i, user in enumerate(users):
        history = History(user, (sad if i % 2 else glad,) * 3, 1, 0.1, method, (), 1.7e9 + i)
        producer.send(HISTORIES_TOPIC, key=user.encode(), value=history.to_json())
    producer.flush(30)
    producer.close()
    log = tmp_path / "classifier.log"
    proc = spawn(["streaming/fue/classifier.py", "--reference", str(model), "--run-id", run,
                  "--status-file", str(tmp_path / "classifier.json")], log)
    try:
        # The histories topic is shared with other tests: the classifier judges theirs too, under our run id.
        ours = lambda got: [e for e in (json.loads(r.value) for r in got)  # noqa: E731
                            if e["run_id"] == run and e["method"] == method]
        events = ours(read(kafka_broker.url, STATS_TOPIC, lambda got: {e["user"] for e in ours(got)} >= set(users)))
    finally:
        stop(proc, log)
    assert sorted(e["user"] for e in events) == users, log.read_text()[-3000:]
    # Timed by the records (the history's site time), not by any clock of the world.
    assert sorted(e["sim_epoch"] for e in events) == [1.7e9 + i for i in range(4)]
    status = json.loads((tmp_path / "classifier.json").read_text())
    assert status["process"] == "fue-classifier" and status["judged"] >= 4
