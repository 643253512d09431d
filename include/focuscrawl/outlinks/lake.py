"""Reading and writing the seed-002 Delta tables from Spark jobs and Airflow tasks (pyspark and
deltalake imported lazily)."""

from __future__ import annotations

from focuscrawl.config import Settings
from focuscrawl.tables import TableSpec


def read(spark, spec: TableSpec, cfg: Settings):
    return spark.read.format("delta").load(spec.path(cfg))


def write(df, spec: TableSpec, cfg: Settings, mode: str = "overwrite") -> None:
    """Write ``df`` to the table; an overwrite replaces the schema too (feature columns follow the history size)."""
    writer = df.write.format("delta").mode(mode).option("description", spec.comment)
    if spec.partition_by:
        writer = writer.partitionBy(*spec.partition_by)
    if mode == "overwrite":
        writer = writer.option("overwriteSchema", "true")
    writer.save(spec.path(cfg))


def version(spec: TableSpec, cfg: Settings) -> int:
    """Current Delta version of the table (delta-rs: no JVM needed)."""
    from deltalake import DeltaTable

    return int(DeltaTable(spec.path(cfg)).version())


def to_pandas(spec: TableSpec, cfg: Settings):
    """The whole table as pandas (delta-rs), for the data-quality gate and the driver-side training."""
    from deltalake import DeltaTable

    return DeltaTable(spec.path(cfg)).to_pandas()
