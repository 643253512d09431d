"""A sink's consumer with no settled assignment (no partition, or a join begun and never finished) leaves
its group and joins again, waiting longer each time (focuscrawl.stream.sinks.StreamConsumer._watch_assignment);
one that holds partitions in a stable group never does."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from kafka.structs import ConsumerGroupMetadata, MemberState

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

