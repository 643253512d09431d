"""`focuscrawl sql` answers by table name over a real Delta table (written without a JVM)."""

from __future__ import annotations

import uuid

import pytest

from focuscrawl.cli.main import run_sql
from focuscrawl.lake.spark import register_tables

pytestmark = pytest.mark.integration


def test_sql_prints_a_registered_delta_table(cfg, spark):
    import pyarrow as pa
    from deltalake import write_deltalake

    name = f"svc_probe_{uuid.uuid4().hex[:8]}"
    write_deltalake(cfg.table_path(name), pa.table({"host": ["a.test", "b.test", "a.test"], "n": [1, 2, 3]}))
    assert f"{cfg.catalog_db}.{name}" in register_tables(spark, cfg)
    out = run_sql(spark, f"SELECT host, sum(n) AS n FROM {cfg.catalog_db}.{name} GROUP BY host ORDER BY host", 10)
    assert out == (
        "+--------+---+\n"
        "| host   | n |\n"
        "+--------+---+\n"
        "| a.test | 4 |\n"
        "| b.test | 2 |\n"
        "+--------+---+\n"
        "(2 rows)"
    )
    assert run_sql(spark, f"SELECT n FROM {cfg.catalog_db}.{name} ORDER BY n", 2).endswith("| 2 |\n+---+\n(first 2 rows shown)")


def test_a_job_session_names_no_table_and_the_sql_shell_names_every_one(cfg, spark):
    """Jobs read by path: naming every table reads every Delta log (10 s of a cold driver), so only `focuscrawl sql` does."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from focuscrawl.lake.spark import get_session

    name = f"svc_named_{uuid.uuid4().hex[:8]}"
    write_deltalake(cfg.table_path(name), pa.table({"n": [1]}))

    def named() -> set[str]:
        return {t.name for t in spark.catalog.listTables(cfg.catalog_db)} if spark.catalog.databaseExists(cfg.catalog_db) else set()

    assert get_session(cfg=cfg) is spark and name not in named()
    assert get_session(cfg=cfg, catalog=True) is spark and name in named()
