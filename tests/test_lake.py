"""``focuscrawl.lake``, the one way to the Delta lake: Spark writes keep the spec's table and rows they
should not touch; the delta-rs side opens what is there and creates nothing when it reads."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from focuscrawl import lake
from focuscrawl.tables import Column, TableSpec

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
