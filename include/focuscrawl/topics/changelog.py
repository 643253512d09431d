"""Restart-safe state of a stream stage: a compacted changelog topic, written in one Kafka
transaction with the stage's outputs and its input offsets.

STYLE.md ("the offsets travel with the data", :mod:`focuscrawl.lake.delta_sink` is the model): a
stateful stream process keeps no state that lives only in memory. Its state is a set of records
keyed like its input (a user, for the FUE chooser), and the latest record per key is kept by a
compacted topic the process owns, ``focuscrawl.changelog.<group>``, partitioned like the input
(same count, same key, so the changelog partition of a key is the input partition of that key).

:class:`TransactionalStage` is the consumer-group loop of such a stage. After each poll, the
records' effects (``handle``), what the stage decides when it is idle, the changed state records
(``changes``) and the consumer's positions go out in **one** Kafka transaction
(``send_offsets_to_transaction``, KIP-98/447). A SIGKILL anywhere aborts the open transaction
(the restarted producer with the same ``transactional_id`` fences it), so the changelog, the
outputs and the committed offsets always agree: nothing is lost, nothing counted twice, and no
output whose state change is missing (a chosen user is extracted once). On every partition
assignment the stage first reads those changelog partitions to their end (read_committed) and
hands the records to ``assigned``, then consumes new input; on revocation ``revoked`` drops them.
The read happens in the loop, not in the rebalance callback: the callback only pauses the new
partitions. Inside the callback no heartbeat goes out, so a restore longer than the session timeout
(22,054 users took 15-34 s against 10 s) dropped the member from its group, its transaction's offset
commit failed, and every restart did the same again; outside it, kafka-python's heartbeat thread keeps
the member in the group (up to ``max_poll_interval_ms``, 300 s, between two polls).
Readers of the outputs use ``isolation_level="read_committed"`` so an aborted batch stays unseen.
A stage without state (``keeps_state=False``: the FUE extractor and classifier, through
:meth:`focuscrawl.stream.process.StreamProcess.run_stage`) runs the same loop without a changelog:
its outputs and input offsets still commit together, so a SIGKILL between producing and committing
leaves an aborted output and the record is handled again, once (a user is extracted once).

Any failure of a transaction ends the loop with the error: the in-memory state may be ahead of
the log then, and a restart (the supervisor's) rebuilds it from the log, which is the only truth.
Kafka is imported inside the functions (the domain package imports no engine at module level).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Protocol

from focuscrawl.topics.specs import TopicSpec, ensure_topics

log = logging.getLogger(__name__)

Output = tuple[str, str, bytes]               # (topic, key, value)
Change = tuple[str, bytes | None]             # (key, value) of a changelog record; None deletes the key


def changelog_topic(group: str) -> str:
    """The changelog topic of a consumer group's state (one per group: a twin group has its own)."""
    return f"focuscrawl.changelog.{group}"


def read_to_end(bootstrap: str, topic: str, partitions: Iterable[int],
                timeout_s: float = 300.0) -> Iterator[tuple[int, bytes, bytes | None]]:
    """``(partition, key, value)`` of every committed record of ``topic``'s ``partitions``, in offset
    order per partition, up to the end offsets (last stable offsets) taken when the read starts."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(topic, p) for p in sorted(set(partitions))]
    if not tps:
        return
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level="read_committed", auto_offset_reset="earliest")
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout_s
        todo = {tp for tp in tps if consumer.position(tp) < end[tp]}
        while todo:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to its end took over {timeout_s:.0f} s; "
                                   f"left: {sorted((tp.partition, consumer.position(tp), end[tp]) for tp in todo)}")
            for tp, records in consumer.poll(timeout_ms=500, max_records=5000).items():
                for r in records:
                    if r.offset < end[tp]:
                        yield tp.partition, r.key, r.value
            todo = {tp for tp in todo if consumer.position(tp) < end[tp]}
    finally:
        consumer.close()


def latest_per_key(records: Iterable[tuple[int, bytes, bytes | None]]) -> dict[bytes, tuple[int, bytes]]:
    """Fold a changelog read: the last value per key (what compaction keeps), deleted keys dropped."""
    out: dict[bytes, tuple[int, bytes | None]] = {}
    for partition, key, value in records:
        out.pop(key, None)  # re-insert: the order of the dict is the order of the latest records
        out[key] = (partition, value)
    return {k: v for k, v in out.items() if v[1] is not None}  # type: ignore[misc]


class StatefulHandler(Protocol):
    """What a :class:`TransactionalStage` drives (all calls from the loop's thread)."""

    def assigned(self, partitions: list[int], state: dict[bytes, tuple[int, bytes]]) -> None: ...
    def revoked(self, partitions: list[int]) -> None: ...
    def handle(self, record) -> Iterable[Output]: ...
    def idle(self, caught_up: bool) -> Iterable[Output]: ...
    def changes(self) -> Iterable[Change]: ...


class TransactionalStage:
    """Consume ``topics`` as ``group``, keep state in the group's changelog, one transaction per batch.

    ``transactional_id`` must be stable across restarts of one instance and differ between the
    instances of a group (``<group>-<instance>``): a restarted instance fences its dead self. It is the
    consumer's ``group.instance.id`` too (static membership, KIP-345), so the restarted instance gets its
    dead self's partitions without a wait. A stopped instance does not leave the group either: its
    partitions go to the others only when its session (``session_timeout_ms``) expires.
    The changelog gets the partition count of ``topics[0]``; every input topic must be keyed like
    it and have that count (co-partitioned), so one instance owns a key in every topic.
    ``keeps_state=False``: no changelog (``assigned`` gets an empty state). ``paused()``, when given, is
    asked before each poll: while it is true the stage stays in its group reading nothing
    (``focuscrawl pause LOOP``). ``consumer_options`` go to the ``KafkaConsumer``.
    """

    # A committed offset stays unknown while an open transaction holds one of the group's for that partition
    # (UnstableOffsetCommit; kafka-python asks again for ever). The broker aborts a transaction once its
    # timeout passes (the producer's transaction_timeout_ms, 60 s, plus a cleanup interval); one still open
    # after UNSTABLE_LIMIT_S is a hanging one, and the stage exits with the fix instead of idling for good.
    UNSTABLE_LIMIT_S = 300.0
    POSITION_WAIT_MS = 2000

    def __init__(self, bootstrap: str, topics: list[str], group: str, handler: StatefulHandler, *,
                 transactional_id: str | None = None, changelog: str | None = None, replication: int | None = None,
                 poll_ms: int = 500, max_records: int = 500, session_timeout_ms: int = 10000,
                 keeps_state: bool = True, paused: Callable[[], bool] | None = None, **consumer_options) -> None:
        self.bootstrap, self.topics, self.group, self.handler = bootstrap, list(topics), group, handler
        self.transactional_id = transactional_id or f"{group}-0"
        self.changelog = (changelog or changelog_topic(group)) if keeps_state else None
        self.paused, self.consumer_options = paused, consumer_options
        self.replication = replication
        self.poll_ms, self.max_records, self.session_timeout_ms = poll_ms, max_records, session_timeout_ms
        self.transactions = 0
        self.restored = 0
        self.restore_seconds = 0.0  # the last restore's duration (status and metrics)
        self.skipped = 0
        self.unknown_since: dict = {}  # assigned partition -> when its position was first found unknown

    def _partition_count(self, admin_consumer, topic: str) -> int:
        parts = admin_consumer.partitions_for_topic(topic)
        if not parts:
            raise RuntimeError(f"topic {topic} has no partitions; create it first (focuscrawl.topics.specs.ensure_topics)")
        return len(parts)

    def run(self, stopping: threading.Event, on_batch: Callable[[], None] = lambda: None,
            on_consumer: Callable[[object], None] = lambda consumer: None) -> None:
        """Loop until ``stopping``; ``on_batch()`` after each poll, ``on_consumer(consumer)`` once it exists."""
        from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer
        from kafka.structs import OffsetAndMetadata

        # A static member (group.instance.id): a restarted instance takes its dead self's place in the group at
        # once; a dynamic one waited for the dead member's session to expire (7 s of a 50,000-user chooser's 18).
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, enable_auto_commit=False,
                                 auto_offset_reset="earliest", isolation_level="read_committed",
                                 session_timeout_ms=self.session_timeout_ms, group_instance_id=self.transactional_id,
                                 **self.consumer_options)
        if self.changelog is not None:
            n = self._partition_count(consumer, self.topics[0])
            ensure_topics(self.bootstrap, [TopicSpec(self.changelog, "the input's key", compacted=True)], n,
                          self.replication)
            have = self._partition_count(consumer, self.changelog)
            if have != n:
                raise RuntimeError(f"changelog {self.changelog} has {have} partitions, input {self.topics[0]} has "
                                   f"{n}: they must match (co-partitioned); delete the changelog topic and let the "
                                   "stage rebuild it, or give the stage a new consumer group")
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=self.transactional_id,
                                 enable_idempotence=True, acks="all", linger_ms=5)
        producer.init_transactions()  # aborts what a killed predecessor with this id left open
        pending: set = set()  # assigned partitions whose state is not restored yet (paused until it is)
        stage = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                pending.difference_update(revoked)
                parts = sorted({tp.partition for tp in revoked})
                if parts:
                    stage.handler.revoked(parts)

            def on_partitions_assigned(self, assigned):
                if assigned:
                    consumer.pause(*assigned)  # no input before its state: the loop restores, then resumes
                    pending.update(assigned)

        consumer.subscribe(self.topics, listener=Listener())
        try:
            on_consumer(consumer)
            while not stopping.is_set():
                if pending:
                    self._restore(consumer, pending)
                if self.paused is not None:  # pending is empty here: every paused partition is the control's
                    if self.paused():
                        consumer.pause(*consumer.assignment())
                    elif consumer.paused():
                        consumer.resume(*consumer.paused())
                consumed = 0
                outputs: list[Output] = []
                for records in consumer.poll(timeout_ms=self.poll_ms, max_records=self.max_records).values():
                    for record in records:
                        consumed += 1
                        try:
                            outputs.extend(self.handler.handle(record))
                        except (ValueError, KeyError, TypeError, AttributeError) as exc:
                            # A malformed record is skipped for good (its offset commits with the batch);
                            # raising would replay it after every restart: a crash loop.
                            self.skipped += 1
                            log.warning("%s: record %s[%d]@%d skipped: %s", self.group, record.topic,
                                        record.partition, record.offset, exc)
                if pending and not consumed:
                    continue  # a rebalance in this poll: restore before anything is decided
                if not pending:
                    outputs.extend(self.handler.idle(self._caught_up(consumer)))
                changes = list(self.handler.changes())
                if consumed or outputs or changes:
                    producer.begin_transaction()
                    for key, value in changes:
                        producer.send(self.changelog, key=key.encode(), value=value)
                    for topic, key, value in outputs:
                        producer.send(topic, key=key.encode(), value=value)
                    positions = {tp: OffsetAndMetadata(at, "", -1) for tp, at in self._positions(consumer).items()}
                    producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                    producer.commit_transaction()
                    self.transactions += 1
                on_batch()
        finally:
            producer.close(timeout=10)
            consumer.close()

    def _restore(self, consumer, pending: set) -> None:
        """Read the changelog partitions of the ``pending`` (paused) input partitions to their end, hand
        the state to the handler, resume them."""
        tps = sorted(pending, key=lambda tp: (tp.topic, tp.partition))
        parts = sorted({tp.partition for tp in tps})
        started = time.monotonic()
        state = latest_per_key(read_to_end(self.bootstrap, self.changelog, parts)) if self.changelog else {}
        self.handler.assigned(parts, state)
        pending.difference_update(tps)
        consumer.resume(*[tp for tp in tps if tp in consumer.assignment()])
        self.restored += len(state)
        self.restore_seconds = time.monotonic() - started
        if self.changelog is None:
            log.info("%s: partitions %s assigned", self.group, parts)
        else:
            log.info("%s: partitions %s assigned; %d state records restored from %s in %.1f s", self.group, parts,
                     len(state), self.changelog, self.restore_seconds)

    def _positions(self, consumer) -> dict:
        """The known position of each assigned partition (asked at most ``POSITION_WAIT_MS`` each): one
        without (its committed offset unknown) has read nothing, so it has no offset to commit. Raises once
        one stayed unknown for ``UNSTABLE_LIMIT_S``."""
        assigned, known, now = consumer.assignment(), {}, time.monotonic()
        for tp in assigned:
            at = consumer.position(tp, timeout_ms=self.POSITION_WAIT_MS)
            if at is not None:
                known[tp] = at
        # Kept for the assigned partitions only: one revoked and assigned again starts afresh.
        self.unknown_since = {tp: self.unknown_since.get(tp, now) for tp in assigned if tp not in known}
        stuck = sorted((tp.topic, tp.partition) for tp, since in self.unknown_since.items()
                       if now - since >= self.UNSTABLE_LIMIT_S)
        if stuck:
            raise RuntimeError(
                f"{self.group}: the committed offsets of {stuck} stayed unknown for {self.UNSTABLE_LIMIT_S:.0f} s: "
                "an open transaction holds offsets of this group for them and the broker has not aborted it (a "
                "hanging transaction). Exiting, so the restart begins a new producer epoch. If it recurs, find it "
                "with Kafka's transactions tool (java -cp 'var/jars/kafka/*' org.apache.kafka.tools.TransactionsCommand "
                f"--bootstrap-server {self.bootstrap} find-hanging --broker-id 0) and end it with the tool's abort "
                "(docs/running.md, State and restarts)")
        return known

    def _caught_up(self, consumer) -> bool:
        """Every assigned partition read to its last known end (no input waiting)."""
        assignment = consumer.assignment()
        if not assignment:
            return False
        positions = self._positions(consumer)
        for tp in assignment:
            high = consumer.highwater(tp)
            if high is None or tp not in positions or positions[tp] < high:
                return False
        return True


class ChangelogProducer:
    """A producer process's transactional producer and its own changelog (no consumer group).

    For a stream process that produces but does not consume (a crawler): each unit of work runs in
    ``with log.transaction(changes):``: what it sends and the changelog records ``changes()``
    returns at its end commit together, or (SIGKILL, error) not at all. :meth:`restore` reads the
    whole changelog (every partition, read_committed), latest record per key. One writer per
    changelog: ``transactional_id`` fences a killed predecessor.
    """

    def __init__(self, bootstrap: str, changelog: str, transactional_id: str, *, partitions: int | None = None,
                 replication: int | None = None, client_id: str | None = None) -> None:
        from kafka import KafkaProducer

        self.bootstrap, self.changelog = bootstrap, changelog
        ensure_topics(bootstrap, [TopicSpec(changelog, "the state record's key", compacted=True)], partitions,
                      replication)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                                      enable_idempotence=True, acks="all", linger_ms=5,
                                      client_id=client_id or transactional_id)
        self.producer.init_transactions()
        self.transactions = 0

    def restore(self) -> list[tuple[str, bytes]]:
        """``(key, value)`` of the latest committed record per key, in the order they were last written."""
        from kafka import KafkaConsumer

        probe = KafkaConsumer(bootstrap_servers=self.bootstrap)
        try:
            parts = probe.partitions_for_topic(self.changelog) or set()
        finally:
            probe.close()
        state = latest_per_key(read_to_end(self.bootstrap, self.changelog, parts))
        return [(key.decode(), value) for key, (_, value) in state.items()]

    def send(self, topic: str, key: bytes, value: bytes | None) -> None:
        self.producer.send(topic, key=key, value=value)

    @contextmanager
    def transaction(self, changes: Callable[[], Iterable[Change]] = lambda: ()):
        self.producer.begin_transaction()
        try:
            yield self
            for key, value in changes():
                self.producer.send(self.changelog, key=key.encode(), value=value)
        except BaseException:
            self.producer.abort_transaction()
            raise
        self.producer.commit_transaction()
        self.transactions += 1

    def close(self) -> None:
        self.producer.close(timeout=10)
