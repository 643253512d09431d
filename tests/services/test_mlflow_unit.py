"""The MLflow server's wiring without starting it: bound to the bind host, one worker, login required, its
password generated once and kept private, passed in the environment only; the registry's client says when the
server is down and how to start it."""

from __future__ import annotations

import dataclasses
import json
import stat

import pytest

from focuscrawl.config import settings
from focuscrawl.services.mlflow import MlflowServer, credentials, password_file
from focuscrawl.services.model_registry import connect
from focuscrawl.services.process import settings_env
from helpers import free_port


@pytest.fixture
def tmp_cfg(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    monkeypatch.delenv("FOCUSCRAWL_MLFLOW_PASSWORD", raising=False)
    monkeypatch.delenv("FOCUSCRAWL_LAKE", raising=False)
    return settings()


def test_generated_password_is_kept_private_and_stable(tmp_cfg):
    user, first = credentials(tmp_cfg)
    assert user == "admin" and len(first) >= 16
    assert stat.S_IMODE(password_file(tmp_cfg).stat().st_mode) == 0o600
    assert json.loads(password_file(tmp_cfg).read_text()) == {"admin": first}
    assert credentials(tmp_cfg) == ("admin", first)
    chosen = dataclasses.replace(tmp_cfg, mlflow_password="chosen-one", mlflow_user="ops")
    assert credentials(chosen) == ("ops", "chosen-one")
    assert "FOCUSCRAWL_MLFLOW_PASSWORD" not in settings_env(chosen)


def test_server_listens_on_the_bind_host_with_login_sqlite_and_the_lake(tmp_cfg):
    server = MlflowServer(tmp_cfg)
    argv = server.process.command
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--port") + 1] == str(tmp_cfg.mlflow_port)
    assert argv[argv.index("--app-name") + 1] == "basic-auth" and argv[argv.index("--workers") + 1] == "1"
    assert argv[argv.index("--backend-store-uri") + 1] == f"sqlite:///{tmp_cfg.var_dir}/mlflow/mlflow.db"
    assert argv[argv.index("--artifacts-destination") + 1] == f"{tmp_cfg.var_dir}/lake/mlflow-artifacts"
    env = server.env()
    password = credentials(tmp_cfg)[1]
    assert env["MLFLOW_AUTH_ADMIN_PASSWORD"] == password
    assert password not in " ".join(argv) and password not in (server.home / "basic_auth.ini").read_text()
    assert env["MLFLOW_FLASK_SERVER_SECRET_KEY"] == MlflowServer(tmp_cfg).env()["MLFLOW_FLASK_SERVER_SECRET_KEY"]


def test_an_s3_lake_keeps_the_artifacts_in_its_bucket(tmp_cfg):
    cfg = dataclasses.replace(tmp_cfg, lake="s3://focuscrawl/lake/", s3_endpoint="http://127.0.0.1:19000")
    server = MlflowServer(cfg)
    argv = server.process.command
    assert argv[argv.index("--artifacts-destination") + 1] == "s3://focuscrawl/lake/mlflow-artifacts"
    assert server.env()["MLFLOW_S3_ENDPOINT_URL"] == "http://127.0.0.1:19000"


def test_a_registry_that_is_down_is_named_with_its_fix(tmp_cfg):
    lines = []
    assert connect(dataclasses.replace(tmp_cfg, mlflow_port=1), log=lines.append) is None
    assert len(lines) == 1 and "nothing listens on http://127.0.0.1:1" in lines[0]
    assert "`focuscrawl services up --only mlflow`" in lines[0]


def test_a_killed_servers_worker_holding_the_port_is_stopped_before_it_starts_again(tmp_cfg):
    """A SIGKILLed ``mlflow server`` leaves its uvicorn worker on the port, in the killed server's session: the
    live platform's test saw MLflow refuse to start again ("port taken") until the watch gave up."""
    import subprocess
    import sys
    import time

    from focuscrawl.services.process import pid_alive, port_open

    server = MlflowServer(dataclasses.replace(tmp_cfg, mlflow_port=0))
    port = free_port(tmp_cfg.bind_host)
    server.cfg = dataclasses.replace(tmp_cfg, mlflow_port=port)
    # the "server" forks a "worker" that holds the port, then dies as a SIGKILL would leave it
    code = (f"import os, socket, time\nif os.fork() == 0:\n s = socket.socket(); s.bind(({tmp_cfg.bind_host!r}, {port}));"
            f" s.listen(); time.sleep(60)\nos._exit(0)")
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    leader.wait()
    server.process.run_dir.mkdir(parents=True, exist_ok=True)
    server.process.pid_file.write_text(str(leader.pid))
    deadline = time.monotonic() + 10
    while not port_open(tmp_cfg.bind_host, port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert port_open(tmp_cfg.bind_host, port) and not pid_alive(leader.pid)
    started = []
    server.process.start_until = lambda *a, **k: started.append(port_open(tmp_cfg.bind_host, port))
    server.start()
    assert started == [False]  # the worker was stopped, so the new server can bind


def test_a_database_urls_password_is_masked_as_written_and_unquoted():
    from focuscrawl.core.redact import MASK, redact, register_url_secret

    register_url_secret("postgresql+psycopg2://airflow:s3cr%40t-pw@db.example:5432/airflow")
    assert redact("could not connect: password s3cr@t-pw for airflow") == f"could not connect: password {MASK} for airflow"
    assert "s3cr%40t-pw" not in redact("conn=postgresql+psycopg2://airflow:s3cr%40t-pw@db.example/airflow")
    register_url_secret("not a url :// at all")  # nothing to mask, no error
    register_url_secret(None)


def test_served_in_the_foreground_it_runs_the_same_command_with_its_secrets_in_the_environment(tmp_cfg, monkeypatch):
    """``focuscrawl services serve mlflow``, a container's command (docker-compose.yml): this process becomes the
    server ``services up`` would start, its database and password in its environment, never in its argv."""
    import os

    from focuscrawl.cli.main import main

    database = "postgresql+psycopg2://mlflow:s3cret@db.invalid:5432/mlflow"
    monkeypatch.setenv("FOCUSCRAWL_MLFLOW_DB", database)
    monkeypatch.setenv("FOCUSCRAWL_MLFLOW_PASSWORD", "chosen-one")
    monkeypatch.setenv("FOCUSCRAWL_MLFLOW_URL", "http://mlflow:5000/")
    monkeypatch.setattr("focuscrawl.services.mlflow.connectable", lambda url: None)
    execs = []

    def execvpe(file, argv, env):
        execs.append((file, argv, env, os.getcwd()))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execvpe", execvpe)
    monkeypatch.chdir(tmp_cfg.home)
    with pytest.raises(SystemExit):
        main(["services", "serve", "mlflow"])
    (file, argv, env, cwd), = execs
    cfg = settings()
    assert cfg.mlflow_url == "http://mlflow:5000" and settings_env(cfg)["FOCUSCRAWL_MLFLOW_URL"] == "http://mlflow:5000/"
    assert argv == MlflowServer(cfg).process.command and file == argv[0] and cwd == str(MlflowServer(cfg).home)
    assert env["MLFLOW_BACKEND_STORE_URI"] == database and env["MLFLOW_AUTH_ADMIN_PASSWORD"] == "chosen-one"
    assert "s3cret" not in " ".join(argv) and "chosen-one" not in " ".join(argv)

    def unreachable(url):
        raise RuntimeError("MLflow's database refused a connection (timeout); check FOCUSCRAWL_MLFLOW_DB")

    monkeypatch.setattr("focuscrawl.services.mlflow.connectable", unreachable)
    assert main(["services", "serve", "mlflow"]) == 2 and len(execs) == 1
