"""Issue 10, point 4: Airflow on PostgreSQL (the compose file's deployment) instead of the embedded SQLite.

A throw-away PostgreSQL cluster (Debian's ``postgresql`` package: ``initdb`` in a temporary folder, on
loopback and a free port, password login) holds Airflow's metadata: ``airflow db migrate`` builds the
schema there, the scheduler's LocalExecutor runs a DAG, and the run's rows are read back from PostgreSQL.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from focuscrawl.services.airflow import AirflowService
from helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

DAGS = Path(__file__).resolve().parents[1] / "services" / "dags_fixture"



@pytest.fixture(scope="module")
def postgres(postgres_cluster):
    """``postgresql+psycopg2://`` URL of a fresh database ``airflow`` on the throw-away cluster (conftest.py)."""
    return postgres_cluster.database("airflow")


def test_airflow_migrates_and_runs_a_dag_on_postgresql(cfg, postgres, tmp_path):
    import psycopg2

    own = dataclasses.replace(cfg, var_dir=tmp_path / "var", airflow_port=free_port(cfg.bind_host), airflow_db=postgres)
    service = AirflowService(own, dags_folder=DAGS)
    try:
        service.start(timeout=400)
        client = service.client()
        client.unpause("fc_smoke")
        run_id = client.trigger("fc_smoke", conf={"marker": "on-postgres"})
        state = client.wait("fc_smoke", run_id, timeout=400)
        log = client.task_log("fc_smoke", run_id, "environment")
    finally:
        service.stop()
    assert state == "success", log
    assert "conf.marker=on-postgres" in log
    assert not (service.home / "airflow.db").exists()  # nothing fell back to SQLite

    with psycopg2.connect(postgres.replace("postgresql+psycopg2", "postgresql")) as db, db.cursor() as cur:
        cur.execute("SELECT version_num FROM alembic_version")
        assert len(cur.fetchall()) == 1  # `airflow db migrate` built the schema here
        cur.execute("SELECT state FROM dag_run WHERE dag_id = 'fc_smoke' AND run_id = %s", (run_id,))
        assert cur.fetchall() == [("success",)]
        cur.execute("SELECT task_id, state FROM task_instance WHERE dag_id = 'fc_smoke' AND run_id = %s", (run_id,))
        assert cur.fetchall() == [("environment", "success")]
