"""The one way focuscrawl reads and writes its Delta lake, from Spark and from delta-rs.

Spark jobs load and store a :class:`~focuscrawl.lake.tables.TableSpec` with :func:`read`, :func:`overwrite`
and :func:`replace_where`; code without a JVM (stream sinks, Airflow tasks, reports, maintenance, a job on a
small lake) opens tables with delta-rs: :func:`ensure_table` creates one from its spec, :func:`open_table` opens
one that may not exist yet, :func:`version`, :func:`to_pandas` and :func:`table_rows` read it,
:func:`replace_frame` replaces it, and :func:`lake_tables` finds them all on disk. Every table a writer here
creates carries its spec's description, column comments and partitioning, whichever side made it. pyspark and
deltalake are imported inside the functions: the domain package stays importable without either.

Beside that API the package holds the table specs (``tables``), storage options (``storage``), the Spark
session (``spark``), the stream processes' Delta sinks (``delta_sink``), upkeep (``maintenance``) and the
data-quality gate (``quality``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from focuscrawl.config import Settings
from focuscrawl.lake.storage import storage_options as lake_options
from focuscrawl.lake.tables import TableSpec

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)


# -- delta-rs (no JVM) ----------------------------------------------------------------------------

def is_table(uri: str, storage_options: dict[str, str] | None = None) -> bool:
    """Whether a Delta table is at ``uri`` (a consumer or job may not have created it yet)."""
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(uri, storage_options=storage_options)


def open_table(uri: str, storage_options: dict[str, str] | None = None,
               without_files: bool = False, version: int | None = None) -> "DeltaTable | None":
    """The Delta table at ``uri`` (as of ``version``: None, the latest), or ``None`` while there is none
    (readers create nothing)."""
    from deltalake import DeltaTable

    if not is_table(uri, storage_options):
        return None
    return DeltaTable(uri, version=version, storage_options=storage_options, without_files=without_files)


def ensure_table(uri: str, spec: TableSpec, storage_options: dict[str, str] | None = None) -> "DeltaTable":
    """Open the Delta table at ``uri``, creating it from ``spec`` (schema, comments) if it is missing and
    adding the nullable columns ``spec`` has and the table lacks."""
    from deltalake import DeltaTable

    _create(uri, spec, storage_options)
    table = DeltaTable(uri, storage_options=storage_options)
    if _relaxed(table, spec):
        table = _rewrite(uri, table, spec, storage_options)
    have = {f.name for f in table.schema().fields}
    added = [f for f, c in zip(spec.arrow_schema(), spec.columns) if c.name not in have and c.nullable]
    if added:  # a table made before the spec grew (e.g. the WARC columns): the new columns, null so far
        from deltalake import Field

        try:
            table.alter.add_columns([Field.from_arrow(f) for f in added])
            log.info("%s: added columns %s (null in the rows before)", spec.name, [f.name for f in added])
        except Exception:  # noqa: BLE001 - another consumer added them first: the reopened table has them
            pass
        table = DeltaTable(uri, storage_options=storage_options)
    return table


def _relaxed(table: "DeltaTable", spec: TableSpec) -> bool:
    """Whether ``spec`` lets a column be null that the table on disk requires, or partitions it otherwise:
    a table an older focuscrawl made (``dead_letter`` before it took the stream sinks' rows)."""
    required = {f.name for f in table.schema().fields if not f.nullable}
    loosened = [c.name for c in spec.columns if c.nullable and c.name in required]
    return bool(loosened) or list(table.metadata().partition_columns) != list(spec.partition_by)


def _rewrite(uri: str, table: "DeltaTable", spec: TableSpec,
             storage_options: dict[str, str] | None) -> "DeltaTable":
    """Rewrite every row of an older table under ``spec``'s schema and partitioning in one overwrite
    commit. Columns the spec dropped stay readable in the versions before it (Delta time travel), so
    nothing is lost; writers then append rows the old schema refused (a null ``parser``)."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    before = table.version()  # write_deltalake moves ``table`` on to the rewrite's version
    old = table.to_pyarrow_table()
    # a column the spec requires but old rows left null stays nullable: better than refusing those rows
    schema = pa.schema([f.with_nullable(True) if f.name in old.column_names and old[f.name].null_count else f
                        for f in spec.arrow_schema()])
    rows = pa.table({f.name: old[f.name].cast(f.type) if f.name in old.column_names else pa.nulls(len(old), f.type)
                     for f in schema}, schema=schema)
    dropped = sorted(set(old.column_names) - set(schema.names))
    write_deltalake(table, rows, mode="overwrite", schema_mode="overwrite", partition_by=list(spec.partition_by),
                    description=spec.comment, storage_options=storage_options)
    log.warning("%s at %s: rewrote %d rows of version %d under the current schema (nullable columns, partitioning "
                "%s)%s", spec.name, uri, len(rows), before, list(spec.partition_by) or "none",
                f"; columns no longer kept, still in version {before}: {dropped}" if dropped else "")
    return DeltaTable(uri, storage_options=storage_options)


def _create(uri: str, spec: TableSpec, storage_options: dict[str, str] | None) -> None:
    """Make the empty table of ``spec`` at ``uri`` unless there is one: its schema, partitioning, description
    and column comments (a Spark path write sets no description, so its tables are made here first)."""
    from deltalake import DeltaTable

    if not is_table(uri, storage_options):
        # mode="ignore": two consumers starting together both try; the loser keeps the winner's table.
        DeltaTable.create(
            uri, spec.arrow_schema(), mode="ignore", partition_by=list(spec.partition_by) or None,
            name=spec.name, description=spec.comment, storage_options=storage_options,
        )


def table_rows(uri: str, storage_options: dict[str, str] | None = None) -> int:
    """Rows in the Delta table at ``uri``; 0 before a consumer has created it."""
    table = open_table(uri, storage_options)
    return 0 if table is None else table.to_pyarrow_dataset().count_rows()


def ensure(spec: TableSpec, cfg: Settings) -> "DeltaTable":
    """:func:`ensure_table` at ``spec``'s place in the lake."""
    return ensure_table(spec.path(cfg), spec, _options(cfg))


def exists(spec: TableSpec, cfg: Settings) -> bool:
    """Whether ``spec``'s table is in the lake yet."""
    return is_table(spec.path(cfg), _options(cfg))


def version(spec: TableSpec, cfg: Settings) -> int:
    """Current Delta version of the table (the version a model trained on is recorded with)."""
    from deltalake import DeltaTable

    return int(DeltaTable(spec.path(cfg), storage_options=_options(cfg), without_files=True).version())


def size_bytes(spec: TableSpec, cfg: Settings) -> int:
    """Bytes of Parquet in the current version of ``spec``'s table (its log's add actions); 0 before it is made."""
    import pyarrow as pa

    table = open_table(spec.path(cfg), _options(cfg))
    return 0 if table is None else sum(pa.table(table.get_add_actions(flatten=True))["size_bytes"].to_pylist())


def to_pandas(spec: TableSpec, cfg: Settings, columns: list[str] | None = None, version: int | None = None):
    """The whole table as pandas (as of Delta ``version`` when given), for the data-quality gate, the driver-side
    training and the jobs that run in their own process on a small lake."""
    from deltalake import DeltaTable

    return DeltaTable(spec.path(cfg), version=version, storage_options=_options(cfg)).to_pandas(columns=columns)


def replace_frame(frame: "pd.DataFrame", spec: TableSpec, cfg: Settings) -> int:
    """Replace the table with ``frame`` from delta-rs, schema included, as :func:`overwrite` does from Spark (the
    jobs that run in their own process on a small lake, :func:`focuscrawl.lake.spark.in_process`): the columns
    ``spec`` declares keep its types and comments, the others (feature columns follow the history size) are
    typed from the frame. Returns the rows written."""
    import pyarrow as pa
    from deltalake import write_deltalake

    _create(spec.path(cfg), spec, _options(cfg))
    declared = {f.name: f for f in spec.arrow_schema()}

    def field(inferred: "pa.Field") -> "pa.Field":
        if inferred.name not in declared:
            return inferred
        # a column the spec requires but the frame leaves null somewhere is written nullable, as Spark would
        return declared[inferred.name].with_nullable(True) if frame[inferred.name].isna().any() else declared[inferred.name]

    schema = pa.schema([field(f) for f in pa.Schema.from_pandas(frame, preserve_index=False)])
    rows = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    write_deltalake(spec.path(cfg), rows, mode="overwrite", schema_mode="overwrite",
                    partition_by=list(spec.partition_by) or None, description=spec.comment,
                    storage_options=_options(cfg))
    return len(rows)


def append_frame(frame: "pd.DataFrame", spec: TableSpec, cfg: Settings) -> int:
    """Append ``frame``'s rows to the table from delta-rs, typed by ``spec``: for rows made in the driver (a few model
    versions are not worth a Spark plan). Returns the rows written."""
    import pyarrow as pa
    from deltalake import write_deltalake

    _create(spec.path(cfg), spec, _options(cfg))
    rows = pa.Table.from_pandas(frame[spec.column_names], schema=spec.arrow_schema(), preserve_index=False)
    write_deltalake(spec.path(cfg), rows, mode="append", storage_options=_options(cfg))
    return len(rows)


def replace_frame_where(frame: "pd.DataFrame", spec: TableSpec, cfg: Settings, predicate: str) -> int:
    """Replace the rows ``predicate`` (SQL) selects with ``frame``'s, typed by ``spec``, from delta-rs: what
    :func:`replace_where` does from Spark, for rows made in this process (a retried run writes the same rows once;
    the other rows stay). Returns the rows written."""
    import pyarrow as pa
    from deltalake import write_deltalake

    _create(spec.path(cfg), spec, _options(cfg))
    rows = pa.Table.from_pandas(frame[spec.column_names], schema=spec.arrow_schema(), preserve_index=False)
    write_deltalake(spec.path(cfg), rows, mode="overwrite", predicate=predicate, storage_options=_options(cfg))
    return len(rows)


def _options(cfg: Settings) -> dict[str, str] | None:
    return lake_options(cfg) or None


def lake_tables(cfg: Settings) -> dict[str, str]:
    """Delta tables under a local lake root: ``{name: location}`` (a folder with ``_delta_log``)."""
    root = Path(cfg.lake)
    if "://" in cfg.lake or not root.is_dir():
        return {}
    return {p.parent.name: str(p.parent) for p in sorted(root.glob("*/_delta_log"))}


# -- Spark ----------------------------------------------------------------------------------------

def read(spark: "SparkSession", spec: TableSpec, cfg: Settings, version: int | None = None) -> "DataFrame":
    """The table, as of Delta ``version`` when given (the version a model trains on is recorded with)."""
    reader = spark.read.format("delta")
    return (reader if version is None else reader.option("versionAsOf", int(version))).load(spec.path(cfg))


def overwrite(df: "DataFrame", spec: TableSpec, cfg: Settings) -> None:
    """Replace the table with ``df``, schema included (feature columns follow the history size)."""
    _create(spec.path(cfg), spec, _options(cfg))
    _writer(df, spec, "overwrite").option("overwriteSchema", "true").save(spec.path(cfg))


def replace_where(df: "DataFrame", spec: TableSpec, cfg: Settings, predicate: str) -> None:
    """Replace the rows ``predicate`` (SQL) selects with ``df``, whose rows must all match it: a retried
    run writes the same rows once, and the other rows stay. The table is made from the spec first, so
    it exists (empty) even when nothing matched."""
    ensure(spec, cfg)
    _writer(df, spec, "overwrite").option("replaceWhere", predicate).save(spec.path(cfg))


def _writer(df: "DataFrame", spec: TableSpec, mode: str):
    writer = _commented(df, spec).write.format("delta").mode(mode)
    return writer.partitionBy(*spec.partition_by) if spec.partition_by else writer


def _commented(df: "DataFrame", spec: TableSpec) -> "DataFrame":
    """``df`` with each column ``spec`` declares carrying its comment (Delta keeps it as the column comment).

    Text columns are cast to plain ``string``: through Spark Connect, the output of a Python function
    (``mapInPandas``, ``applyInPandas``) is typed ``string collate UTF8_BINARY``, which Delta writes into
    the table's schema as such and delta-rs (the stream side's reader) refuses as an unknown type."""
    from pyspark.sql import functions as F

    comments = {c.name: c.comment for c in spec.columns}
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}

    def column(c: str):
        col = F.col(c).cast(types[c]) if "string" in types[c] else F.col(c)
        return col.alias(c, metadata={"comment": comments[c]}) if c in comments else col

    return df.select([column(c) for c in df.columns])
