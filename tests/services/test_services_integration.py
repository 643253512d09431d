"""`focuscrawl services up` then `down`, for real: Kafka, the warm Spark, MLflow, Airflow (+ the world once it exists).

One start for the whole module (Airflow takes a minute or more here): login is required, a
test-only DAG runs to success and its task saw our settings, `status` probes each service for real
(up while it serves, down after a SIGKILL, with the fix), and `down` leaves no process of
ours. The tests run in file order; the last one stops everything.

Airflow's metadata is on a throw-away PostgreSQL (``FOCUSCRAWL_AIRFLOW_DB``, the scale-out layout's database; issue 10,
point 4): ``services up`` migrates the schema there and the DAG run's rows are read back from it. The rest of the
suite's Airflows (the session's, the live platform's) keep the embedded SQLite, the default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from focuscrawl.config import settings
from focuscrawl.services.airflow import AirflowClient, AirflowError, AirflowService
from focuscrawl.services.kafka import KafkaBroker
from focuscrawl.services.manager import world_available
from focuscrawl.services.process import group_members

pytestmark = pytest.mark.integration

DAGS = Path(__file__).parent / "dags_fixture"
FOCUSCRAWL = [sys.executable, "-m", "focuscrawl.cli.main"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory, postgres_cluster):
    """Our own var folder and ports (offset + 50) so the shared broker fixture is untouched."""
    env = dict(os.environ)
    env["FOCUSCRAWL_VAR"] = str(tmp_path_factory.mktemp("services-var"))
    env["FOCUSCRAWL_PORT_OFFSET"] = str(int(os.environ.get("FOCUSCRAWL_PORT_OFFSET", "0")) + 50)
    env["FOCUSCRAWL_AIRFLOW_DB"] = postgres_cluster.database("airflow")
    env.pop("FOCUSCRAWL_AIRFLOW_PASSWORD", None)
    old = dict(os.environ)
    os.environ.update(env)
    cfg = settings()
    started = time.monotonic()
    up = subprocess.run([*FOCUSCRAWL, "services", "up", "--airflow-dags", str(DAGS)], env=env,
                        capture_output=True, text=True, timeout=900)
    took = time.monotonic() - started
    print(f"\n`services up` took {took:.1f}s:\n{up.stdout}")
    pgids = {int(p.read_text()) for p in (cfg.var_dir / "run").glob("*.pid")}
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield {"cfg": cfg, "env": env, "up": up.stdout + up.stderr, "pgids": pgids, "postgres": postgres_cluster}
    finally:
        subprocess.run([*FOCUSCRAWL, "services", "down"], env=env, timeout=300)
        os.environ.clear()
        os.environ.update(old)


def test_status_reports_each_service_up(stack):
    cfg = stack["cfg"]
    out = subprocess.run([*FOCUSCRAWL, "services", "status"], env=stack["env"], capture_output=True, text=True,
                         timeout=120).stdout
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert lines["kafka"].split()[1:3] == ["up", cfg.kafka_bootstrap]
    assert lines["airflow"].split()[1:3] == ["up", cfg.airflow_url]
    assert f"login: {cfg.airflow_user}, password in {cfg.var_dir / 'airflow' / 'passwords.json'}" in lines["airflow"]
    assert lines["world"].split()[1] == ("up" if world_available() else "down")
    assert lines["spark-connect"].split()[1:3] == ["up", f"sc://localhost:{cfg.spark_connect_port}"]
    assert lines["mlflow"].split()[1:3] == ["up", cfg.mlflow_url]
    assert f"login: {cfg.mlflow_user}, password in {cfg.var_dir / 'mlflow' / 'passwords.json'}" in lines["mlflow"]
    assert lines["spark"].split()[1] == "down"


def test_airflow_requires_login(stack):
    cfg = stack["cfg"]
    assert requests.get(f"{cfg.airflow_url}/api/v2/dags", timeout=10).status_code == 401
    with pytest.raises(AirflowError, match="refused \\(401\\)"):
        AirflowClient(cfg.airflow_url, cfg.airflow_user, "not-the-password").token()
    client = AirflowService(cfg).client()
    r = requests.get(f"{cfg.airflow_url}/api/v2/dags", headers={"Authorization": f"Bearer {client.token()}"},
                     timeout=10)
    assert r.status_code == 200


def test_dag_run_succeeds_and_task_sees_our_settings(stack):
    cfg = stack["cfg"]
    client = AirflowService(cfg).client()
    assert [d["dag_id"] for d in client.dags()] == ["fc_smoke"]  # reserialized before `up` returned
    assert client.queued_asset_events("fc_smoke") == []  # the call the asset-events process's release_held makes
    # `up` asked the task execution API once, so it built its routers before any task's start needed them
    log_file = AirflowService(cfg).processes["api-server"].log_file
    first = [line for line in log_file.read_text().splitlines() if "path=/execution/" in line]
    assert first and "method=GET path=/execution/health" in first[0] and "status_code=200" in first[0], first[:1]
    client.unpause("fc_smoke")
    run_id = client.trigger("fc_smoke", conf={"marker": "m-42"})
    started = time.monotonic()
    seen = []
    state = client.wait("fc_smoke", run_id, timeout=600, progress=lambda s, tasks: seen.append((s, tasks)))
    print(f"\nfc_smoke run: {state} in {time.monotonic() - started:.1f}s; states seen {seen}")
    assert state == "success"
    assert client.task_states("fc_smoke", run_id) == {"environment": "success"}
    log = client.task_log("fc_smoke", run_id, "environment")
    assert f"FOCUSCRAWL_VAR={cfg.var_dir}" in log
    assert f"spark-submit={Path(sys.executable).parent / 'spark-submit'}" in log
    assert f"spark_connect_default=localhost:{cfg.spark_connect_port}" in log
    assert "conf.marker=m-42" in log
    # on PostgreSQL: `services up` built the schema there, the run's rows are there, nothing fell back to SQLite
    assert not (AirflowService(cfg).home / "airflow.db").exists()
    from postgres import connect

    with connect(cfg.airflow_db) as db, db.cursor() as cur:
        cur.execute("SELECT version_num FROM alembic_version")
        assert len(cur.fetchall()) == 1
        cur.execute("SELECT state FROM dag_run WHERE dag_id = 'fc_smoke' AND run_id = %s", (run_id,))
        assert cur.fetchall() == [("success",)]
        cur.execute("SELECT task_id, state FROM task_instance WHERE dag_id = 'fc_smoke' AND run_id = %s", (run_id,))
        assert cur.fetchall() == [("environment", "success")]


@pytest.mark.skipif(not world_available(), reason="focuscrawl.world not installed yet")
def test_nothing_listens_beyond_localhost(stack):
    """Every socket the stack's processes listen on is a loopback one (Airflow's `serve-logs`, which
    binds all interfaces, is not started: focuscrawl.services.airflow.SERVE_LOGS_OFF)."""
    import psutil

    def group(pid):
        try:
            return os.getpgid(pid)
        except OSError:
            return None

    listening = [(c.laddr.ip, c.laddr.port) for c in psutil.net_connections("inet")
                 if c.status == psutil.CONN_LISTEN and c.pid and group(c.pid) in stack["pgids"]]
    assert listening, "no listening socket found for the stack's process groups"
    assert all(ip in ("127.0.0.1", "::1", "::ffff:127.0.0.1") for ip, _ in listening), listening


def test_world_answers(stack):
    assert requests.get(f"{stack['cfg'].world_url}/robots.txt", timeout=10).status_code == 200


def platform_status(stack) -> tuple[dict, str, float]:
    """``focuscrawl status --json`` and ``focuscrawl status``, as a user runs them; with the slower one's seconds."""
    took, outs = [], []
    for flags in (["--json"], []):
        started = time.monotonic()
        done = subprocess.run([*FOCUSCRAWL, "status", *flags], env=stack["env"], capture_output=True, text=True,
                              timeout=120)
        took.append(time.monotonic() - started)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    return json.loads(outs[0]), outs[1], max(took)


def test_status_probes_each_service_for_real(stack):
    """`focuscrawl status` shows what each service's own protocol answered: the broker's metadata, Airflow's health
    endpoint with every component's heartbeat, a Spark Connect RPC (its version), the world's HTTP."""
    doc, text, took = platform_status(stack)
    svc = doc["services"]
    print(f"\nstatus took {took:.1f}s:\n{text}")
    assert svc["kafka"]["up"] and svc["kafka"]["detail"] == "1 broker, controller 1"
    assert svc["spark-connect"]["up"] and svc["spark-connect"]["detail"].startswith("Spark 4.")
    assert svc["mlflow"]["up"] and svc["mlflow"]["detail"] == "/health OK, login required"
    airflow = svc["airflow"]
    assert airflow["up"], airflow
    assert set(airflow["parts"]) == {"api-server", "metadatabase", "scheduler", "dag-processor", "triggerer"}
    assert all(airflow["parts"][c]["detail"].startswith("heartbeat ") for c in ("scheduler", "dag-processor", "triggerer"))
    assert svc["world"]["up"] == world_available()
    assert all(s["ours"] for s in svc.values() if s["up"])
    assert "kafka          1 broker, controller 1" in text


def test_status_says_down_after_a_sigkill_and_names_the_fix(stack):
    """SIGKILL the broker and Airflow's API server: status says each is down at once (a probe, not a pid file
    read), stays fast, and names the fix; following it brings Kafka back, and status says so."""
    cfg = stack["cfg"]
    KafkaBroker(cfg).kill()
    AirflowService(cfg).processes["api-server"].kill()
    doc, text, took = platform_status(stack)
    print(f"\nstatus took {took:.1f}s:\n{text}")
    svc = doc["services"]
    assert took < 30  # every probe within its 2 s timeout, in parallel (the CLI's start is most of it)
    assert not svc["kafka"]["up"] and svc["kafka"]["detail"] == f"nothing listens on {cfg.kafka_bootstrap}"
    assert svc["kafka"]["fix"] == "`focuscrawl services up --only kafka`"
    assert not svc["airflow"]["up"] and not svc["airflow"]["parts"]["api-server"]["up"]
    assert svc["airflow"]["ours"]  # its scheduler and the others still run: a pid says nothing about serving
    assert svc["airflow"]["fix"] == "`focuscrawl services up --only airflow`; its log: `focuscrawl logs airflow-api-server`"
    assert svc["spark-connect"]["up"]
    assert "(start: `focuscrawl services up --only kafka,airflow`)" in text
    assert "fix: `focuscrawl services up --only airflow`; its log: `focuscrawl logs airflow-api-server`" in text
    fixed = subprocess.run([*FOCUSCRAWL, "services", "up", "--only", "kafka"], env=stack["env"], capture_output=True,
                           text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    doc, _, _ = platform_status(stack)
    assert doc["services"]["kafka"]["up"] and not doc["services"]["airflow"]["up"]


def test_the_metadata_databases_password_reaches_no_output_log_or_state_file(stack):
    """The PostgreSQL URL carries a password: neither `up`'s nor `status`'s output, nor any file `services up` wrote
    (Airflow's logs and configuration, status and pid files), holds it."""
    password = stack["postgres"].password
    doc, text, _ = platform_status(stack)
    assert password not in stack["up"] and password not in text and password not in json.dumps(doc)
    holding = [str(path) for path in stack["cfg"].var_dir.rglob("*")
               if path.is_file() and password.encode() in path.read_bytes()]
    assert holding == []


def test_down_leaves_no_process_of_ours(stack):
    cfg = stack["cfg"]
    down = subprocess.run([*FOCUSCRAWL, "services", "down"], env=stack["env"], capture_output=True, text=True,
                          timeout=300)
    assert down.returncode == 0, down.stderr
    assert "airflow: stopped" in down.stdout and "kafka: stopped" in down.stdout and "mlflow: stopped" in down.stdout
    assert stack["pgids"] and all(group_members(g) == [] for g in stack["pgids"])
    var = str(cfg.var_dir)
    leftovers = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if var in cmdline:
                leftovers.append(cmdline)
    assert leftovers == []
    assert list((cfg.var_dir / "run").glob("*.pid")) == []
