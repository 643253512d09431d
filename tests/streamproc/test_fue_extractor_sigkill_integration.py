"""The FUE extractor SIGKILLed right after it produced a history, before its request's offset committed,
again and again on the real broker: every (method, user) is among the committed histories exactly once."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests

from focuscrawl.fue.pipeline import HISTORIES_TOPIC, extract_topic
from focuscrawl.topics.specs import TopicSpec, ensure_topics

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
USERS, KILLS = 10, 6


def spawn(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=os.environ.copy(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def histories(bootstrap: str, start: dict, method: str, isolation: str, consumer=None):
    """A reader of ``method``'s histories from the ``start`` offsets (the topic is shared with other tests)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=isolation)
    consumer.assign(list(start))
    for tp, offset in start.items():
        consumer.seek(tp, offset)
    return consumer


def ours(batch: dict, method: str) -> list[str]:
    return [r.key.decode() for records in batch.values() for r in records if json.loads(r.value)["method"] == method]


def test_a_sigkill_between_produce_and_commit_extracts_no_user_twice(kafka_broker, serve_world, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    world = serve_world()
    front = requests.get(f"{world}/r/all/new.json", params={"limit": 100}, timeout=30).json()
    users = sorted({c["data"]["author"] for c in front["data"]["children"]} - {"[deleted]", "AutoModerator"})[:USERS]
    assert len(users) == USERS
    method = f"K{uuid.uuid4().hex[:6]}"
    ensure_topics(kafka_broker.url, [TopicSpec(HISTORIES_TOPIC, "user"), TopicSpec(extract_topic(method), "user")])
    probe = KafkaConsumer(bootstrap_servers=kafka_broker.url)
    parts = [TopicPartition(HISTORIES_TOPIC, p) for p in sorted(probe.partitions_for_topic(HISTORIES_TOPIC))]
    start = probe.end_offsets(parts)
    probe.close()
    producer = KafkaProducer(bootstrap_servers=kafka_broker.url, acks="all")
    for user in users:
        producer.send(extract_topic(method), key=user.encode(), value=json.dumps({"user": user}).encode())
    producer.flush(30)
    producer.close()

    log = tmp_path / "extractor.log"
    args = ["streaming/fue/extractor.py", "--method", method, "--base-url", world, "--cap", "20",
            "--users-per-hour", "36000", "--status-file", str(tmp_path / "extractor.json")]
    # Uncommitted records too: a history shows here the moment it is produced, before its transaction
    # (and the request's offset) commits; that is when the extractor is killed. About a third of the
    # kills land before the commit (2 of 6 in each of two runs); before the transactional stage, such a
    # kill left the history committed and its request not, and the user was extracted twice (same count).
    watcher = histories(kafka_broker.url, start, method, "read_uncommitted")
    killed: list[str] = []
    seen: collections.Counter = collections.Counter()
    proc = spawn(args, log)
    deadline = time.monotonic() + 60
    try:
        while len(killed) < KILLS and time.monotonic() < deadline:
            for user in ours(watcher.poll(timeout_ms=200), method):
                seen[user] += 1
                if user not in killed and len(killed) < KILLS:  # each user's first history only: then it commits
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
                    killed.append(user)
                    proc = spawn(args, log)
                    break  # records after the kill in this batch were the dead process's too
        # The rest runs undisturbed until every user has a committed history.
        reader = histories(kafka_broker.url, start, method, "read_committed")
        committed: collections.Counter = collections.Counter()
        while set(committed) < set(users) and time.monotonic() < deadline:
            committed.update(ours(reader.poll(timeout_ms=500), method))
        for user in ours(reader.poll(timeout_ms=2000), method):  # nothing more may come
            committed[user] += 1
        reader.close()
    finally:
        watcher.close()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(40)
    assert len(killed) == KILLS, log.read_text()[-3000:]
    assert committed == collections.Counter(users), (committed, killed, log.read_text()[-3000:])
