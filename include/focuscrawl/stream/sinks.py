"""Every topic -> Delta table landing of focuscrawl, registered by name, and the one loop that runs it.

docs/architecture.md, loop 1 ("lightweight consumers append them to Delta tables exactly
once"). A sink names the table (its :class:`~focuscrawl.lake.tables.TableSpec`), the topic it reads by
default, the record -> row conversion and the column the table holds once (``unique_key``);
``streaming/consumer.py --sink NAME`` runs any of them. Registering a table is one entry in
:data:`SINKS` (a function, so the registry imports no table module until that sink is used).

:class:`StreamConsumer` is the loop: a kafka-python group member, auto-commit off; batches (by size
or age) go to :class:`~focuscrawl.lake.delta_sink.DeltaSink`, whose commits carry the offsets; on every
partition assignment it seeks to the offsets stored in the table, so a SIGKILL at any point neither
loses nor duplicates a row; a revocation drops what the open batch holds of the revoked partitions
(their next owner reads it again), since a Delta commit inside the rebalance callback stalls the
member's heartbeats; a stop lands the rest of its partitions, read outside the group (:meth:`StreamConsumer._drain`).
Kafka's committed offsets follow the table only as a hint for tools. No
client or Delta error ends it: it logs, drops the uncommitted batch, seeks back to the table's
offsets and goes on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE, DeltaSink, StreamRecord, json_row
from focuscrawl.lake.tables import TableSpec
from focuscrawl.topics.specs import TopicSpec

if TYPE_CHECKING:  # pragma: no cover
    from focuscrawl.config import Settings
    from focuscrawl.stream.metrics import Metrics
    from focuscrawl.stream.process import StreamProcess

log = logging.getLogger("focuscrawl.consumer")


@dataclass(frozen=True)
class SinkSpec:
    """One landing: ``topic`` -> ``table``, rows by ``convert``, insert-if-absent on ``unique_key``;
    ``observe(rows, metrics)`` counts what was appended (after the Delta commit)."""

    table: TableSpec
    topic: str
    convert: Callable[[StreamRecord], dict[str, Any]] = json_row
    unique_key: str | None = None
    observe: Callable[[list[dict], "Metrics"], None] | None = None


def _reddit_posts() -> SinkSpec:
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE, POSTS_TOPIC, POSTS_UNIQUE_KEY

    return SinkSpec(POSTS_TABLE, POSTS_TOPIC, json_row, POSTS_UNIQUE_KEY)


def _fue_posts() -> SinkSpec:
    """The FUE explorer's posts land in the same ``reddit_posts`` table (pseudo-training reads them)."""
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE, POSTS_UNIQUE_KEY
    from focuscrawl.fue.pipeline import POSTS_TOPIC, post_row

    return SinkSpec(POSTS_TABLE, POSTS_TOPIC, post_row, POSTS_UNIQUE_KEY)


def _dead_letter() -> SinkSpec:
    from focuscrawl.crawl import dead_letters

    return SinkSpec(DEAD_LETTER_TABLE, dead_letters.DEAD_LETTER_TOPIC, dead_letters.decode_row)


def _count_verdicts(rows: list[dict], metrics: "Metrics") -> None:
    for row in rows:
        metrics.verdict(row["method"], bool(row["relevant"]))


def _fue_extractions() -> SinkSpec:
    from focuscrawl.fue.pipeline import STATS_TABLE, STATS_TOPIC, stats_row

    return SinkSpec(STATS_TABLE, STATS_TOPIC, stats_row, observe=_count_verdicts)


def _source_history(name: str) -> Callable[[], SinkSpec]:
    def make() -> SinkSpec:
        from focuscrawl.ephemeral.tables import HISTORY_TABLES, HISTORY_TOPICS

        return SinkSpec(HISTORY_TABLES[name], HISTORY_TOPICS[name])

    return make


def _page_clicks() -> SinkSpec:
    """Click feedback, from the source crawler's click log or a project's own ``[loops.sources] clicks_topic``
    (the plan's ``--topic``): one record, :class:`focuscrawl.ephemeral.tables.ClickRecord`, checked field by field."""
    from focuscrawl.ephemeral.tables import HISTORY_TOPICS, PAGE_CLICKS, click_row

    return SinkSpec(PAGE_CLICKS, HISTORY_TOPICS[PAGE_CLICKS.name], click_row)


def _graph_sample() -> SinkSpec:
    """The graph sampler's crawls (``streaming/graph_sampler.py``, one Kafka transaction per round)."""
    from focuscrawl.graph.live import GRAPH_SAMPLE_TOPIC, graph_sample_row
    from focuscrawl.graph.tables import GRAPH_SAMPLE

    return SinkSpec(GRAPH_SAMPLE, GRAPH_SAMPLE_TOPIC, graph_sample_row)


def _control_audit() -> SinkSpec:
    """Every steering command (:mod:`focuscrawl.control`), as the command line sent it to the audit topic."""
    from focuscrawl.control import AUDIT_TABLE, AUDIT_TOPIC

    return SinkSpec(AUDIT_TABLE, AUDIT_TOPIC)


# name -> how to build the sink (``consumer.py --sink NAME``); the name is the table's unless two
# topics land in one table (``fue_posts``).
SINKS: dict[str, Callable[[], SinkSpec]] = {
    "reddit_posts": _reddit_posts,
    "fue_posts": _fue_posts,
    "dead_letter": _dead_letter,
    "fue_extractions": _fue_extractions,
    "source_recrawls": _source_history("source_recrawls"),
    "page_clicks": _page_clicks,
    "source_pages": _source_history("source_pages"),
    "graph_sample": _graph_sample,
    "control_audit": _control_audit,
}


def sink(name: str) -> SinkSpec:
    """The registered sink ``name``; an unknown name lists the known ones."""
    try:
        make = SINKS[name]
    except KeyError:
        raise KeyError(f"unknown sink {name!r}; known sinks: {', '.join(sorted(SINKS))}") from None
    return make()


class StreamConsumer:
    """A topic -> a Delta table, exactly once (see the module docstring). ``proc`` (a
    :class:`~focuscrawl.stream.process.StreamProcess`) gives the stop event, the metrics and the lag report."""

    DRAIN_QUIET_SECONDS = 5.0  # a drain ends early only after polls return nothing for this long

    def __init__(self, proc: "StreamProcess", topic: str, group: str, sink: DeltaSink,
                 batch_size: int = 500, batch_seconds: float = 2.0, poll_ms: int = 500,
                 session_timeout_ms: int = 10000, drain_seconds: float = 15.0,
                 observe: Callable[[list[dict], "Metrics"], None] | None = None) -> None:
        self.proc, self.topic, self.group, self.sink = proc, topic, group, sink
        self.session_timeout_ms, self.drain_seconds = session_timeout_ms, drain_seconds
        self.batch_size, self.batch_seconds, self.poll_ms = batch_size, batch_seconds, poll_ms
        self.observe = observe
        self.stopping = proc.stopping
        self.batch: list[StreamRecord] = []
        self.batch_started = 0.0
        self.consumer = None
        self.unseeked: set = set()  # assigned partitions paused until the loop seeks them to the table's offsets
        self.counts = {"batches": 0, "written": 0, "duplicates": 0, "dead_lettered": 0, "skipped": 0, "rejoins": 0}
        # A member left without partitions reconnects after this long, then after twice as long ...
        # (see _watch_assignment); a member holding partitions resets it.
        self.rejoin_after = self.unassigned_for = 3 * session_timeout_ms / 1000
        self.unassigned_since: float | None = None

    @classmethod
    def for_sink(cls, proc: "StreamProcess", name: str, cfg: "Settings", topic: str | None = None,
                 group: str | None = None, table_uri: str | None = None, **kwargs) -> "StreamConsumer":
        """The consumer of the registered sink ``name`` (topic, group, table defaulted from it)."""
        from focuscrawl.lake.storage import storage_options

        spec = sink(name)
        group = group or f"{name}-to-delta"
        options = storage_options(cfg) or None
        delta = DeltaSink(table_uri or spec.table.path(cfg), spec.table, group,
                          dead_letter_uri=DEAD_LETTER_TABLE.path(cfg), convert=spec.convert,
                          storage_options=options, unique_key=spec.unique_key)
        return cls(proc, topic or spec.topic, group, delta, observe=spec.observe, **kwargs)

    def status(self) -> dict:
        return {"topic": self.topic, "group": self.group, "table": self.sink.spec.name, **self.counts}

    # -- Kafka wiring -----------------------------------------------------------------------

    def _listener(self):
        """The group's rebalance listener. No Delta I/O in its callbacks: kafka-python runs them on the
        consumer's event loop, heartbeats included (a commit there took 4.9 s in a CI run; the join that
        followed had not finished 20 s later)."""
        from kafka import ConsumerRebalanceListener

        outer = self

        class SeekToTable(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                # Dropped, not flushed: the records are read again by the partitions' next owner, from the
                # table's offsets.
                outer._drop(revoked)

            def on_partitions_assigned(self, assigned):
                # Paused, so nothing is fetched from the group's offsets; the loop reads the table's (a fresh
                # process loads the whole Delta log for it) and resumes them (_seek_assigned).
                outer.consumer.pause(*assigned)
                outer.unseeked.update(assigned)

        return SeekToTable()

    def _connect(self):
        # Subscribing to a topic that does not exist yet leaves the member without partitions
        # until a metadata refresh (minutes): make sure it exists first (a no-op when it does).
        self.proc.ensure_topics([TopicSpec(self.topic, "the producer's key")])

        # A killed member holds its partitions until its session expires (kafka-python's default is
        # 45 s): keep failover short.
        # read_committed (the scaffold's default): a producer's aborted transaction never lands.
        consumer = self.proc.consumer([], self.group, max_poll_records=self.batch_size,
                                      session_timeout_ms=self.session_timeout_ms,
                                      heartbeat_interval_ms=self.session_timeout_ms // 3,
                                      client_id=f"focuscrawl-consumer-{self.group}")
        # The group leader assigns only the partitions its metadata knows. Joined before that, a member
        # got none, and its rejoin once never finished: source_recrawls landed nothing for 10 minutes
        # of a CI run (2026-12-01) while page_clicks, started alike, recovered. So know them first.
        deadline = time.monotonic() + 60
        while not consumer.partitions_for_topic(self.topic) and time.monotonic() < deadline:
            if self.proc.wait(0.5):
                break
        consumer.subscribe([self.topic], listener=self._listener())
        return consumer

    def _seek_assigned(self) -> None:
        """Seek the partitions assigned since the last poll to the table's offsets and resume them. Forgotten only
        once seeked: should the table's read fail, the next poll tries again (they stay paused till then)."""
        mine = self.unseeked & self.consumer.assignment()
        if mine:
            self._seek_to_table(mine)
            self.consumer.resume(*mine)
        self.unseeked.clear()

    def _seek_to_table(self, partitions, why: str = "assigned") -> None:
        positions = self.sink.positions(self.topic, [tp.partition for tp in partitions if tp.topic == self.topic])
        for tp in partitions:
            pos = positions.get(tp.partition)
            if pos is None:
                self.consumer.seek_to_beginning(tp)
            else:
                self.consumer.seek(tp, pos)
        log.info("%s %s; resuming from the table's offsets %s", why, sorted(tp.partition for tp in partitions), positions)

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        while self.proc.running():
            try:
                if self.consumer is None:
                    self.consumer = self._connect()
                self._poll_once()
            except Exception:  # noqa: BLE001 - nothing may end the consumer; the table keeps the truth
                log.exception("consumer loop error; dropping the open batch and resuming from the table")
                self.batch.clear()
                self._reset()
                self.stopping.wait(2.0)
        try:
            if self.consumer is not None:
                try:
                    self._drain()
                except Exception:  # noqa: BLE001 - e.g. the broker is gone: the rest lands at the next start
                    log.exception("stopping: could not drain %s; what is left stays in the topic", self.topic)
            self._flush()
        finally:
            if self.consumer is not None:
                self._close()

    def _drain(self) -> None:
        """On a stop, land what reached the topic before it: read the partitions this member holds up to
        their end offsets as they were at the stop, for at most ``drain_seconds``. The platform stops the
        fetchers first (``platform.supervisor``), so a clean ``down`` leaves nothing in Kafka that Delta
        lacks; what a deadline leaves stays in the topic for the next start, from the table's offsets.

        The drain reads outside the group. A member caught in a rebalance fetches nothing: in a CI run the
        posts' member began a join after the e2e's SIGKILL round, had not finished it 20 s later when ``down``
        came, and left 1,080 posts in the topic. The offsets live in the table, not the group, so the drain
        flushes, leaves the group and reads its partitions by assignment from the table's offsets (every
        partition, when a member mid-rebalance holds none); should another member take one meanwhile, the
        table's positions skip what either already landed (``DeltaSink.write``)."""
        from kafka import TopicPartition
        from kafka.structs import MemberState

        if self.drain_seconds <= 0:
            return
        held = {tp for tp in self.consumer.assignment() if tp.topic == self.topic}
        if not held and self.consumer.group_metadata().state == MemberState.STABLE:
            return  # a settled member without partitions (more members than partitions) has nothing to land
        self._flush()
        self._close()
        self.consumer = self.proc.consumer([], None, max_poll_records=self.batch_size,
                                           client_id=f"focuscrawl-consumer-{self.group}-drain")
        tps = sorted(held or {TopicPartition(self.topic, p) for p in self.consumer.partitions_for_topic(self.topic) or ()})
        if not tps:
            return
        self.consumer.assign(tps)
        self._seek_to_table(tps, "stopping: draining, outside the group,")
        ends = self.consumer.end_offsets(tps)
        deadline = time.monotonic() + self.drain_seconds
        idle_since = None
        while time.monotonic() < deadline:
            if all(self.consumer.position(tp) >= end for tp, end in ends.items()):
                break
            if self._poll_once(watch=False):
                idle_since = None
                continue
            # One empty poll proves nothing on a busy machine (a fetch may take longer than the poll); only
            # a quiet spell says that what remains below the ends is no record (e.g. transaction markers).
            idle_since = idle_since if idle_since is not None else time.monotonic()
            if time.monotonic() - idle_since >= self.DRAIN_QUIET_SECONDS:
                break
        behind = {tp.partition: end - self.consumer.position(tp) for tp, end in ends.items()
                  if self.consumer.position(tp) < end}
        log.info("stopping: drained %s%s", self.topic, f"; left in the topic (offsets per partition): {behind}" if behind else "")

    def _poll_once(self, watch: bool = True) -> int:
        """One poll into the open batch (flushed when full or old enough); returns the records read. ``watch``:
        an empty poll checks the group assignment (``_watch_assignment``; not for the drain's group-less reads)."""
        if self.unseeked:
            self._seek_assigned()
        polled = self.consumer.poll(timeout_ms=self.poll_ms, max_records=self.batch_size)
        if self.unseeked:  # assigned within this poll: nothing of theirs was fetched (paused)
            self._seek_assigned()
        if not polled and watch and self._watch_assignment():
            return 0
        for records in polled.values():
            for r in records:
                if not self.batch:
                    self.batch_started = time.monotonic()
                self.batch.append(StreamRecord(r.topic, r.partition, r.offset, r.value, r.key, r.timestamp))
            if records:
                self.proc.metrics.consumed.labels(self.topic).inc(len(records))
        if len(self.batch) >= self.batch_size or (
            self.batch and time.monotonic() - self.batch_started >= self.batch_seconds
        ):
            self._flush()
        return sum(len(records) for records in polled.values())

    def _watch_assignment(self) -> bool:
        """Reconnect a member that has held no settled assignment for ``unassigned_for`` seconds; True
        when it did.

        A member whose group join never completed fetches nothing and waits for ever: in one CI run
        source_recrawls landed nothing for 25 minutes while page_clicks, started alike, did; in another
        graph_sample's member began its second join, never finished it (kafka-python re-awaits the same
        join task at every poll), kept the partitions of its first and landed nothing for 16 minutes.
        So settled means partitions assigned *and* the member's state stable (``group_metadata().state``,
        kafka-python's public snapshot). A new member joins afresh. A member that is legitimately idle
        (more members than partitions: settled, no partition) would reconnect too, so each of its reconnects
        doubles the wait (to 10 minutes at most) and churn decays. A join that has not finished is a fault,
        retried at the same pace: doubled, three stuck joins in a row would leave a landing 210 s without a
        partition."""
        from kafka.structs import MemberState

        if self.consumer.assignment() and self.consumer.group_metadata().state == MemberState.STABLE:
            self.unassigned_since, self.unassigned_for = None, self.rejoin_after
            return False
        now = time.monotonic()
        if self.unassigned_since is None:
            self.unassigned_since = now
            return False
        if now - self.unassigned_since < self.unassigned_for:
            return False
        state = self.consumer.group_metadata().state
        log.warning("no settled assignment of %s in group %s for %.0f s (state %s); leaving and joining again",
                    self.topic, self.group, now - self.unassigned_since, state)
        self.counts["rejoins"] += 1
        self.unassigned_since = None
        self.unassigned_for = min(2 * self.unassigned_for, 600.0) if state == MemberState.STABLE else self.rejoin_after
        self._flush()
        self._close()
        return True

    def _drop(self, revoked) -> None:
        """Forget the open batch's records of the ``revoked`` partitions (they are in no table yet)."""
        self.unseeked.difference_update(revoked)
        gone = {(tp.topic, tp.partition) for tp in revoked}
        self.batch = [r for r in self.batch if (r.topic, r.partition) not in gone]

    def _flush(self) -> None:
        if not self.batch:
            return
        batch, self.batch = self.batch, []
        result = self.sink.write(batch)
        log.info("batch of %d: %d rows, %d duplicates, %d dead letters, %d already in the table; next offsets %s",
                 len(batch), result.written, result.duplicates, result.dead_lettered, result.skipped, result.positions)
        m, table = self.proc.metrics, self.sink.spec.name
        m.rows_written.labels(table).inc(result.written)
        m.dead_letters.labels(table).inc(result.dead_lettered)
        m.duplicates.labels(table).inc(result.duplicates)
        for key in ("written", "duplicates", "dead_lettered", "skipped"):
            self.counts[key] += getattr(result, key)
        self.counts["batches"] += 1
        if self.observe is not None and result.rows:
            self.observe(result.rows, m)
        self._commit_hint(result.positions)

    def _commit_hint(self, positions: dict[tuple[str, int], int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        assigned = self.consumer.assignment()
        offsets = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in positions.items()
                   if TopicPartition(t, p) in assigned}
        if not offsets or self.consumer.config["group_id"] is None:  # the drain's reads belong to no group
            return
        try:
            self.consumer.commit(offsets)
        except Exception as exc:  # noqa: BLE001 - only a hint: the Delta commit already holds the offsets
            log.warning("Kafka offset commit failed (harmless, the table holds the offsets): %s", exc)

    def _close(self) -> None:
        self.unseeked.clear()
        self.proc.unwatch_lag(self.consumer)
        try:
            self.consumer.close(autocommit=False)
        except Exception:  # noqa: BLE001
            pass
        self.consumer = None

    def _reset(self) -> None:
        """After an error, re-read from the table's offsets (the Kafka position may be past a lost batch)."""
        if self.consumer is None:
            return
        try:
            assigned = self.consumer.assignment()
            if assigned:
                self._seek_to_table(assigned)
        except Exception:  # noqa: BLE001
            log.exception("seeking back to the table's offsets failed; reconnecting")
            self._close()
