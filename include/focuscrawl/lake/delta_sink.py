"""Exactly-once Kafka -> Delta appends with delta-rs (``deltalake``, no JVM).

docs/architecture.md, loop 1 ("offsets travel inside the Delta commit"). Each append of
a batch carries, in the same Delta commit, one transaction action per Kafka partition it covers:
``Transaction(app_id=<group>:<topic>:<partition>, version=<next offset to read>)``. The table is
therefore the authority on what was consumed: a consumer seeks every assigned partition to
:meth:`DeltaSink.positions`, and :meth:`DeltaSink.write` drops records below those positions, so
a batch replayed after a crash (SIGKILL between the Delta commit and Kafka's offset commit) adds
nothing. Kafka's committed group offsets are only a hint for tools. The commit is made on the
table version the positions were read from, so a zombie member still writing a partition the
group gave to another consumer fails with delta-rs's concurrent-transaction conflict instead of
duplicating rows.

Exactly-once per offset is not exactly-once per *record*: a crawler killed after producing a
page fetches it again when it restarts, and a listing crawler that reaches the end of a listing
starts again from the newest posts, so the same post reaches Kafka more than once under new
offsets (the idempotent producer only removes duplicates of its own retries). With
``unique_key`` the sink is also insert-if-absent on that column: a row whose key the table
already holds is dropped in the same commit that advances the offsets. This needs the key to be
a function of the Kafka record key (posts: ``name`` -> its author, the record key), so every
copy of a record lands in one partition and one group member at a time decides about it; the
keys already stored are read per partition from the table and kept while no other member
writes that partition (its transaction version tells). Changing a topic's partition count
breaks that premise: re-key or dedupe the table once after doing it.

Records that do not fit the table's schema go to the ``dead_letter`` table (raw payload, reason, topic,
partition, offset) under the same rule, written *before* the main table: if the process dies in
between, the replay re-writes only the main rows, because the dead letters' own positions (app ids
of their own, since the ``dead_letter`` sink writes both into one table) already cover them.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import pyarrow as pa

from focuscrawl.lake import ensure_table
from focuscrawl.parse.rejection import fingerprint
from focuscrawl.lake.tables import Column, TableSpec, table

log = logging.getLogger(__name__)

# Lineage columns a table spec may include: the sink fills them from the Kafka record, which makes
# "no duplicate (topic, partition, offset)" checkable in SQL.
LINEAGE_COLUMNS = (
    Column("kafka_topic", pa.string(), "Kafka topic the row was consumed from", nullable=False),
    Column("kafka_partition", pa.int32(), "Kafka partition the row was consumed from", nullable=False),
    Column("kafka_offset", pa.int64(), "offset of the record in its partition", nullable=False),
)
# The same, null where a row did not come through Kafka (a parser's rejection, an offline graph crawl):
# for tables that are also written directly. Rows with all three null are left out of the uniqueness check.
OPTIONAL_LINEAGE_COLUMNS = tuple(Column(c.name, c.type, c.comment + " (null: not landed from Kafka)")
                                 for c in LINEAGE_COLUMNS)

# Both ways input is refused land here: a parser's rejection (``parse/rejection.py``: the crawler
# produces it to the dead-letter topic, whose sink lands it) and a record a sink could not convert
# (:meth:`DeltaSink._write_dead_letters`). The spec sits here, not beside the parsers, because the
# sink writes both and ``parse/`` stays free of table declarations.
DEAD_LETTER_TABLE = table(
    "dead_letter",
    "Input refused on its way into the lake, kept with the reason and the raw payload so nothing is silently "
    "lost and every rejection can be replayed: a parser's rejection (malformed listing JSON, HTML, feed, "
    "sitemap, robots.txt; parser and url set) and a Kafka record a consumer could not convert to its target "
    "table (target_table and key set), each exactly once per (topic, partition, offset).",
    [
        Column("source", pa.string(), "crawler or consumer group that refused it", nullable=False),
        Column("reason", pa.string(), "why it was refused, in words that name the fault", nullable=False),
        Column("parser", pa.string(), "parser that refused it: listing, html, feed, sitemap, robots (null: a sink)"),
        Column("url", pa.string(), "URL the payload was fetched from (null: a Kafka record)"),
        Column("target_table", pa.string(), "table a Kafka record was meant for (null: a parser's rejection)"),
        Column("key", pa.binary(), "raw Kafka record key of a record a consumer refused"),
        Column("payload", pa.binary(), "the raw payload as received (a record, or the whole body; null: a tombstone)"),
        Column("payload_sha256", pa.string(), "SHA-256 of payload, hex: the dedup key of a replay"),
        Column("payload_size", pa.int64(), "payload length in bytes"),
        *OPTIONAL_LINEAGE_COLUMNS,
        Column("record_timestamp_ms", pa.int64(), "Kafka record timestamp, Unix epoch milliseconds"),
        Column("rejected_at_ms", pa.int64(), "when it was rejected, Unix epoch milliseconds", nullable=False),
    ],
)


@dataclass(frozen=True)
class StreamRecord:
    """One consumed Kafka record, independent of the client library."""

    topic: str
    partition: int
    offset: int
    value: bytes | None
    key: bytes | None = None
    timestamp_ms: int | None = None


class RecordRejected(ValueError):
    """A record does not fit the target schema; the message is the dead letter's reason."""


def json_row(record: StreamRecord) -> dict[str, Any]:
    """The default conversion: the record value is one JSON object whose keys are column names."""
    if record.value is None:
        raise RecordRejected("empty value (tombstone) where a JSON object was expected")
    try:
        row = json.loads(record.value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordRejected(f"value is not JSON: {exc}") from None
    if not isinstance(row, dict):
        raise RecordRejected(f"value is JSON {type(row).__name__}, not an object")
    return row


@dataclass
class WriteResult:
    written: int = 0
    dead_lettered: int = 0
    skipped: int = 0  # already in the table (replay after a crash or rebalance)
    duplicates: int = 0  # new offsets carrying a ``unique_key`` the table already holds
    positions: dict[tuple[str, int], int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the rows this write appended


class _TxnTable:
    """A Delta table plus the per-partition positions its transaction actions record."""

    def __init__(self, uri: str, spec: TableSpec, group: str, storage_options: dict[str, str] | None,
                 app: str = "focuscrawl") -> None:
        self.uri, self.spec, self.group, self.app = uri, spec, group, app
        self.storage_options = storage_options
        self._table = None

    def app_id(self, topic: str, partition: int) -> str:
        return f"{self.app}:{self.group}:{topic}:{partition}"

    def refresh(self):
        if self._table is None:
            self._table = ensure_table(self.uri, self.spec, self.storage_options)
        else:
            # Another consumer of the group may have committed since (other partitions, or ours
            # before a rebalance): positions must come from the latest version.
            self._table.update_incremental()
        return self._table

    def positions(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
        dt = self.refresh()
        return {(t, p): dt.transaction_version(self.app_id(t, p)) for t, p in keys}

    def read(self, columns: list[str], filters: list) -> pa.Table:
        """Rows of the version :meth:`positions` read (not refreshed: what the next append commits on)."""
        return self._table.to_pyarrow_table(columns=columns, filters=filters)

    def append(self, rows: pa.Table, ends: dict[tuple[str, int], int]) -> None:
        """Commit on the version :meth:`positions` read: if another writer committed one of these app ids
        since (a zombie after a rebalance), delta-rs refuses the commit (``CommitFailedError``)."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        txns = [Transaction(self.app_id(t, p), end) for (t, p), end in sorted(ends.items())]
        write_deltalake(
            self._table, rows, mode="append", storage_options=self.storage_options,
            commit_properties=CommitProperties(app_transactions=txns, max_commit_retries=50),
        )


class DeltaSink:
    """Append Kafka records to one Delta table exactly once (see the module docstring).

    ``convert`` turns a record into a row dict (raise :class:`RecordRejected`, or any
    ``ValueError``/``TypeError``, to dead-letter it); lineage columns present in ``spec`` are
    filled by the sink. ``unique_key`` (a column) makes the table insert-if-absent on it.
    """

    def __init__(
        self,
        table_uri: str,
        spec: TableSpec,
        group: str,
        dead_letter_uri: str,
        convert: Callable[[StreamRecord], dict[str, Any]] = json_row,
        storage_options: dict[str, str] | None = None,
        unique_key: str | None = None,
    ) -> None:
        self.spec = spec
        self.group = group
        self.convert = convert
        self.table = _TxnTable(table_uri, spec, group, storage_options)
        self.dead_letters = _TxnTable(dead_letter_uri, DEAD_LETTER_TABLE, group, storage_options,
                                      app="focuscrawl-dead-letter")
        self._schema = spec.arrow_schema()
        self._lineage = {c.name for c in LINEAGE_COLUMNS} <= set(spec.column_names)
        if unique_key is not None and (unique_key not in spec.column_names or not self._lineage):
            raise ValueError(f"unique_key {unique_key!r} needs that column and the lineage columns in {spec.name}")
        self.unique_key = unique_key
        # The first batch must not stall while its partitions wait: building rows from Python objects
        # makes pyarrow import pandas, and reading stored keys needs pyarrow.dataset. Those imports take
        # 15-30 s on a busy 2-core machine where no bytecode is cached (PYTHONDONTWRITEBYTECODE=1
        # compiles pandas from source in every process), so they are paid here, before subscribing.
        _to_table([], self._schema)
        if unique_key is not None:
            import pyarrow.dataset  # noqa: F401
        # (topic, partition) -> (the partition's position the keys were read at, keys stored)
        self._keys: dict[tuple[str, int], tuple[int | None, set]] = {}

    def positions(self, topic: str, partitions: Iterable[int]) -> dict[int, int | None]:
        """Next offset to read per partition, from the table's transactions (None: never written)."""
        partitions = list(partitions)
        found = self.table.positions((topic, p) for p in partitions)
        return {p: found[(topic, p)] for p in partitions}

    def write(self, records: Sequence[StreamRecord]) -> WriteResult:
        """Append the records not yet in the table; one Delta commit (plus one for dead letters)."""
        result = WriteResult()
        if not records:
            return result
        by_partition: dict[tuple[str, int], list[StreamRecord]] = defaultdict(list)
        for r in records:
            by_partition[(r.topic, r.partition)].append(r)
        fresh: list[StreamRecord] = []
        ends: dict[tuple[str, int], int] = {}
        starts = self.table.positions(by_partition)
        for (topic, partition), recs in by_partition.items():
            start = starts[(topic, partition)] or 0
            new = [r for r in recs if r.offset >= start]
            result.skipped += len(recs) - len(new)
            if new:
                fresh.extend(new)
                ends[(topic, partition)] = max(r.offset for r in new) + 1
        if not fresh:
            return result
        good, bad = self._convert(fresh)
        if bad:
            result.dead_lettered = self._write_dead_letters(bad)
        if self.unique_key is not None:
            kept = self._absent(good, {tp: starts[tp] for tp in ends})
            result.duplicates = len(good) - len(kept)
            good = kept
        # Appended even when empty: the commit still moves the partitions' positions past the batch.
        self.table.append(_to_table(good, self._schema), ends)
        if self.unique_key is not None:  # only now: a failed commit must not leave its keys behind
            for row in good:
                self._keys[(row["kafka_topic"], row["kafka_partition"])][1].add(row[self.unique_key])
            for tp, end in ends.items():
                self._keys[tp] = (end, self._keys[tp][1])
        result.written = len(good)
        result.rows = good
        result.positions = ends
        return result

    def _absent(self, rows: list[dict], starts: dict[tuple[str, int], int | None]) -> list[dict]:
        """The rows whose key neither the table nor an earlier row of the batch holds."""
        for tp, start in starts.items():
            cached = self._keys.get(tp)
            if cached is None or cached[0] != start:  # first sight, or another member wrote it since
                self._keys[tp] = (start, self._stored_keys(*tp))
        kept, batch_keys = [], set()
        for row in rows:
            tp, key = (row["kafka_topic"], row["kafka_partition"]), row[self.unique_key]
            if key not in self._keys[tp][1] and (tp, key) not in batch_keys:
                batch_keys.add((tp, key))
                kept.append(row)
        return kept

    def _stored_keys(self, topic: str, partition: int) -> set:
        got = self.table.read([self.unique_key], [("kafka_topic", "=", topic), ("kafka_partition", "=", partition)])
        return set(got.column(self.unique_key).to_pylist())

    def _convert(self, records: list[StreamRecord]) -> tuple[list[dict], list[tuple[StreamRecord, str]]]:
        good: list[dict] = []
        bad: list[tuple[StreamRecord, str]] = []
        for r in records:
            try:
                row = self._row(r)
            except (RecordRejected, ValueError, TypeError, KeyError, pa.ArrowException) as exc:
                bad.append((r, str(exc) or type(exc).__name__))
            else:
                good.append(row)
        return good, bad

    def _row(self, r: StreamRecord) -> dict[str, Any]:
        raw = self.convert(r)
        row = {c: raw.get(c) for c in self.spec.column_names}
        if self._lineage:
            row.update(kafka_topic=r.topic, kafka_partition=r.partition, kafka_offset=r.offset)
        missing = [c.name for c in self.spec.columns if not c.nullable and row[c.name] is None]
        if missing:
            raise RecordRejected(f"missing required field(s): {', '.join(missing)}")
        # Convert alone so one bad value dead-letters its record, not the batch.
        pa.Table.from_pylist([row], schema=self._schema)
        return row

    def _write_dead_letters(self, bad: list[tuple[StreamRecord, str]]) -> int:
        ends: dict[tuple[str, int], int] = {}
        keep = []
        now = int(time.time() * 1000)
        starts = self.dead_letters.positions({(r.topic, r.partition) for r, _ in bad})
        for r, reason in bad:
            if r.offset < (starts[(r.topic, r.partition)] or 0):
                continue  # written by the attempt that crashed before the main commit
            log.warning("dead letter %s[%d]@%d for %s: %s", r.topic, r.partition, r.offset, self.spec.name, reason)
            sha256, size = fingerprint(r.value) if r.value is not None else (None, None)
            keep.append({
                "source": self.group, "reason": reason, "target_table": self.spec.name, "key": r.key,
                "payload": r.value, "payload_sha256": sha256, "payload_size": size, "kafka_topic": r.topic,
                "kafka_partition": r.partition, "kafka_offset": r.offset, "record_timestamp_ms": r.timestamp_ms,
                "rejected_at_ms": now,
            })
            ends[(r.topic, r.partition)] = max(ends.get((r.topic, r.partition), 0), r.offset + 1)
        if keep:
            self.dead_letters.append(_to_table(keep, DEAD_LETTER_TABLE.arrow_schema()), ends)
        return len(keep)


def _to_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)
