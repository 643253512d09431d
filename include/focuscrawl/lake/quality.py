"""Data-quality gate on any Delta table, its Great Expectations suite derived from its :class:`TableSpec`.

The suite is built in code from the spec, so it can never drift from the table's
declaration: every column exists and holds values of the declared type, required
(``nullable=False``) columns have no nulls, a column that declares ``bounds`` (e.g.
:data:`~focuscrawl.lake.tables.UNIT_INTERVAL`) stays within them, and the key columns are unique together (the Kafka lineage ``(topic, partition, offset)`` when the
table has it, or the ``keys`` given). :func:`validate_table` reads the table with delta-rs into a
pandas batch of GX's ephemeral context and raises :class:`DataQualityError` naming every failed
expectation. :func:`gate` logs the summary and appends it to the ``quality_results`` Delta table;
:func:`focuscrawl.orchestration.quality_gate.gx_gate` runs it as an Airflow task that returns it as
its XCom and fails when the table fails, so downstream tasks (a Spark job) never read a broken table.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Sequence

import pyarrow as pa

from focuscrawl.lake.tables import Column, TableSpec, table

log = logging.getLogger(__name__)

QUALITY_RESULTS_TABLE = table(
    "quality_results",
    "One row per data-quality check of a Delta table by its spec-derived Great Expectations suite.",
    [
        Column("table_name", pa.string(), "name of the checked table", nullable=False),
        Column("table_path", pa.string(), "location of the checked table", nullable=False),
        Column("table_version", pa.int64(), "Delta version that was checked"),
        Column("checked_at_ms", pa.int64(), "when the check ran, Unix epoch milliseconds", nullable=False),
        Column("success", pa.bool_(), "every expectation held", nullable=False),
        Column("row_count", pa.int64(), "rows in the checked version", nullable=False),
        Column("evaluated", pa.int64(), "expectations evaluated", nullable=False),
        Column("failed", pa.int64(), "expectations that failed", nullable=False),
        Column("failures", pa.string(), "JSON list of the failed expectations, with sample values", nullable=False),
    ],
    layer="gold",
)

LINEAGE_KEY = ("kafka_topic", "kafka_partition", "kafka_offset")


class DataQualityError(ValueError):
    def __init__(self, result: "QualityResult") -> None:
        super().__init__(result.message())
        self.result = result


@dataclass
class QualityResult:
    table_name: str
    table_path: str
    table_version: int | None
    success: bool
    row_count: int
    evaluated: int
    failures: list[str] = field(default_factory=list)
    checked_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def message(self) -> str:
        if self.success:
            return f"{self.table_name}: {self.evaluated} expectations passed on {self.row_count} rows"
        return (f"{self.table_name} failed {len(self.failures)} of {self.evaluated} expectation(s): "
                + "; ".join(self.failures))

    def to_dict(self) -> dict:
        return asdict(self)


def python_type_name(arrow_type: pa.DataType) -> str | None:
    """The Python type GX observes in a pandas column of ``arrow_type`` read with ``pd.ArrowDtype``;
    None for types it has no single name for (lists, structs), whose type is then not checked."""
    t = pa.types
    for test, name in ((t.is_boolean, "bool"), (t.is_integer, "int"), (t.is_floating, "float"),
                       (t.is_string, "str"), (t.is_large_string, "str"), (t.is_binary, "bytes"),
                       (t.is_timestamp, "datetime"), (t.is_date, "date")):
        if test(arrow_type):
            return name
    return None


def expectations_for(spec: TableSpec, keys: Sequence[str] = ()) -> list:
    """The suite of ``spec``: existence, type, not-null if required, range if the column declares ``bounds``, key uniqueness."""
    import great_expectations as gx

    e = gx.expectations
    checks = []
    for c in spec.columns:
        checks.append(e.ExpectColumnToExist(column=c.name))
        type_name = python_type_name(c.type)
        if type_name:
            checks.append(e.ExpectColumnValuesToBeOfType(column=c.name, type_=type_name))
        if not c.nullable:
            checks.append(e.ExpectColumnValuesToNotBeNull(column=c.name))
        if c.bounds is not None:
            checks.append(e.ExpectColumnValuesToBeBetween(column=c.name, min_value=c.bounds[0], max_value=c.bounds[1]))
    key = list(keys) or [k for k in LINEAGE_KEY if k in spec.column_names]
    if key and (keys or len(key) == len(LINEAGE_KEY)):
        checks.append(e.ExpectCompoundColumnsToBeUnique(column_list=key))
    return checks


def _describe(r) -> str:
    cfg = r.expectation_config
    args = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
    res = r.result or {}
    if "unexpected_count" in res:
        detail = f"{res['unexpected_count']} rows, e.g. {res.get('partial_unexpected_list', [])[:3]}"
    elif "observed_value" in res:
        detail = f"observed {res['observed_value']!r}"
    else:
        detail = "not met"
    return f"{cfg.type}({', '.join(f'{k}={v!r}' for k, v in args.items())}): {detail}"


def _fix(spec: TableSpec, r) -> str:
    """The repair of a failure, where one is safe: repeated keys are removed by ``focuscrawl dedup``."""
    cfg = r.expectation_config
    if cfg.type != "expect_compound_columns_to_be_unique":
        return ""
    key = ",".join(cfg.kwargs["column_list"])
    return (f"; fix: stop the writers (`focuscrawl down`), then `focuscrawl dedup {spec.name} --key {key}` "
            f"keeps one row per key")


def validate_table(table_path: str, spec: TableSpec, keys: Sequence[str] = (),
                   storage_options: dict[str, str] | None = None) -> QualityResult:
    """Check the current version of the Delta table at ``table_path`` against ``spec``'s suite.

    Returns the :class:`QualityResult` when every expectation holds; raises
    :class:`DataQualityError` (carrying the result) naming each failed one otherwise.
    An empty table passes: no row breaks a rule. A missing table fails.
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import pandas as pd
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        dt = DeltaTable(table_path, storage_options=storage_options)
    except TableNotFoundError:
        raise DataQualityError(QualityResult(spec.name, table_path, None, False, 0, 0,
                                             [f"no Delta table at {table_path}"])) from None
    # ArrowDtype keeps nulls in integer columns as nulls (not floats), so types are checked as written.
    frame = dt.to_pyarrow_table().to_pandas(types_mapper=pd.ArrowDtype)

    import great_expectations as gx

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False}  # the task log gets the summary, not bars
    batch = (context.data_sources.add_pandas(spec.name).add_dataframe_asset(spec.name)
             .add_batch_definition_whole_dataframe(spec.name).get_batch(batch_parameters={"dataframe": frame}))
    suite = gx.ExpectationSuite(name=spec.name, expectations=expectations_for(spec, keys))
    outcome = batch.validate(suite, result_format="SUMMARY")
    failures = [_describe(r) + _fix(spec, r) for r in outcome.results if not r.success]
    result = QualityResult(spec.name, table_path, dt.version(), not failures, len(frame),
                           len(outcome.results), failures)
    if failures:
        raise DataQualityError(result)
    return result


def record_result(result: QualityResult, results_path: str, storage_options: dict[str, str] | None = None) -> None:
    """Append ``result`` to the ``quality_results`` Delta table at ``results_path``."""
    from deltalake import write_deltalake

    row = {**result.to_dict(), "failed": len(result.failures), "failures": json.dumps(result.failures)}
    batch = pa.Table.from_pylist([row], schema=QUALITY_RESULTS_TABLE.arrow_schema())
    write_deltalake(results_path, batch, mode="append", storage_options=storage_options,
                    description=QUALITY_RESULTS_TABLE.comment)


def gate(spec: TableSpec, keys: Sequence[str] = (), cfg=None) -> QualityResult:
    """Validate ``spec``'s table in the lake and append the outcome to ``quality_results`` either way; the
    passing result, or :class:`DataQualityError` (``focuscrawl.orchestration.quality_gate`` runs it as a task)."""
    from focuscrawl.config import settings
    from focuscrawl.lake.storage import storage_options

    cfg = cfg or settings()
    options = storage_options(cfg) or None
    try:
        result = validate_table(spec.path(cfg), spec, keys, options)
    except DataQualityError as failed:
        record_result(failed.result, QUALITY_RESULTS_TABLE.path(cfg), options)
        log.error("data quality: %s", failed.result.message())
        raise
    record_result(result, QUALITY_RESULTS_TABLE.path(cfg), options)
    log.info("data quality: %s", result.message())
    return result
