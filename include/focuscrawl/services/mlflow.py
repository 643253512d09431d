"""The model registry's server: ``mlflow server`` on the bind host, login required, one worker.

Every learned model is logged and registered here (:mod:`focuscrawl.services.model_registry`;
docs/running.md#the-model-registry-mlflow).
Runs, registered versions and its users live in SQLite under ``$FOCUSCRAWL_VAR/mlflow``, or in the database
``FOCUSCRAWL_MLFLOW_DB`` names (the scale-out layout's PostgreSQL, docs/scale-out.md); the server stores the model
files it is sent in the lake's storage (``<lake>/mlflow-artifacts``: the local lake folder, or ``s3://`` with
``FOCUSCRAWL_S3_ENDPOINT`` when the lake is on S3), and clients send and fetch them through the server
(``--serve-artifacts``), so a host that logs or reads a model needs the server's URL, not the lake's
credentials or a shared filesystem.

Security: MLflow's basic-auth app (``--app-name basic-auth``) with one admin, ``cfg.mlflow_user``, whose
password is ``FOCUSCRAWL_MLFLOW_PASSWORD`` or one generated once and kept in
``$FOCUSCRAWL_VAR/mlflow/passwords.json`` (mode 0600), as Airflow's. It reaches the server in its
environment (``MLFLOW_AUTH_ADMIN_PASSWORD``), never on its command line or in a file MLflow reads; MLflow
sets the admin's password only when it creates its user database (``auth.db``), so a changed
``FOCUSCRAWL_MLFLOW_PASSWORD`` needs that file removed (or MLflow's update-password API); with
``FOCUSCRAWL_MLFLOW_DB`` the users are rows of that database. Its URL carries the database's password: it too
reaches the server in its environment, and the auth app's ini (written mode 0600: MLflow reads the users'
database from there only); :mod:`focuscrawl.core.redact` masks it in the error of a server that does not come up.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

from focuscrawl.config import Settings
from focuscrawl.core.interpreter import venv_bin
from focuscrawl.core.redact import redact, register_url_secret
from focuscrawl.services.probe import PROBE_TIMEOUT, Probe, failed
from focuscrawl.services.process import ManagedProcess, kept_password, kept_secret, port_open, write_private

# The databases MLflow's SQLAlchemy stores take (mlflow.store.db.db_types.DATABASE_ENGINES; importing it costs
# MLflow's whole import). Anything else MLflow takes for a folder (no scheme) or refuses with the whole URL,
# password included, in its log.
DATABASES = ("postgresql", "mysql", "sqlite", "mssql")
DB_FIX = ("it takes a SQLAlchemy URL, e.g. postgresql+psycopg2://USER:PASSWORD@HOST:5432/mlflow; unset, MLflow keeps "
          "SQLite files in $FOCUSCRAWL_VAR/mlflow")


def home(cfg: Settings) -> Path:
    return Path(cfg.var_dir) / "mlflow"


def password_file(cfg: Settings) -> Path:
    return home(cfg) / "passwords.json"


def credentials(cfg: Settings) -> tuple[str, str]:
    """``(user, password)`` of the admin: the configured password, else the one generated on first use (kept)."""
    return cfg.mlflow_user, kept_password(password_file(cfg), cfg.mlflow_user, cfg.mlflow_password)


def database(cfg: Settings) -> str | None:
    """``FOCUSCRAWL_MLFLOW_DB``, checked to be a database URL MLflow takes, its password registered for redaction
    before anything could log it; None on the embedded default (SQLite files under :func:`home`)."""
    if cfg.mlflow_db is None:
        return None
    try:
        parts = urlsplit(cfg.mlflow_db)
    except ValueError as exc:  # its message names the part, never the URL
        raise ValueError(f"FOCUSCRAWL_MLFLOW_DB is not a URL ({exc}): {DB_FIX}") from None
    register_url_secret(cfg.mlflow_db)
    if parts.scheme.partition("+")[0] not in DATABASES:
        raise ValueError(f"FOCUSCRAWL_MLFLOW_DB is not a database URL MLflow takes (scheme {parts.scheme!r}, not one "
                         f"of {', '.join(DATABASES)}): {DB_FIX}")
    return cfg.mlflow_db


def connectable(url: str, timeout: int = 10) -> None:
    """Log in to the database ``url`` once, or raise naming the setting: a database MLflow cannot reach or log in
    to costs it about 100 s of its own retries before it exits; this says why in a second."""
    from sqlalchemy import create_engine

    engine = create_engine(url, connect_args={"connect_timeout": timeout} if url.startswith("postgresql") else {})
    try:
        with engine.connect():
            pass
    except Exception as exc:  # noqa: BLE001 - the driver's error, whatever its class, is the message
        reason = redact(str(getattr(exc, "orig", None) or exc).strip().splitlines()[0])
        raise RuntimeError(f"MLflow's database refused a connection ({reason}); check FOCUSCRAWL_MLFLOW_DB (host, port, "
                           f"user, password, database name): {DB_FIX}") from None
    finally:
        engine.dispose()


def artifacts_destination(cfg: Settings) -> str:
    """Where the server keeps model files: beside the Delta tables, in the lake's own storage."""
    return f"{cfg.lake.rstrip('/')}/mlflow-artifacts"


class MlflowServer:
    name = "mlflow"

    def __init__(self, cfg: Settings) -> None:
        self.cfg = cfg
        self.home = home(cfg)
        self.password_file = password_file(cfg)
        self.process = ManagedProcess(
            name=self.name, run_dir=Path(cfg.var_dir) / "run", log_dir=Path(cfg.var_dir) / "logs",
            command=[str(venv_bin() / "mlflow"), "server", "--app-name", "basic-auth",
                     "--host", cfg.bind_host, "--port", str(cfg.mlflow_port),
                     "--workers", "1",  # two cores: one worker serves a registry a few jobs an hour write to
                     # A configured database's URL carries a password: it goes in the environment (env()),
                     # since every local user can read a command line.
                     *([] if cfg.mlflow_db else ["--backend-store-uri", f"sqlite:///{self.home / 'mlflow.db'}"]),
                     "--serve-artifacts", "--artifacts-destination", artifacts_destination(cfg)],
            cwd=self.home,
        )
        self.processes = {self.name: self.process}

    @property
    def url(self) -> str:
        return self.cfg.mlflow_url

    def env(self) -> dict[str, str]:
        """The server's environment: its database, where its users live, the admin it creates there, the S3
        endpoint of an ``s3://`` lake (credentials come from the environment, as for every S3 client here)."""
        self.home.mkdir(parents=True, exist_ok=True)
        user, password = credentials(self.cfg)
        store = database(self.cfg)
        ini = self.home / "basic_auth.ini"
        # default_permission READ: a user an admin adds may read every model; only the admin exists otherwise.
        # The users share a configured database with the runs (the auth app keeps its own alembic_version_auth).
        # configparser interpolates: a URL-quoted password's % is written %%.
        users = (store or f"sqlite:///{self.home / 'auth.db'}").replace("%", "%%")
        write_private(ini, "[mlflow]\ndefault_permission = READ\n"
                           f"database_uri = {users}\n"
                           f"admin_username = {user}\n"
                           "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
                           # A checked login is trusted for a minute: each request otherwise costs a PBKDF2 hash
                           # (0.5 s here), and logging one version takes ten. One worker: no other worker's cache
                           # can hold a changed password.
                           "auth_cache_ttl_seconds = 60\n")
        env = {"MLFLOW_AUTH_CONFIG_PATH": str(ini), "MLFLOW_AUTH_ADMIN_PASSWORD": password,
               # the basic-auth app's CSRF key: stable across restarts
               "MLFLOW_FLASK_SERVER_SECRET_KEY": kept_secret(self.home / "secret_key"),
               # MLflow's job runner (a huey consumer per job type) serves GenAI evaluation, which no loop uses.
               "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        if store:  # `mlflow server --backend-store-uri`, read from its environment variable
            env["MLFLOW_BACKEND_STORE_URI"] = store
        if self.cfg.s3_endpoint:
            env["MLFLOW_S3_ENDPOINT_URL"] = self.cfg.s3_endpoint
        return env

    def start(self, timeout: float = 180.0) -> None:  # 15 s idle, 74 s at load 7 on two cores (imports)
        if self.healthy():
            return
        # A SIGKILLed server leaves its uvicorn worker holding the port: that is ours to stop (a kill in the live
        # platform's test left MLflow down for good, "port taken", until this).
        if not self.process.running():
            self.process.stop_leftovers()
        if port_open(self.cfg.bind_host, self.cfg.mlflow_port):  # another var folder's: ours could not bind
            raise RuntimeError(f"port {self.cfg.mlflow_port} is taken by another process; stop it, or give this "
                               "platform other ports (FOCUSCRAWL_PORT_OFFSET or FOCUSCRAWL_MLFLOW_PORT)")
        self.process.env = self.env()
        if self.cfg.mlflow_db is not None:
            connectable(self.cfg.mlflow_db)
        try:
            self.process.start_until(lambda: self.probe(timeout=3.0).up, timeout, f"MLflow server on {self.url}")
        except (RuntimeError, TimeoutError) as exc:
            if self.cfg.mlflow_db is None:
                raise
            raise type(exc)(f"{redact(str(exc))}\nIf it could not use its database, check FOCUSCRAWL_MLFLOW_DB (host, "
                            f"port, user, password, database name): {DB_FIX}") from None

    def serve(self) -> NoReturn:
        """Run the server in the foreground in place of this process, as a container's command (``focuscrawl
        services serve mlflow``: docker-compose.yml), with the command and environment :meth:`start` gives it."""
        if self.cfg.mlflow_db is not None:
            connectable(self.cfg.mlflow_db)
        env = {**os.environ, **self.env()}
        os.chdir(self.home)
        os.execvpe(self.process.command[0], self.process.command, env)

    def probe(self, timeout: float = PROBE_TIMEOUT) -> Probe:
        """MLflow's ``/health`` (answered without login), and that the API asks for one: a server without
        authentication is not the server this service runs."""
        import requests

        if not port_open(self.cfg.bind_host, self.cfg.mlflow_port, timeout=min(timeout, 0.5)):
            return Probe(False, f"nothing listens on {self.url}")
        try:
            health = requests.get(f"{self.url}/health", timeout=timeout)
            guarded = requests.get(f"{self.url}/api/2.0/mlflow/registered-models/search", timeout=timeout)
        except requests.RequestException as exc:
            return failed(exc)
        if health.status_code != 200:
            return Probe(False, f"HTTP {health.status_code} for /health")
        if guarded.status_code != 401:
            return Probe(False, f"its API answers HTTP {guarded.status_code} without a login (basic auth is off)")
        return Probe(True, f"/health {health.text.strip()[:20]}, login required")

    def stop(self) -> bool:
        return self.process.stop()

    def healthy(self) -> bool:
        return self.process.running() and self.probe().up

    def alive(self) -> bool:
        """Ours runs and its port accepts: what the platform's watch restarts on."""
        return self.process.running() and port_open(self.cfg.bind_host, self.cfg.mlflow_port)
