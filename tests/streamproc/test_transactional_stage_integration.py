"""A stateful stage's restore cannot starve its consumer group (focuscrawl.topics.changelog.TransactionalStage).

The chooser of a fault campaign restored 22,054 users in 15-34 s inside the rebalance callback, where no
heartbeat goes out; with a 10 s session the group dropped it, the transaction's offset commit failed and
every restart failed the same way. Here a toy stage's restore takes three session timeouts on the real
broker: the stage must keep its membership, restore the state its changelog holds, and go on counting
from it in committed transactions.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import threading
import time

import pytest

from focuscrawl.services.process import wait_until
from focuscrawl.topics.changelog import TransactionalStage, read_to_end
from focuscrawl.topics.specs import TopicSpec, ensure_topics

pytestmark = pytest.mark.integration

SESSION_MS = 6000


class SlowCounter:
    """Counts records per key; its outputs say the count after each record; restoring takes ``slow`` s."""

    def __init__(self, output: str, slow: float) -> None:
        self.output, self.slow = output, slow
        self.counts: dict[str, int] = {}
        self.changed: set[str] = set()
        self.restores: list[int] = []

    def assigned(self, partitions, state):
        time.sleep(self.slow)  # a restore as long as a large changelog's
        self.counts.update({k.decode(): json.loads(v) for k, (_, v) in state.items()})
        self.restores.append(len(state))

    def revoked(self, partitions):
        self.counts.clear()

    def handle(self, record):
        key = record.key.decode()
        self.counts[key] = self.counts.get(key, 0) + 1
        self.changed.add(key)
        return [(self.output, key, json.dumps(self.counts[key]).encode())]

    def idle(self, caught_up):
        return []

    def changes(self):
        out = [(k, json.dumps(self.counts[k]).encode()) for k in sorted(self.changed)]
        self.changed.clear()
        return out


def produce(bootstrap: str, topic: str, keys: list[str]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for k in keys:
        producer.send(topic, key=k.encode(), value=b"x")
    producer.flush(timeout=60)
    producer.close()


def outputs(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    from kafka import KafkaConsumer

    probe = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        parts = probe.partitions_for_topic(topic) or set()
    finally:
        probe.close()
    return [(k.decode(), json.loads(v)) for _, k, v in read_to_end(bootstrap, topic, parts, timeout_s=60)]


def run_stage(bootstrap, topic, group, handler, session_ms: int = SESSION_MS,
              ) -> tuple[TransactionalStage, threading.Event, threading.Thread, list]:
    stage = TransactionalStage(bootstrap, [topic], group, handler, session_timeout_ms=session_ms)
    stop, errors = threading.Event(), []

    def target():
        try:
            stage.run(stop)
        except Exception as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return stage, stop, thread, errors


def test_a_restore_three_sessions_long_keeps_the_member_and_its_state(kafka_broker, topic):
    bootstrap, out, group = kafka_broker.url, f"{topic}-out", f"g-{topic}"
    ensure_topics(bootstrap, [TopicSpec(topic, "key"), TopicSpec(out, "key")], 2)
    keys = [f"u{i % 7}" for i in range(70)]
    produce(bootstrap, topic, keys)

    first = SlowCounter(out, slow=0.0)
    stage, stop, thread, errors = run_stage(bootstrap, topic, group, first)
    wait_until(lambda: errors or len(outputs(bootstrap, out)) >= 70, 120, "the first run's 70 outputs", interval=1.0)
    stop.set()
    thread.join(30)
    assert not errors and dict(outputs(bootstrap, out)) == {f"u{i}": 10 for i in range(7)}

    # The second run's restore takes 3 session timeouts; before the fix the group dropped the member
    # and the first transaction failed (kafka.errors.CommitFailedError / UnknownMemberIdError).
    second = SlowCounter(out, slow=3 * SESSION_MS / 1000)
    stage, stop, thread, errors = run_stage(bootstrap, topic, group, second)
    produce(bootstrap, topic, keys[:14])
    wait_until(lambda: errors or len(outputs(bootstrap, out)) >= 84, 180, "the second run's 14 outputs", interval=1.0)
    stop.set()
    thread.join(30)
    assert not errors, errors
    assert sum(second.restores) == 7 and stage.restore_seconds >= 3 * SESSION_MS / 1000
    latest = dict(outputs(bootstrap, out))
    assert latest == {f"u{i}": 12 for i in range(7)}  # counted on from the restored state, once each
    assert stage.transactions >= 1


LONG_SESSION_MS = 45000


def count_until_killed(bootstrap: str, topic: str, group: str, out: str) -> None:
    """A stage in a process of its own, for the test to SIGKILL (module level: the spawned child imports it)."""
    TransactionalStage(bootstrap, [topic], group, SlowCounter(out, slow=0.0),
                       session_timeout_ms=LONG_SESSION_MS).run(threading.Event())


def test_a_sigkilled_stage_restarted_takes_its_place_in_the_group_at_once(kafka_broker, topic):
    # A dynamic member killed stays in its group until its session expires, and the group's next
    # rebalance waits for it: the restarted chooser of the 50,000-user test joined 7 s after it asked.
    # A static member (group.instance.id, the stage's transactional id) takes its dead self's place.
    bootstrap, out, group = kafka_broker.url, f"{topic}-out", f"g-{topic}"
    ensure_topics(bootstrap, [TopicSpec(topic, "key"), TopicSpec(out, "key")], 2)
    keys = [f"u{i % 7}" for i in range(70)]
    produce(bootstrap, topic, keys)
    child = multiprocessing.get_context("spawn").Process(target=count_until_killed, args=(bootstrap, topic, group, out),
                                                         daemon=True)
    child.start()
    try:
        wait_until(lambda: len(outputs(bootstrap, out)) >= 70, 180, "the first run's 70 outputs", interval=1.0)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)

    started = time.monotonic()
    second = SlowCounter(out, slow=0.0)
    stage, stop, thread, errors = run_stage(bootstrap, topic, group, second, session_ms=LONG_SESSION_MS)
    try:
        wait_until(lambda: errors or second.restores, 120, "the restarted stage's restore", interval=0.2)
        restored_after = time.monotonic() - started
        produce(bootstrap, topic, keys[:14])
        wait_until(lambda: errors or len(outputs(bootstrap, out)) >= 84, 120, "the second run's 14 outputs",
                   interval=1.0)
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    assert restored_after < LONG_SESSION_MS / 1000 / 3, (
        f"the restarted stage restored {restored_after:.0f} s after it started: it waited for its dead self's "
        f"session ({LONG_SESSION_MS / 1000:.0f} s) to expire")
    assert sum(second.restores) == 7 and dict(outputs(bootstrap, out)) == {f"u{i}": 12 for i in range(7)}
