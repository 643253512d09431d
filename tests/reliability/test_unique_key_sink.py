"""The sink's insert-if-absent on a record identity (``unique_key``), on real delta-rs tables, no Kafka."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS, DeltaSink, StreamRecord
from focuscrawl.lake.tables import Column, TableSpec

SPEC = TableSpec(
    "unique_sink_test", "rows keyed by name",
    (Column("name", pa.string(), "identity", nullable=False), Column("n", pa.int64(), "a number"), *LINEAGE_COLUMNS),
)


def rec(partition: int, offset: int, name: str, n: int = 0) -> StreamRecord:
    return StreamRecord("posts", partition, offset, json.dumps({"name": name, "n": n}).encode())


def sink(tmp_path, group: str = "g") -> DeltaSink:
    return DeltaSink(str(tmp_path / "t"), SPEC, group, dead_letter_uri=str(tmp_path / "dl"), unique_key="name")


def stored(tmp_path) -> list[tuple[str, int, int]]:
    rows = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().to_pylist()
    return sorted((r["name"], r["kafka_partition"], r["kafka_offset"]) for r in rows)


def test_refetched_records_under_new_offsets_are_stored_once(tmp_path):
    s = sink(tmp_path)
    first = s.write([rec(0, 0, "a"), rec(0, 1, "b"), rec(1, 0, "c")])
    # The crawler restarted and produced a, b, c again (new offsets), plus d, and a twice in one batch.
    again = s.write([rec(0, 2, "a"), rec(0, 3, "b"), rec(0, 4, "d"), rec(0, 5, "a"), rec(1, 1, "c")])
    assert (first.written, first.duplicates) == (3, 0)
    assert (again.written, again.duplicates) == (1, 4)
    assert stored(tmp_path) == [("a", 0, 0), ("b", 0, 1), ("c", 1, 0), ("d", 0, 4)]
    # The all-duplicate partition 1 still moved on: a replay of the batch is skipped by offset.
    assert s.positions("posts", [0, 1]) == {0: 6, 1: 2}


def test_a_fresh_member_reads_the_stored_keys_of_its_partitions(tmp_path):
    sink(tmp_path, "g").write([rec(0, 0, "a"), rec(0, 1, "b")])
    # Another process of the same group (restart, rebalance) has no cache: it reads the table.
    result = sink(tmp_path, "g").write([rec(0, 2, "b"), rec(0, 3, "e")])
    assert (result.written, result.duplicates) == (1, 1)
    assert stored(tmp_path) == [("a", 0, 0), ("b", 0, 1), ("e", 0, 3)]


def test_cache_follows_writes_of_another_member(tmp_path):
    one, two = sink(tmp_path), sink(tmp_path)
    one.write([rec(0, 0, "a")])
    two.write([rec(0, 1, "x")])  # partition 0 moved to member two for a while, then came back
    result = one.write([rec(0, 2, "x"), rec(0, 3, "y")])
    assert (result.written, result.duplicates) == (1, 1)
    assert [r[0] for r in stored(tmp_path)] == ["a", "x", "y"]


def test_a_failed_commit_leaves_no_keys_behind(tmp_path, monkeypatch):
    s = sink(tmp_path)
    s.write([rec(0, 0, "a")])
    real = s.table.append

    def fail(*_a, **_k):
        raise OSError("disk went away")

    monkeypatch.setattr(s.table, "append", fail)
    with pytest.raises(OSError):
        s.write([rec(0, 1, "b")])
    monkeypatch.setattr(s.table, "append", real)
    result = s.write([rec(0, 1, "b")])  # the consumer's replay of the lost batch
    assert (result.written, result.duplicates) == (1, 0)
    assert [r[0] for r in stored(tmp_path)] == ["a", "b"]


def test_unique_key_needs_the_column_and_lineage(tmp_path):
    with pytest.raises(ValueError, match="unique_key"):
        DeltaSink(str(tmp_path / "t"), SPEC, "g", dead_letter_uri=str(tmp_path / "dl"), unique_key="nope")
