"""A sink's consumer with no settled assignment (no partition, or a join begun and never finished) leaves
its group and joins again, waiting longer each time (focuscrawl.stream.sinks.StreamConsumer._watch_assignment);
one that holds partitions in a stable group never does. On a stop it drains its partitions to their end
offsets (``_drain``), outside the group, through slow fetches."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from unittest.mock import MagicMock

import pytest
from kafka.structs import ConsumerGroupMetadata, MemberState, TopicPartition

from focuscrawl.stream import sinks
from focuscrawl.stream.sinks import StreamConsumer


class Member:
    """A kafka-python consumer as the watchdog sees it: its assignment, its group state and empty polls."""

    def __init__(self, assigned=(), state=MemberState.STABLE):
        self.assigned, self.state, self.closed = set(assigned), state, False

    def group_metadata(self):
        return ConsumerGroupMetadata(group_id="g", state=self.state)

    def poll(self, timeout_ms, max_records):
        return {}

    def assignment(self):
        return self.assigned

    def close(self, autocommit):
        self.closed = True


def consumer(monkeypatch, member, clock):
    proc = SimpleNamespace(stopping=threading.Event(), unwatch_lag=lambda c: None)
    monkeypatch.setattr(sinks.time, "monotonic", lambda: clock[0])
    c = StreamConsumer(proc, "t", "g", sink=None, session_timeout_ms=10000)
    c.consumer = member
    return c


def test_an_unassigned_member_rejoins_after_three_sessions_then_waits_twice_as_long(monkeypatch):
    clock, member = [0.0], Member()
    c = consumer(monkeypatch, member, clock)
    c._poll_once()                      # first empty poll: the wait starts
    clock[0] = 29.0
    c._poll_once()
    assert c.consumer is member and c.counts["rejoins"] == 0
    clock[0] = 30.5
    c._poll_once()
    assert member.closed and c.consumer is None and c.counts["rejoins"] == 1
    again = c.consumer = Member()
    c._poll_once()
    clock[0] = 30.5 + 59.0
    c._poll_once()
    assert c.consumer is again          # the second wait is 60 s
    clock[0] = 30.5 + 61.0
    c._poll_once()
    assert again.closed and c.counts["rejoins"] == 2 and c.unassigned_for == 120.0


def test_a_member_holding_partitions_resets_the_wait(monkeypatch):
    clock, member = [0.0], Member()
    c = consumer(monkeypatch, member, clock)
    c.unassigned_for = 240.0
    c._poll_once()
    member.assigned = {("t", 0)}
    clock[0] = 1000.0
    c._poll_once()
    assert c.consumer is member and c.unassigned_since is None and c.unassigned_for == 30.0


def test_a_member_stuck_in_a_rejoin_with_its_old_partitions_rejoins(monkeypatch):
    """The CI run of 2026-12-03: graph_sample's member began its second join and never finished it; it
    kept the partitions of the first, so an assignment check alone never fired."""
    clock, member = [0.0], Member(assigned={("t", 0)}, state=MemberState.REBALANCING)
    c = consumer(monkeypatch, member, clock)
    c._poll_once()
    clock[0] = 31.0
    c._poll_once()
    assert member.closed and c.consumer is None and c.counts["rejoins"] == 1



class Reader:
    """The drain's group-less consumer of partition 0 holding records 0..9 from ``table_at``, whose fetch
    answers only after ``late`` empty polls (each poll's timeout passes on the clock), as a busy broker or
    machine does."""

    config = {"group_id": None}

    def __init__(self, clock, late, records=10):
        self.clock, self.late, self.records, self.at, self.assigned = clock, late, records, None, []

    def partitions_for_topic(self, topic):
        return {0}

    def assign(self, tps):
        self.assigned = list(tps)

    def seek(self, tp, offset):
        self.at = offset

    def seek_to_beginning(self, tp):
        self.at = 0

    def end_offsets(self, tps):
        return {tp: self.records for tp in tps}

    def position(self, tp):
        return self.at

    def assignment(self):
        return set(self.assigned)

    def poll(self, timeout_ms, max_records):
        self.clock[0] += timeout_ms / 1000
        if self.late > 0:
            self.late -= 1
            return {}
        tp, batch = TopicPartition("t", 0), [
            SimpleNamespace(topic="t", partition=0, offset=o, value=b"{}", key=None, timestamp=0)
            for o in range(self.at, self.records)]
        self.at = self.records
        return {tp: batch} if batch else {}


def draining(monkeypatch, member, reader, clock, table_at=3):
    c = consumer(monkeypatch, member, clock)
    c.proc.metrics, c.proc.consumer = MagicMock(), lambda topics, group, **kw: reader
    c.sink = SimpleNamespace(positions=lambda topic, partitions: {p: table_at for p in partitions})
    c.drain_seconds = 45.0
    return c


def test_a_drain_reads_outside_a_stuck_group_through_slow_fetches_from_the_tables_offsets(monkeypatch):
    """The CI run of 2026-12-05: after the e2e's SIGKILL round the posts' member began a join that had not
    finished when ``down`` came; polling as a member it fetched nothing and left 1,080 posts in the topic."""
    clock = [0.0]
    member = Member(assigned={TopicPartition("t", 0)}, state=MemberState.REBALANCING)
    reader = Reader(clock, late=4)
    c = draining(monkeypatch, member, reader, clock)
    c._drain()
    assert member.closed and c.consumer is reader and reader.assigned == [TopicPartition("t", 0)]
    assert [r.offset for r in c.batch] == list(range(3, 10))  # from the table's offset, to the end


def test_a_member_mid_rebalance_holding_nothing_drains_every_partition(monkeypatch):
    clock = [0.0]
    member, reader = Member(state=MemberState.REBALANCING), Reader(clock, late=0)
    c = draining(monkeypatch, member, reader, clock, table_at=0)
    c._drain()
    assert reader.assigned == [TopicPartition("t", 0)] and len(c.batch) == 10


def test_a_settled_member_without_partitions_has_nothing_to_drain(monkeypatch):
    clock = [0.0]
    member = Member()
    c = draining(monkeypatch, member, Reader(clock, late=0), clock)
    c._drain()
    assert c.consumer is member and not member.closed and c.batch == []


def test_a_drain_with_nothing_more_to_read_ends_after_a_quiet_spell_not_at_its_deadline(monkeypatch):
    """Below the end offsets may be only what no poll returns (an aborted transaction's records held back)."""
    clock = [0.0]
    c = draining(monkeypatch, Member(assigned={TopicPartition("t", 0)}), Reader(clock, late=10 ** 6), clock)
    c._drain()
    assert c.batch == [] and StreamConsumer.DRAIN_QUIET_SECONDS <= clock[0] < StreamConsumer.DRAIN_QUIET_SECONDS + 1


def test_a_revocation_drops_the_open_batchs_records_of_the_revoked_partitions_without_a_commit(monkeypatch):
    """No Delta commit inside the rebalance callback (it stalls the member's heartbeats); the records of a
    revoked partition are read again by its next owner, from the table's offsets."""
    from focuscrawl.lake.delta_sink import StreamRecord

    c = consumer(monkeypatch, Member(), [0.0])
    c.sink = SimpleNamespace(write=lambda batch: pytest.fail("a revocation wrote to the table"))
    c.batch = [StreamRecord("t", p, o, b"{}") for p in (0, 1) for o in range(3)]
    c._drop({TopicPartition("t", 0)})
    assert [(r.partition, r.offset) for r in c.batch] == [(1, 0), (1, 1), (1, 2)]


def test_a_member_whose_joins_keep_sticking_rejoins_every_three_sessions_without_backing_off(monkeypatch):
    """Only a settled member without partitions backs off; an unfinished join is retried at the same pace."""
    clock = [0.0]
    c = consumer(monkeypatch, Member(state=MemberState.REBALANCING), clock)
    for rejoins in (1, 2, 3):
        c.consumer = Member(state=MemberState.REBALANCING)
        c._poll_once()
        clock[0] += 31.0
        c._poll_once()
        assert c.consumer is None and c.counts["rejoins"] == rejoins and c.unassigned_for == 30.0


class Assignee(Member):
    """A member the group assigns partitions within a poll, calling the listener as kafka-python does."""

    def __init__(self, listener_of):
        super().__init__()
        self.listener_of, self.paused_, self.seeks, self.to_assign = listener_of, set(), {}, None
        self.on_assigned, self.checked = (lambda: True), False

    def pause(self, *tps):
        self.paused_.update(tps)

    def resume(self, *tps):
        self.paused_.difference_update(tps)

    def seek(self, tp, offset):
        assert tp in self.paused_, "seeked while fetchable"
        self.seeks[tp] = offset

    def poll(self, timeout_ms, max_records):
        if self.to_assign:
            self.assigned, added, self.to_assign = set(self.to_assign), self.to_assign, None
            self.listener_of().on_partitions_assigned(added)
            self.checked = self.on_assigned()
        return {}


def test_an_assignment_is_paused_in_the_callback_and_seeked_to_the_tables_offsets_by_the_loop(monkeypatch):
    """kafka-python runs a rebalance listener on the consumer's event loop, heartbeats included: the table's
    offsets (a fresh process loads the whole Delta log) are read after the poll, not inside the callback."""
    listener = []
    member = Assignee(lambda: listener[0])
    c = consumer(monkeypatch, member, [0.0])
    reads = []

    def positions(topic, partitions):
        reads.append(sorted(partitions))
        return {p: 7 * p for p in partitions}

    c.sink = SimpleNamespace(positions=positions)
    listener.append(c._listener())
    member.to_assign = {TopicPartition("t", 0), TopicPartition("t", 1)}
    member.on_assigned = lambda: reads == [] or pytest.fail("the table was read inside the callback")
    c._poll_once()
    assert member.checked and reads == [[0, 1]]
    assert member.seeks == {TopicPartition("t", 0): 0, TopicPartition("t", 1): 7}
    assert member.paused_ == set() and c.unseeked == set()


def test_an_assignment_whose_table_read_failed_stays_paused_and_is_seeked_at_the_next_poll(monkeypatch):
    listener = []
    member = Assignee(lambda: listener[0])
    c = consumer(monkeypatch, member, [0.0])
    failures = [1]

    def positions(topic, partitions):
        if failures[0]:
            failures[0] -= 1
            raise OSError("the lake did not answer")
        return {p: 5 for p in partitions}

    c.sink = SimpleNamespace(positions=positions)
    listener.append(c._listener())
    member.to_assign = {TopicPartition("t", 0)}
    with pytest.raises(OSError):
        c._poll_once()
    assert member.paused_ == {TopicPartition("t", 0)} and c.unseeked == {TopicPartition("t", 0)}
    c._poll_once()
    assert member.seeks == {TopicPartition("t", 0): 5} and member.paused_ == set() and c.unseeked == set()
