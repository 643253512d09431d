"""``focuscrawl.lake``, the one way to the Delta lake: Spark writes keep the spec's table and rows they
should not touch; the delta-rs side opens what is there and creates nothing when it reads."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from focuscrawl import lake
from focuscrawl.lake.tables import Column, TableSpec

SPEC = TableSpec(
    "lake_test",
    "rows for the lake tests",
    (Column("part", pa.string(), "which partition", nullable=False), Column("n", pa.int64(), "a number")),
    partition_by=("part",),
)


@pytest.fixture
def local(cfg, tmp_path):
    return dataclasses.replace(cfg, lake=str(tmp_path / "lake"))


def _rows(spec, cfg) -> list[tuple]:
    return sorted((r["part"], r["n"]) for r in DeltaTable(spec.path(cfg)).to_pyarrow_table().to_pylist())


def test_delta_rs_side_reads_without_creating(local):
    uri = SPEC.path(local)
    assert (lake.exists(SPEC, local), lake.open_table(uri), lake.table_rows(uri), lake.lake_tables(local)) == \
        (False, None, 0, {})
    lake.ensure(SPEC, local)
    assert lake.exists(SPEC, local) and lake.is_table(uri) and lake.version(SPEC, local) == 0
    assert lake.lake_tables(local) == {"lake_test": uri}
    assert lake.open_table(uri).metadata().partition_columns == ["part"]
    assert list(lake.to_pandas(SPEC, local).columns) == ["part", "n"]


@pytest.mark.integration
def test_overwrite_keeps_comments_and_partitioning(spark, local):
    lake.overwrite(spark.createDataFrame([("a", 1), ("b", 2)], "part string, n long"), SPEC, local)
    lake.overwrite(spark.createDataFrame([("a", 3)], "part string, n long"), SPEC, local)
    dt = DeltaTable(SPEC.path(local))
    assert _rows(SPEC, local) == [("a", 3)]
    assert (dt.metadata().description, dt.metadata().partition_columns) == (SPEC.comment, ["part"])
    assert {f.name: f.metadata.get("comment") for f in dt.schema().fields} == {"part": "which partition",
                                                                               "n": "a number"}
    assert lake.read(spark, SPEC, local).count() == 1


@pytest.mark.integration
def test_replace_where_replaces_only_the_predicates_rows(spark, local):
    lake.replace_where(spark.createDataFrame([], "part string, n long"), SPEC, local, "part = 'a'")
    assert lake.exists(SPEC, local) and _rows(SPEC, local) == []  # made from the spec, empty
    lake.replace_where(spark.createDataFrame([("a", 1), ("a", 2)], "part string, n long"), SPEC, local, "part = 'a'")
    lake.replace_where(spark.createDataFrame([("b", 5)], "part string, n long"), SPEC, local, "part = 'b'")
    lake.replace_where(spark.createDataFrame([("a", 9)], "part string, n long"), SPEC, local, "part = 'a'")
    assert _rows(SPEC, local) == [("a", 9), ("b", 5)]
    assert DeltaTable(SPEC.path(local)).metadata().description == SPEC.comment


def test_a_table_an_older_spec_made_is_rewritten_under_the_current_one_and_keeps_its_rows(local, caplog):
    """The dead_letter table before issue 21 required parser and url and was partitioned by parser; a
    sink's dead letter (no parser) must land in it after the upgrade, and the old rows must stay."""
    from deltalake import write_deltalake

    from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE

    uri = DEAD_LETTER_TABLE.path(local)
    old = pa.schema([pa.field("parser", pa.string(), False), pa.field("url", pa.string(), False),
                     pa.field("reason", pa.string(), False), pa.field("payload", pa.binary(), False),
                     pa.field("source", pa.string()), pa.field("rejected_at_ms", pa.int64(), False)])
    DeltaTable.create(uri, old, partition_by=["parser"], name="dead_letter")
    write_deltalake(uri, pa.table({"parser": ["html", "feed"], "url": ["http://a/", "http://b/"],
                                   "reason": ["no body", "not XML"], "payload": [b"x", b"y"],
                                   "source": ["crawler", None], "rejected_at_ms": [1, 2]}, schema=old), mode="append")

    with caplog.at_level("WARNING", logger="focuscrawl.lake"):
        table = lake.ensure_table(uri, DEAD_LETTER_TABLE)
    assert "rewrote 2 rows of version 1 " in caplog.text  # the version the old rows stay readable in
    assert table.metadata().partition_columns == []
    fields = {f.name: f.nullable for f in table.schema().fields}
    assert fields["parser"] and fields["url"] and fields["kafka_topic"]
    assert fields["reason"] is False and fields["source"] is True  # an old row has no source: kept, not refused
    schema = pa.schema(table.schema().to_arrow())
    sink_letter = dict.fromkeys(schema.names) | {"source": "focuscrawl-posts", "reason": "not JSON",
                                                  "target_table": "posts", "rejected_at_ms": 3}
    write_deltalake(table, pa.Table.from_pylist([sink_letter], schema=schema), mode="append")

    rows = sorted(DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["rejected_at_ms"])
    assert [(r["parser"], r["url"], r["reason"], r["source"]) for r in rows] == [
        ("html", "http://a/", "no body", "crawler"), ("feed", "http://b/", "not XML", None),
        (None, None, "not JSON", "focuscrawl-posts")]
    again = lake.ensure_table(uri, DEAD_LETTER_TABLE)  # nothing left to rewrite: no new version
    assert again.version() == DeltaTable(uri).version()
    assert again.history(1)[0]["operation"] == "WRITE" and len(again.to_pyarrow_table()) == 3
