"""Issue 34: the model registry's metadata on PostgreSQL (the scale-out layout) instead of the embedded SQLite.

:class:`MlflowServer` with ``FOCUSCRAWL_MLFLOW_DB`` on a fresh database of the throw-away cluster (conftest.py):
a version logged and registered through the product's own client (:class:`ModelRegistry`) is read back from
PostgreSQL's tables, and so is the admin the auth app created there; a wrong login is refused (401); the
database's password reaches no log, status or command line. A URL MLflow cannot log in with fails the start
with the log's reason and the setting to check; one MLflow would echo whole (no store for its scheme) is refused
before the server starts, its password registered for redaction.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from focuscrawl.cli import main as cli
from focuscrawl.core.redact import MASK, redact
from focuscrawl.platform.status import services
from focuscrawl.services.mlflow import MlflowServer
from focuscrawl.services.model_registry import CHAMPION, ModelRegistry
from focuscrawl.services.process import group_members
from helpers import free_port, mlflow_login_is_required

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

NAME = "outlinks.NNL-ET_LBLA.int"



def own_settings(cfg, var: Path, mlflow_db: str):
    """``cfg`` with its own var folder, lake and MLflow port: no other test's server or files are touched."""
    return dataclasses.replace(cfg, var_dir=var, lake=str(var / "lake"), mlflow_port=free_port(cfg.bind_host),
                               mlflow_db=mlflow_db)


@pytest.fixture(scope="module")
def server(cfg, postgres_cluster, tmp_path_factory):
    svc = MlflowServer(own_settings(cfg, tmp_path_factory.mktemp("mlflow-var"), postgres_cluster.database("mlflow")))
    # ModelRegistry puts the login in this process's environment: put it back after this module.
    with pytest.MonkeyPatch.context() as env:
        for key in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
            env.setenv(key, "")
        try:
            svc.start()
            yield svc
        finally:
            svc.stop()


def test_a_registered_version_and_the_admin_live_in_postgresql(server, tmp_path):
    from postgres import connect

    model = tmp_path / "model.json"
    model.write_text(json.dumps({"trees": 3}))
    registry = ModelRegistry.from_settings(server.cfg)
    version = registry.log_version("outlinks", NAME, [model], params={"n_estimators": 3},
                                  metrics={"spearman": 0.5}, delta_versions={"outlink_features": 7})
    registry.set_champion(NAME, version)
    assert version == 1 and registry.champion(NAME) == 1
    run_id = registry.client.get_model_version(NAME, "1").run_id

    with connect(server.cfg.mlflow_db) as db, db.cursor() as cur:
        cur.execute("SELECT name FROM registered_models")
        assert cur.fetchall() == [(NAME,)]
        cur.execute("SELECT name, version, run_id FROM model_versions")
        assert cur.fetchall() == [(NAME, 1, run_id)]
        cur.execute("SELECT alias, version FROM registered_model_aliases WHERE name = %s", (NAME,))
        assert cur.fetchall() == [(CHAMPION, 1)]
        cur.execute("SELECT value FROM params WHERE run_uuid = %s AND key = 'delta_version.outlink_features'",
                    (run_id,))
        assert cur.fetchall() == [("7",)]
        cur.execute("SELECT username FROM users")  # the auth app's users share the database
        assert cur.fetchall() == [(server.cfg.mlflow_user,)]
    assert not list(server.home.glob("*.db"))  # nothing fell back to SQLite


def test_a_wrong_password_is_refused(server):
    mlflow_login_is_required(server)


def test_the_database_password_reaches_no_log_status_or_command_line(server, monkeypatch, capsys):
    password = urlsplit(server.cfg.mlflow_db).password
    for key, value in {"FOCUSCRAWL_VAR": str(server.cfg.var_dir), "FOCUSCRAWL_LAKE": server.cfg.lake,
                       "FOCUSCRAWL_MLFLOW_PORT": str(server.cfg.mlflow_port),
                       "FOCUSCRAWL_MLFLOW_DB": server.cfg.mlflow_db}.items():
        monkeypatch.setenv(key, value)
    capsys.readouterr()
    cli.main(["services", "status"])
    printed = capsys.readouterr()
    assert f"mlflow        up    {server.url}" in printed.out
    haystacks = {str(p): p.read_text(errors="replace") for p in (Path(server.cfg.var_dir) / "logs").glob("*.log")}
    assert str(server.process.log_file) in haystacks
    haystacks["focuscrawl services status"] = printed.out + printed.err
    haystacks["focuscrawl status --json"] = json.dumps(services(server.cfg))
    for pid in group_members(server.process.pid()):
        haystacks[f"command line of {pid}"] = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    assert len(haystacks) >= 4
    for where, text in haystacks.items():
        assert password not in text, f"the database password leaked into {where}"


def test_a_database_it_cannot_log_in_to_fails_the_start_naming_the_setting(cfg, postgres_cluster, tmp_path):
    wrong = "not-" + postgres_cluster.password
    url = f"postgresql+psycopg2://{postgres_cluster.user}:{wrong}@{postgres_cluster.host}:{postgres_cluster.port}/mlflow"
    svc = MlflowServer(own_settings(cfg, tmp_path / "var", url))
    try:
        with pytest.raises(RuntimeError, match="check FOCUSCRAWL_MLFLOW_DB") as failed:
            svc.start()
    finally:
        svc.stop()
    assert "password authentication failed" in str(failed.value)  # the driver says why, before MLflow starts
    assert wrong not in str(failed.value) and not svc.process.log_file.exists()


def test_a_url_mlflow_would_log_whole_is_refused_before_it_starts(cfg, tmp_path):
    # MLflow has no store for ``postgres://`` and says so with the URL, password and all, in its log.
    svc = MlflowServer(own_settings(cfg, tmp_path / "var", "postgres://u:secret-4711@db.invalid/mlflow"))
    with pytest.raises(ValueError, match="FOCUSCRAWL_MLFLOW_DB is not a database URL MLflow takes") as refused:
        svc.start()
    assert "secret-4711" not in str(refused.value) and not svc.process.log_file.exists()
    assert redact("u:secret-4711@db.invalid") == f"u:{MASK}@db.invalid"  # masked in every later log line
