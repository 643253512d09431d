"""The one place Spark sessions are made: Delta-enabled, jars from the local folder, master from settings.

Spark jobs, the ``focuscrawl sql`` shell and the tests all call :func:`get_session`, so the same
code runs under ``spark-submit``, Airflow and pytest, on ``local[*]`` or on any master URL, and, with
pyspark's own ``SPARK_REMOTE`` set (``sc://...``, as the DAGs' tasks do), as a client of the warm Spark
(``focuscrawl.services.spark_connect``). pyspark is imported lazily: the domain package stays importable
without a JVM.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from focuscrawl.config import Settings, settings
from focuscrawl import lake
from focuscrawl.lake import lake_tables
from focuscrawl.lake.storage import s3a_conf
from focuscrawl.lake.tables import TableSpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


class MissingJarsError(RuntimeError):
    pass


# The exit status of a job whose input is not ready yet (e.g. no labelled period to train on): nothing failed,
# so the DAG's task is skipped, not retried (Airflow's BashOperator gives 99 the same meaning), and the next
# run of its asset tries again. `focuscrawl.orchestration.spark_task` reads it.
NOTHING_TO_DO = 99


def spark_jars(cfg: Settings) -> list[str]:
    jars = sorted(str(p) for p in Path(cfg.spark_jars).glob("*.jar"))
    if not any("delta-spark" in j for j in jars):
        raise MissingJarsError(
            f"no Delta jars in {cfg.spark_jars}; run `make jars` (mvn fetches them from jvm/spark/pom.xml)"
        )
    return jars


def session_conf(cfg: Settings, master: str | None = None) -> dict[str, str]:
    """The Spark configuration every focuscrawl session uses (also passed to spark-submit)."""
    warehouse = Path(cfg.var_dir) / "spark-warehouse"
    conf = {
        "spark.master": master or cfg.spark_master,
        "spark.jars": ",".join(spark_jars(cfg)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(warehouse),
        # No shared metastore (embedded Derby admits one JVM at a time): the catalog is
        # rebuilt from the lake's layout at session start, see register_tables().
        "spark.sql.catalogImplementation": "in-memory",
        "spark.driver.memory": cfg.spark_driver_memory,
        "spark.driver.host": cfg.bind_host,
        "spark.driver.bindAddress": cfg.bind_host,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "8",
        # Delta's log replay defaults to 50 partitions: far too many for small tables on few cores.
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # Python workers (UDFs, mapInPandas) run this interpreter: the one that has focuscrawl.
        "spark.pyspark.python": sys.executable,
    }
    conf.update(s3a_conf(cfg))  # empty unless the lake is on object storage
    return conf


def submit_env() -> dict[str, str]:
    """Environment for ``spark-submit`` from pip's pyspark: its SPARK_HOME, this interpreter, the venv first on PATH."""
    from focuscrawl.core.interpreter import path_with_venv, spark_home

    return {"SPARK_HOME": spark_home(), "PYSPARK_PYTHON": sys.executable, "PATH": path_with_venv()}


# How a DAG's task joins the warm Spark when one of its jobs first asks for a session
# (focuscrawl.orchestration.spark_task): a task whose steps all run in process never joins, so it needs no server.
_join_warm_spark: ContextVar[Callable[[], "SparkSession"] | None] = ContextVar("focuscrawl_join_warm_spark",
                                                                                default=None)


@contextmanager
def joined_on_first_session(join: Callable[[], "SparkSession"]) -> Iterator[None]:
    """Within the block, :func:`get_session` (with no ``master``) returns ``join()``: the caller joins once and
    returns the same session after."""
    token = _join_warm_spark.set(join)
    try:
        yield
    finally:
        _join_warm_spark.reset(token)


def get_session(app_name: str = "focuscrawl", master: str | None = None, cfg: Settings | None = None,
                catalog: bool = False) -> "SparkSession":
    """A Delta-enabled session (``getOrCreate``: one per process, shared by callers).

    ``catalog`` names every lake table as ``focuscrawl.x`` (:func:`register_tables`), for SQL
    typed by people. Jobs read and write by path and skip it: it reads every table's Delta log,
    10 s of a cold driver's first 17 s with 17 tables (2026-12-01), on each of a DAG's Spark tasks.
    """
    from pyspark.sql import SparkSession

    cfg = cfg or settings()
    remote, join = os.environ.get("SPARK_REMOTE"), _join_warm_spark.get()
    if (remote or join) and master is None:
        # A client of a running server: its conf (Delta, jars, master) is the server's, set where it started.
        spark = join() if join else SparkSession.builder.remote(remote).getOrCreate()
        if catalog:
            register_tables(spark, cfg)
        return spark
    # A driver started from Python (not spark-submit) takes its workers' interpreter from
    # PYSPARK_PYTHON, not from spark.pyspark.python: workers need the one that has focuscrawl.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    for key, value in session_conf(cfg, master).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if catalog:
        register_tables(spark, cfg)
    return spark


# What a job that ran in its own process adds to the line it prints.
IN_PROCESS = " (in this process, on pandas: a small lake, focuscrawl.lake.spark.in_process)"


def in_process(spec: TableSpec, cfg: Settings) -> bool:
    """Whether a job on ``spec``'s table runs on pandas in its own process rather than on Spark: only as a client of
    the warm Spark (``SPARK_REMOTE`` set, as in a DAG's task; ``spark-submit`` to a cluster stays on it) and only
    while the table's current version is at most ``cfg.spark_in_process_mib`` MiB of Parquet
    (``FOCUSCRAWL_SPARK_IN_PROCESS_MIB``, 64; 0: never), what the task then holds in memory, a few times over once
    decoded. On a small lake a Spark plan costs far more than the work (``focuscrawl.outlinks.frame_transforms``).
    Bytes, not rows: the world's ``page_snapshots`` held 3,057 pages in 12.7 MiB, its ``page_clicks`` 105,101
    counts in 4.1 MiB (the loaded freshness run of 9b1c0aa, after 25 minutes)."""
    if not os.environ.get("SPARK_REMOTE") or cfg.spark_in_process_mib <= 0:
        return False
    return lake.size_bytes(spec, cfg) <= cfg.spark_in_process_mib * 2**20


def parallelism(spark: "SparkSession") -> int:
    """How many tasks to split a small computation into: the driver's default parallelism (a Spark
    Connect client has no SparkContext: the server's ``spark.default.parallelism``, else this host's cores)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    if isinstance(spark, ConnectSession):
        return int(spark.conf.get("spark.default.parallelism", None) or os.cpu_count() or 1)
    return spark.sparkContext.defaultParallelism


def register_tables(spark: "SparkSession", cfg: Settings, names: dict[str, str] | None = None) -> list[str]:
    """Name every Delta table of the lake in the ``focuscrawl`` database, so SQL says ``focuscrawl.x``.

    Table and column comments live in the Delta log itself, so DESCRIBE shows them wherever
    the table is registered.
    """
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {cfg.catalog_db} COMMENT 'focuscrawl Delta tables'")
    registered = []
    for name, location in (names if names is not None else lake_tables(cfg)).items():
        spark.sql(f"CREATE TABLE IF NOT EXISTS {cfg.catalog_db}.{name} USING DELTA LOCATION '{location}'")
        registered.append(f"{cfg.catalog_db}.{name}")
    return registered
