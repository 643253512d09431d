"""docker-compose.yml is a valid Compose file for the scale-out layout (validated, not run: no engine here)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import CHILD_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"POSTGRES_PASSWORD": "p", "AIRFLOW_PASSWORD": "a", "AIRFLOW_JWT_SECRET": "j", "AIRFLOW_SECRET_KEY": "k",
           "MLFLOW_PASSWORD": "m"}


def _compose_client() -> list[str] | None:
    """`docker compose` (v2 plugin) or `docker-compose` (v1, Debian's package), whichever works."""
    candidates = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    if shutil.which("docker-compose"):
        candidates.append(["docker-compose"])
    for cmd in candidates:
        if subprocess.run([*cmd, "version"], capture_output=True, timeout=CHILD_TIMEOUT).returncode == 0:
            return cmd
    return None


@pytest.fixture(scope="module")
def compose():
    cmd = _compose_client()
    if cmd is None:
        pytest.skip("no working compose client (`make sysdeps` installs docker-compose)")
    return cmd


def _config(compose, env, *args):
    return subprocess.run([*compose, "-f", str(ROOT / "docker-compose.yml"), "config", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT)


def test_compose_file_is_valid(compose):
    import os

    out = _config(compose, {**os.environ, **SECRETS}, "-q")
    assert out.returncode == 0, out.stderr
    services = _config(compose, {**os.environ, **SECRETS}, "--services").stdout.split()
    assert sorted(services) == sorted([
        "kafka", "spark-master", "spark-worker-1", "spark-worker-2", "postgres", "airflow-init",
        "airflow-api-server", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer",
        "world", "crawler", "consumer", "prometheus", "mlflow",
    ])


def test_prometheus_scrapes_every_service_that_serves_metrics(compose):
    """Each service started with --metrics-port is a DNS name Prometheus resolves, on that port; the
    configuration passes Prometheus's own check when promtool is installed (`make sysdeps`)."""
    import os

    import yaml

    config = yaml.safe_load(_config(compose, {**os.environ, **SECRETS}).stdout)
    serving = {name: svc["command"] for name, svc in config["services"].items()
               if "--metrics-port" in str(svc.get("command", ""))}
    prom = yaml.safe_load((ROOT / "prometheus" / "prometheus.yml").read_text())
    sd = prom["scrape_configs"][0]["dns_sd_configs"][0]
    assert sorted(sd["names"]) == sorted(serving)
    for command in serving.values():
        words = command.split() if isinstance(command, str) else command
        assert words[words.index("--metrics-port") + 1] == str(sd["port"])
    assert any("prometheus/prometheus.yml" in str(v) for v in config["services"]["prometheus"]["volumes"])
    if shutil.which("promtool"):
        out = subprocess.run(["promtool", "check", "config", str(ROOT / "prometheus" / "prometheus.yml")],
                             capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        assert out.returncode == 0, out.stdout + out.stderr


def test_secrets_must_come_from_the_environment(compose):
    import os

    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    out = _config(compose, env, "-q")
    assert out.returncode != 0
    assert any(name in out.stderr for name in SECRETS), out.stderr


def test_published_ports_are_loopback_only():
    import yaml

    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    ports = [p for svc in doc["services"].values() for p in svc.get("ports", [])]
    assert ports and all(str(p).startswith("127.0.0.1:") for p in ports)


def test_the_model_registry_runs_on_its_own_postgresql_database_and_every_client_reaches_it(compose):
    """MLflow (issue 34) in the scale-out layout: ``focuscrawl services serve mlflow`` on PostgreSQL's database
    ``mlflow``, which the init script creates; every focuscrawl container is told its URL and login, and its
    password is a secret of the environment like the others."""
    import os
    import re

    import yaml

    config = yaml.safe_load(_config(compose, {**os.environ, **SECRETS}).stdout)
    services = config["services"]
    mlflow = services["mlflow"]
    command = mlflow["command"] if isinstance(mlflow["command"], str) else " ".join(mlflow["command"])
    assert command == "focuscrawl services serve mlflow"
    database = mlflow["environment"]["FOCUSCRAWL_MLFLOW_DB"]
    assert re.fullmatch(r"postgresql\+psycopg2://airflow:p@postgres:5432/mlflow", database), database
    init = (ROOT / "postgres" / "init-mlflow.sql").read_text()
    assert "CREATE DATABASE mlflow;" in init
    assert any("init-mlflow.sql:/docker-entrypoint-initdb.d/" in str(v) for v in services["postgres"]["volumes"])
    assert mlflow["depends_on"]["postgres"]["condition"] == "service_healthy"
    port = mlflow["environment"]["FOCUSCRAWL_MLFLOW_PORT"]
    for name in ("airflow-scheduler", "airflow-api-server", "mlflow"):
        env = services[name]["environment"]
        assert env["FOCUSCRAWL_MLFLOW_URL"] == f"http://mlflow:{port}" and env["FOCUSCRAWL_MLFLOW_PASSWORD"] == "m"
    out = _config(compose, {k: v for k, v in {**os.environ, **SECRETS}.items() if k != "MLFLOW_PASSWORD"}, "-q")
    assert out.returncode != 0 and "MLFLOW_PASSWORD" in out.stderr
