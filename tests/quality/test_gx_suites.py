"""The spec-derived Great Expectations gate (issue 9, point 4) on a good and a corrupted Delta table."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS
from focuscrawl.lake.quality import (
    QUALITY_RESULTS_TABLE,
    DataQualityError,
    expectations_for,
    record_result,
    validate_table,
)
from focuscrawl.lake.tables import UNIT_INTERVAL, Column, TableSpec

SPEC = TableSpec(
    "scored_pages",
    "test table",
    (
        Column("url", pa.string(), "page address", nullable=False),
        Column("score", pa.float64(), "percentile rank", bounds=UNIT_INTERVAL),
        Column("fetched_at_ms", pa.int64(), "fetch time, Unix epoch milliseconds", nullable=False),
        *LINEAGE_COLUMNS,
    ),
)


def good_rows() -> dict:
    return {"url": ["https://a/1", "https://a/2", "https://a/3"], "score": [0.0, 0.5, None],
            "fetched_at_ms": [1, 2, 3], "kafka_topic": ["t"] * 3, "kafka_partition": [0, 0, 1],
            "kafka_offset": [0, 1, 0]}


def test_suite_follows_the_spec():
    names = [(type(e).__name__, getattr(e, "column", None)) for e in expectations_for(SPEC)]
    assert ("ExpectColumnValuesToNotBeNull", "url") in names
    assert ("ExpectColumnValuesToNotBeNull", "score") not in names  # nullable
    assert ("ExpectColumnValuesToBeBetween", "score") in names  # bounds declared
    assert ("ExpectColumnValuesToBeBetween", "fetched_at_ms") not in names
    assert names[-1][0] == "ExpectCompoundColumnsToBeUnique"
    assert expectations_for(SPEC)[-1].column_list == ["kafka_topic", "kafka_partition", "kafka_offset"]


def test_range_checks_come_from_declared_bounds_not_comment_prose():
    spec = TableSpec("bounded", "test table", (
        Column("said", pa.float64(), "a share in 0-1, in words only"),
        Column("delta", pa.float64(), "a change", bounds=(-1.0, 1.0)),
    ))
    between = {e.column: (e.min_value, e.max_value) for e in expectations_for(spec)
               if type(e).__name__ == "ExpectColumnValuesToBeBetween"}
    assert between == {"delta": (-1.0, 1.0)}
    with pytest.raises(ValueError, match="'x': bounds .* low above high"):
        Column("x", pa.float64(), "backwards", bounds=(1.0, 0.0))


def test_the_platform_columns_in_the_unit_interval_declare_it():
    """What the comments used to declare by prose is now declared by ``bounds`` (each table module imported)."""
    import focuscrawl.fue.pipeline  # noqa: F401 - declares fue_extractions
    import focuscrawl.outlinks.tables  # noqa: F401 - declares page_priorities
    import focuscrawl.crawl.user_priority  # noqa: F401 - user_priorities
    from focuscrawl.lake.tables import TABLES

    bounded = {(t.name, c.name) for t in TABLES.values() for c in t.columns if c.bounds == UNIT_INTERVAL}
    assert {("page_priorities", "score"), ("user_priorities", "priority"), ("fue_extractions", "probability")} <= bounded


def test_good_table_passes(tmp_path):
    path = str(tmp_path / "good")
    write_deltalake(path, pa.table(good_rows(), schema=SPEC.arrow_schema()))
    result = validate_table(path, SPEC)
    assert result.success and result.row_count == 3 and result.table_version == 0
    assert result.evaluated == len(expectations_for(SPEC)) == 6 * 2 + 5 + 1 + 1  # exist+type per column, 5 required, 1 range, 1 key


def test_corrupted_table_fails_naming_each_expectation(tmp_path):
    path = str(tmp_path / "bad")
    rows = good_rows()
    rows["url"][1] = None  # required column
    rows["score"][0] = 1.5  # outside 0-1
    rows["fetched_at_ms"] = ["1", "2", "3"]  # wrong type: written as strings
    rows["kafka_offset"][1] = 0  # duplicate (topic, partition, offset)
    write_deltalake(path, pa.table(rows))
    with pytest.raises(DataQualityError) as err:
        validate_table(path, SPEC)
    msg = str(err.value)
    assert msg.startswith("scored_pages failed 4 of 19 expectation(s)")
    assert "expect_column_values_to_not_be_null(column='url'): 1 rows" in msg
    assert "expect_column_values_to_be_between(column='score', min_value=0" in msg and "1 rows, e.g. [1.5]" in msg
    assert "expect_column_values_to_be_of_type(column='fetched_at_ms', type_='int'): observed 'str'" in msg
    assert "expect_compound_columns_to_be_unique" in msg


def test_repeated_keys_name_the_repair_and_dedup_repairs_them(tmp_path, monkeypatch, capsys):
    """A replayed period wrote (url, period) twice: the gate's message names `focuscrawl dedup` with the key,
    which keeps the first row by fetched time in one commit (refused while a platform is up), and the
    table then passes."""
    from focuscrawl.cli.main import main as cli_main
    from focuscrawl.config import settings

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    cfg = settings()
    spec = TableSpec("page_snapshots_t", "test table", (
        Column("url", pa.string(), "page", nullable=False), Column("period", pa.int64(), "period", nullable=False),
        Column("fetched_at", pa.int64(), "when", nullable=False), Column("text", pa.string(), "text")))
    path = spec.path(cfg)
    rows = {"url": ["a", "b", "a", "c", "b"], "period": [1, 1, 1, 1, 2], "fetched_at": [10, 11, 5, 12, 13],
            "text": ["replay", "b1", "first", "c1", "b2"]}
    write_deltalake(path, pa.table(rows, schema=spec.arrow_schema()))
    with pytest.raises(DataQualityError) as err:
        validate_table(path, spec, keys=("url", "period"))
    assert "fix: stop the writers (`focuscrawl down`), then `focuscrawl dedup page_snapshots_t --key url,period`" \
        in str(err.value)
    monkeypatch.setattr("focuscrawl.platform.supervisor.supervisor_pid", lambda var_dir: 4242)
    assert cli_main(["dedup", "page_snapshots_t", "--key", "url,period"]) == 2
    assert "focuscrawl down" in capsys.readouterr().err and DeltaTable(path).version() == 0
    monkeypatch.setattr("focuscrawl.platform.supervisor.supervisor_pid", lambda var_dir: None)
    assert cli_main(["dedup", "page_snapshots_t", "--key", "url,period", "--first-by", "fetched_at"]) == 0
    assert "1 of 5 rows removed" in capsys.readouterr().out
    kept = sorted((r["url"], r["period"], r["text"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist())
    assert kept == [("a", 1, "first"), ("b", 1, "b1"), ("b", 2, "b2"), ("c", 1, "c1")]
    assert validate_table(path, spec, keys=("url", "period")).success
    version = DeltaTable(path).version()
    assert cli_main(["dedup", "page_snapshots_t", "--key", "url,period"]) == 0  # nothing repeats: no commit
    assert DeltaTable(path).version() == version
    assert cli_main(["dedup", "page_snapshots_t", "--key", "url,nope"]) == 2
    assert "no column(s) ['nope']" in capsys.readouterr().err


def test_missing_table_fails_and_results_are_recorded(tmp_path):
    with pytest.raises(DataQualityError, match="no Delta table at"):
        validate_table(str(tmp_path / "absent"), SPEC)
    path = str(tmp_path / "good")
    write_deltalake(path, pa.table(good_rows(), schema=SPEC.arrow_schema()))
    results = str(tmp_path / "quality_results")
    record_result(validate_table(path, SPEC), results)
    try:
        validate_table(str(tmp_path / "absent"), SPEC)
    except DataQualityError as failed:
        record_result(failed.result, results)
    rows = DeltaTable(results).to_pyarrow_table().sort_by("checked_at_ms").to_pylist()
    assert [(r["success"], r["failed"], r["row_count"]) for r in rows] == [(True, 0, 3), (False, 1, 0)]
    assert json.loads(rows[1]["failures"]) == [f"no Delta table at {tmp_path / 'absent'}"]
    assert DeltaTable(results).to_pyarrow_table().column_names == QUALITY_RESULTS_TABLE.column_names


def test_gate_task_records_and_returns_the_result(cfg):
    from airflow.sdk import DAG

    from focuscrawl.orchestration.quality_gate import gx_gate

    spec = TableSpec("gate_probe", "test table", SPEC.columns)
    with DAG("gate_probe_dag", schedule=None):
        gate = gx_gate(spec)()
    assert (gate.operator.task_id, gate.operator.retries) == ("quality_gate_probe", 0)
    write_deltalake(spec.path(cfg), pa.table(good_rows(), schema=spec.arrow_schema()), mode="overwrite")
    returned = gate.operator.python_callable()
    assert (returned["table_name"], returned["success"], returned["row_count"]) == ("gate_probe", True, 3)
    rows = DeltaTable(QUALITY_RESULTS_TABLE.path(cfg)).to_pyarrow_table().to_pylist()
    assert {"table_name": "gate_probe", "success": True} in [{k: r[k] for k in ("table_name", "success")} for r in rows]
