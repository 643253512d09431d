"""Issue 10, point 4: Airflow on PostgreSQL (the compose file's deployment) instead of the embedded SQLite.

A throw-away PostgreSQL cluster (Debian's ``postgresql`` package: ``initdb`` in a temporary folder, on
loopback and a free port, password login) holds Airflow's metadata: ``airflow db migrate`` builds the
schema there, the scheduler's LocalExecutor runs a DAG, and the run's rows are read back from PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from focuscrawl.services.airflow import AirflowService

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

DAGS = Path(__file__).resolve().parents[1] / "services" / "dags_fixture"


def pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb") or ""]
    if not found[-1]:
        pytest.skip("PostgreSQL server binaries not installed (`make sysdeps` installs Debian's postgresql)")
    return Path(found[-1]).parent


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def as_owner(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root (CI), run it as the package's ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="module")
def postgres(cfg):
    """``postgresql+psycopg2://`` URL of a fresh database ``airflow`` on a private PostgreSQL cluster."""
    import psycopg2

    # Not under pytest's tmp folder: that one is private to root, and the server runs as ``postgres``.
    bindir, root = pg_bin(), Path(tempfile.mkdtemp(prefix="fc-postgres-"))
    data, password = root / "data", secrets.token_urlsafe(16)
    (root / "pw").write_text(password + "\n")
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for p in (root, root / "pw"):
            os.chown(p, user.pw_uid, user.pw_gid)
    subprocess.run(as_owner([str(bindir / "initdb"), "-D", str(data), "-U", "airflow", "--pwfile", str(root / "pw"),
                             "--auth=scram-sha-256", "-E", "UTF8"]), check=True, capture_output=True, timeout=180)
    port = free_port(cfg.bind_host)
    options = f"-c listen_addresses={cfg.bind_host} -p {port} -k {root}"
    subprocess.run(as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "postgres.log"),
                             "-w", "-t", "120", "start"]), check=True, capture_output=True, timeout=180)
    try:
        admin = psycopg2.connect(host=cfg.bind_host, port=port, user="airflow", password=password, dbname="postgres")
        admin.autocommit = True
        admin.cursor().execute("CREATE DATABASE airflow")
        admin.close()
        yield f"postgresql+psycopg2://airflow:{password}@{cfg.bind_host}:{port}/airflow"
    finally:
        subprocess.run(as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                       capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


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
