"""Airflow 3 on the embedded default: SQLite metadata, LocalExecutor, login required.

Each component (``api-server``, ``scheduler``, ``dag-processor``, ``triggerer``) is its own
:class:`ManagedProcess`, so ``services down`` stops each process group and ``status`` reports
each one. Airflow 3.3 has no SequentialExecutor any more; LocalExecutor runs on SQLite (the
same pairing ``airflow standalone`` forces). Login uses the Simple auth manager with one user
whose password is ``FOCUSCRAWL_AIRFLOW_PASSWORD`` or one generated once and kept in
``$FOCUSCRAWL_VAR/airflow/passwords.json`` (mode 0600). :class:`AirflowClient` is the REST
client the tests and the demo use.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from focuscrawl.config import Settings
from focuscrawl.core.interpreter import path_with_venv, spark_home, venv_bin
from focuscrawl.core.redact import redact, register_url_secret
from focuscrawl.services.preload import ENV as PRELOAD_ENV
from focuscrawl.services import spark_connect
from focuscrawl.services.probe import PROBE_TIMEOUT, Probe
from focuscrawl.services.process import ManagedProcess, kept_password, settings_env, wait_until, write_private

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
# The scheduler and triggerer would each start `airflow serve-logs`, which binds every interface
# (0.0.0.0:8793/8794, not configurable). Every component runs on this machine and writes the task
# logs to one folder, which the API server reads directly: nothing needs the log servers.
SERVE_LOGS_OFF = {"scheduler": ("--skip-serve-logs",), "triggerer": ("--skip-serve-logs",)}
# The components whose forks parse the DAG files and run the tasks: they import the libraries those
# import once, so that no fork imports them again (focuscrawl.services.preload).
PRELOADED = ("scheduler", "dag-processor")
TERMINAL_STATES = {"success", "failed"}
# The components whose heartbeat the API server's health endpoint reports, by their key in it.
HEALTH_KEYS = {"scheduler": "scheduler", "dag-processor": "dag_processor", "triggerer": "triggerer"}
# The REST client sends a request whose answer was lost (a server error, a timeout, a dropped connection) again
# when that is safe (a read, or a write the caller made idempotent), pausing this long before each new try.
SERVER_ERRORS = {500, 502, 503, 504}
READ_RETRY_PAUSES = (1.0, 3.0)
# The pool every Spark task runs in (dags/common.spark_job), with its slots when first created: two
# jobs at a time share the warm Spark under its fair scheduler, so a rerun of one loop does not starve
# another (with a cold driver per task one slot was the most two cores could take: three concurrent
# spark-submits each took over 30 minutes to start at load 60-90). Raise it in the UI (Admin -> Pools)
# on a cluster: an existing pool is left as it is.
SPARK_POOL, SPARK_POOL_SLOTS = "spark", 2
# The model registry's record tasks (focuscrawl.orchestration.registry_task) one at a time: no loop waits for them,
# and the DAG's four tasks at once took every slot of the executor's parallelism from the loops' own tasks on each
# of its ~30 runs in the loaded freshness run of 9b1c0aa (record tasks waited 7-9 s queued, so did the loops').
REGISTRY_POOL, REGISTRY_POOL_SLOTS = "registry", 1
DEFAULT_POOL = "default_pool"  # Airflow's own, for a task of spark_jobs/ that never opens a Spark session
POOLS = {SPARK_POOL: (SPARK_POOL_SLOTS, "Spark jobs (tasks on the warm Spark)"),
         REGISTRY_POOL: (REGISTRY_POOL_SLOTS, "the model registry's record tasks (no loop waits for them)")}


class AirflowService:
    name = "airflow"

    def __init__(
        self,
        cfg: Settings,
        dags_folder: Path | None = None,
        components: tuple[str, ...] = COMPONENTS,
        parallelism: int = 4,
    ) -> None:
        self.cfg = cfg
        self.home = Path(cfg.var_dir) / "airflow"
        self.dags_folder = Path(dags_folder or Path(cfg.home) / "dags").resolve()
        self.parallelism = parallelism
        self.password_file = self.home / "passwords.json"
        self.processes = {
            c: ManagedProcess(
                name=f"airflow-{c}",
                run_dir=Path(cfg.var_dir) / "run",
                log_dir=Path(cfg.var_dir) / "logs",
                command=[str(venv_bin() / "airflow"), c, *SERVE_LOGS_OFF.get(c, ())],
                cwd=Path(cfg.home),
            )
            for c in components
        }

    @property
    def url(self) -> str:
        return self.cfg.airflow_url

    # -- configuration -----------------------------------------------------------------------
    def password(self) -> str:
        """The login password: the configured one, else the one generated on first start (the Simple auth
        manager reads its file on every login)."""
        return kept_password(self.password_file, self.cfg.airflow_user, self.cfg.airflow_password)

    def _secrets(self) -> dict[str, str]:
        """JWT and session secrets shared by every component (the scheduler signs task tokens that
        the API server checks), generated once and kept under var."""
        path = self.home / "secrets.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            values = {"jwt_secret": secrets.token_urlsafe(32), "secret_key": secrets.token_urlsafe(32)}
            write_private(path, json.dumps(values))
            return values

    def env(self) -> dict[str, str]:
        """Environment of every Airflow process, and so of every task it runs."""
        c = self.cfg
        register_url_secret(c.airflow_db)  # masked in whatever of Airflow's output an error of ours quotes
        keys = self._secrets()
        env = settings_env(c)
        env.update({
            "PATH": path_with_venv(),
            "SPARK_HOME": spark_home(),
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            # focuscrawl's priority rule for the spark pool (focuscrawl.orchestration.airflow_priority)
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(Path(c.home) / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            # DAG files import pyarrow and providers: 30 s (the default) is too little on 2 busy cores.
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": str(self.parallelism),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": c.airflow_db or f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{c.airflow_user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.password_file),
            "AIRFLOW__API__HOST": c.bind_host,
            "AIRFLOW__API__PORT": str(c.airflow_port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__BASE_URL": c.airflow_url,
            # Workers reach the Execution API here; its default is localhost:8080, not our port.
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{c.airflow_url}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
            "AIRFLOW__API__SECRET_KEY": keys["secret_key"],
            # A task's first Execution API call waited up to 35 s on a loaded 2-core machine; the
            # 5 s default failed task starts with ReadTimeout and spent a retry.
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "120",
            # New DAG files show up within 30 s instead of the default 5 min.
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            # An unchanged DAG file is parsed again every 5 minutes, not every 30 s (the default): the DAG processor
            # re-parsed the 8 files 94 times in 5 minutes of the live platform (51 s of CPU), and averaged a quarter
            # of a core in the CI of 1809855. A changed file is parsed at once (its mtime), and `up` asks for the
            # files parsed before the project it starts (focuscrawl.platform.up.Platform.unpause_dags).
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "300",
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
            # Spark tasks run on the warm Spark (focuscrawl.services.spark_connect), through the provider's
            # Spark Connect connection; the token reaches the tasks here, never a log or the metadata DB.
            "AIRFLOW_CONN_SPARK_CONNECT_DEFAULT": json.dumps(spark_connect.connection(c)),
            "NO_COLOR": "1",
        })
        return env

    @staticmethod
    def component_env(component: str, env: dict[str, str]) -> dict[str, str]:
        """``env`` for one component: the scheduler and the DAG processor also preload (:data:`PRELOADED`)."""
        return {**env, PRELOAD_ENV: "1"} if component in PRELOADED else env

    # -- lifecycle -----------------------------------------------------------------------------
    def _airflow(self, *args: str, timeout: float = 300) -> str:
        env = dict(os.environ)
        env.update(self.env())
        out = subprocess.run(
            [str(venv_bin() / "airflow"), *args], env=env, cwd=str(self.cfg.home),
            capture_output=True, text=True, timeout=timeout,
        )
        if out.returncode != 0:  # its output may quote the database URL (FOCUSCRAWL_AIRFLOW_DB): masked
            raise RuntimeError(redact(f"`airflow {' '.join(args)}` failed ({out.returncode}):\n{out.stdout[-3000:]}\n"
                                      f"{out.stderr[-3000:]}"))
        return out.stdout

    def migrate(self) -> bool:
        """``airflow db migrate`` once per Airflow version (it is idempotent but costs ~20 s here).
        True if it ran."""
        import importlib.metadata

        stamp = self.home / f".migrated-{importlib.metadata.version('apache-airflow')}"
        if stamp.exists() and (self.home / "airflow.db").exists():
            return False
        self.home.mkdir(parents=True, exist_ok=True)
        self._airflow("db", "migrate")
        stamp.touch()
        return True

    def _ensure_pools(self) -> None:
        client = self.client()
        for name, (slots, description) in POOLS.items():
            client.ensure_pool(name, slots, description)

    def start(self, timeout: float = 240.0) -> None:
        if self.healthy():
            self._ensure_pools()
            return
        try:
            self._start(timeout)
            self._ensure_pools()
        except BaseException:
            self.stop()  # a half-started Airflow must not hold its ports for the next try
            raise

    def _start(self, timeout: float) -> None:
        self.password()
        self.migrate()
        env = self.env()
        parser = self.processes.get("dag-processor")
        for component, proc in self.processes.items():
            proc.env = self.component_env(component, env)
            if proc is not parser:
                proc.start()
        api = self.processes.get("api-server")
        # Parse the DAG folder into the metadata DB now, so DAGs are listed as soon as we are up.
        # The DAG processor starts only afterwards: both writing the same new DAG rows into SQLite
        # at once makes the processor die on a failed INSERT (seen in CI).
        # Parsing every DAG file takes seconds idle but many minutes on a loaded 2-core machine.
        self._airflow("dags", "reserialize", timeout=900)
        if parser is not None:
            parser.start()
        wait_until(self._api_ready, timeout, f"Airflow API server on {self.url}", log=api)
        self._warm_execution_api(timeout)
        for proc in self.processes.values():
            if not proc.running():
                raise RuntimeError(redact(f"{proc.name} exited. Last log lines ({proc.log_file}):\n{proc.log_tail()}"))
        # Up means every component heartbeats (what `status` probes): the scheduler and the DAG processor import
        # the preloaded libraries before their first beat, seconds to half a minute under load (CI, 2026-12-05:
        # `status` said "scheduler down (no heartbeat yet)" right after `services up`).
        wait_until(lambda: self.probe().up, timeout,
                   f"Airflow's components' first heartbeats ({self.url}/api/v2/monitor/health)", log=api)

    def _warm_execution_api(self, timeout: float) -> None:
        """Ask the task execution API once, so it builds its routers now. It builds them at its first request (Cadwyn,
        which versions it, does so lazily: 5.6 s of CPU idle) on the API server's one event loop: the first task's
        start request (``PATCH /execution/task-instances/<id>/run``) took 12-33 s in three runs of the loaded
        platform and held every other request of the API server as long. Asked here, before anything is called up,
        no task waits for it. Best effort: a failure only leaves the building to the first task."""
        import logging

        import requests

        try:
            requests.get(f"{self.url}/execution/health", timeout=timeout).raise_for_status()
        except requests.RequestException as exc:
            logging.getLogger(__name__).warning("the task execution API did not answer its first request (%s); the "
                                                "first task's start builds its routers", exc)

    def health(self, timeout: float = 2.0) -> dict | None:
        """The API server's ``/api/v2/monitor/health`` document (no login needed), None when it does not answer."""
        import requests

        try:
            r = requests.get(f"{self.url}/api/v2/monitor/health", timeout=timeout)
            return r.json() if r.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None

    def _api_ready(self) -> bool:
        return ((self.health() or {}).get("metadatabase") or {}).get("status") == "healthy"

    def probe(self, timeout: float = PROBE_TIMEOUT) -> Probe:
        """Airflow as its API server's health endpoint reports it: the API server answering, its metadata
        database, and each component's heartbeat (``HEALTH_KEYS``); up when every component this service runs
        is healthy."""
        doc = self.health(timeout)
        if doc is None:
            return Probe(False, f"API server does not answer {self.url}/api/v2/monitor/health",
                         {"api-server": Probe(False, "no answer")})
        now = time.time()
        parts = {"api-server": Probe(True), "metadatabase": Probe((doc.get("metadatabase") or {}).get("status") == "healthy")}
        for component, key in HEALTH_KEYS.items():
            if component not in self.processes:
                continue
            part = doc.get(key) or {}
            beat = part.get(f"latest_{key}_heartbeat")
            ago = ""
            if beat:
                from datetime import datetime

                ago = f"heartbeat {max(0.0, now - datetime.fromisoformat(beat).timestamp()):.0f} s ago"
            parts[component] = Probe(part.get("status") == "healthy", ago or "no heartbeat yet")
        down = [name for name, p in parts.items() if not p.up]
        detail = (", ".join(f"{name} down" + (f" ({parts[name].detail})" if parts[name].detail else "") for name in down)
                  if down else f"{', '.join(parts)} healthy")
        return Probe(not down, detail, parts)

    def stop(self) -> bool:
        from concurrent.futures import ThreadPoolExecutor

        # In parallel: each component may take its full grace period to drain.
        with ThreadPoolExecutor(len(self.processes)) as pool:
            return any(pool.map(lambda p: p.stop(), self.processes.values()))

    def healthy(self) -> bool:
        return all(p.running() for p in self.processes.values()) and self._api_ready()

    def alive(self) -> bool:
        """Every component's process runs (a busy API server may answer its health check late)."""
        return all(p.running() for p in self.processes.values())

    def heal(self, timeout: float = 240.0) -> None:
        """Start again only the components that died (``focuscrawl.platform.service_watch``); the DAGs are
        parsed already, so no reserialize."""
        env = self.env()
        dead = [c for c, p in self.processes.items() if not p.running()]  # by component: "api-server"
        for c in dead:
            self.processes[c].env = self.component_env(c, env)
            self.processes[c].start()
        if "api-server" in dead:
            wait_until(self._api_ready, timeout, f"Airflow API server on {self.url}", log=self.processes["api-server"])
            self._warm_execution_api(timeout)

    def client(self) -> "AirflowClient":
        return AirflowClient(self.url, self.cfg.airflow_user, self.password())


class AirflowError(RuntimeError):
    """An Airflow API answer of 400 or more: ``status`` is its HTTP status; ``resent`` says the request had been
    sent before, its answer lost."""

    def __init__(self, message: str, status: int | None = None, resent: bool = False) -> None:
        super().__init__(message)
        self.status, self.resent = status, resent


class AirflowClient:
    """Airflow 3's REST API (``/api/v2``) with a JWT from ``/auth/token``."""

    def __init__(self, url: str, user: str, password: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.user = user
        self.password = password
        self.timeout = timeout
        self._token: str | None = None

    def token(self) -> str:
        import requests

        r = requests.post(
            f"{self.url}/auth/token", json={"username": self.user, "password": self.password}, timeout=self.timeout
        )
        if r.status_code not in (200, 201):
            raise AirflowError(f"login as {self.user!r} at {self.url} refused ({r.status_code}): {r.text[:200]}",
                               r.status_code)
        self._token = r.json()["access_token"]
        return self._token

    def _call(self, method: str, path: str, resend: bool | None = None, **kwargs: Any):
        """One request; one whose answer was lost is sent again when ``resend`` (by default for a read only).

        A loaded API server answers with a 5xx now and then, or not in time (the freshness bench's last trace of the
        sources loop was lost to one 500, 2026-12-05; the rollback test's trigger to one in the CI of ff60cec). A
        read is asked again; a write only when the caller made a second copy harmless (:meth:`trigger`)."""
        import requests

        resend = method == "GET" if resend is None else resend
        extra = kwargs.pop("headers", {})
        relogged, failures = False, 0
        while True:
            token = self._token or self.token()
            headers = {"Authorization": f"Bearer {token}", **extra}
            try:
                r = requests.request(method, f"{self.url}{path}", headers=headers, timeout=self.timeout, **kwargs)
            except requests.RequestException:
                if not resend or failures == len(READ_RETRY_PAUSES):
                    raise
                r = None
            if r is not None and r.status_code == 401 and not relogged:
                self._token, relogged = None, True  # expired: log in again once
                continue
            if resend and (r is None or r.status_code in SERVER_ERRORS) and failures < len(READ_RETRY_PAUSES):
                time.sleep(READ_RETRY_PAUSES[failures])
                failures += 1
                continue
            if r.status_code >= 400:
                raise AirflowError(f"{method} {path} -> {r.status_code}: {r.text[:500]}", r.status_code, failures > 0)
            return r

    def dags(self) -> list[dict]:
        return self._call("GET", "/api/v2/dags", params={"limit": 1000}).json()["dags"]

    def wait_for_dag(self, dag_id: str, timeout: float = 120.0) -> dict:
        """Wait until the DAG processor has parsed ``dag_id`` (new files take up to a refresh)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [d for d in self.dags() if d["dag_id"] == dag_id]
            if found:
                return found[0]
            time.sleep(2)
        raise TimeoutError(f"DAG {dag_id!r} not listed by {self.url} after {timeout:.0f}s")

    def dag(self, dag_id: str) -> dict:
        """The DAG's details as the scheduler sees them (``is_paused``, ``next_dagrun_run_after``, ...)."""
        return self._call("GET", f"/api/v2/dags/{dag_id}").json()

    def dag_runs(self, dag_id: str, **params: Any) -> list[dict]:
        """The DAG's runs; ``params`` filter them as the REST API does (``run_type="manual"``, ...)."""
        return self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 1000, **params}).json()["dag_runs"]

    def reparse(self, file_token: str) -> None:
        """Ask the DAG processor to parse a DAG file on its next loop (the ``file_token`` a DAG's REST answer names)."""
        self._call("PUT", f"/api/v2/parseDagFile/{file_token}")

    def unpause(self, dag_id: str) -> None:
        self.set_paused(dag_id, False)

    def pause(self, dag_id: str) -> None:
        self.set_paused(dag_id, True)

    def set_paused(self, dag_id: str, paused: bool) -> None:
        """Sent again when its answer was lost: it sets a state, so a second copy is harmless. The e2e's `up` in a
        clean-clone CI at 1b1990e failed on one 500 ("Database error", the API server's answer to an SQLite error)
        to the unpause of ``model_registry``."""
        self._call("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": paused}, resend=True)

    def trigger(self, dag_id: str, conf: dict | None = None) -> str:
        """Start a run now; returns its run id. The id is chosen here, so a request whose answer was lost is sent
        again without making a second run: the server's 409 for that id, after a resend, says the first request
        made it (a 409 at the first request is another run's id, an error)."""
        run_id = f"manual__{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime())}_{secrets.token_hex(4)}"
        body = {"dag_run_id": run_id, "logical_date": None, "conf": conf or {}}
        try:
            return self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", resend=True, json=body).json()["dag_run_id"]
        except AirflowError as exc:
            if exc.status == 409 and exc.resent:  # a unique-constraint conflict: our first request made it
                return run_id
            raise

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").json()["state"]

    def wait(
        self, dag_id: str, run_id: str, timeout: float = 600.0,
        progress: Callable[[str, dict[str, str | None]], None] | None = None, interval: float = 2.0,
    ) -> str:
        """Poll until the run is success or failed; ``progress(state, task_states)`` on every change."""
        import requests

        deadline = time.monotonic() + timeout
        last = state = None
        while True:
            try:
                state = self.run_state(dag_id, run_id)
                if progress is not None:
                    tasks = self.task_states(dag_id, run_id)
                    if (state, tasks) != last:
                        progress(state, tasks)
                        last = (state, tasks)
            except requests.RequestException:
                pass  # one slow or dropped poll (a busy SQLite API server) is not the run's fate
            if state in TERMINAL_STATES:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} of {dag_id} still {state} after {timeout:.0f}s")
            time.sleep(interval)

    def ensure_pool(self, name: str, slots: int, description: str = "") -> dict:
        """Create the pool ``name`` with ``slots`` unless it exists (an operator's change of its slots stays)."""
        try:
            return self._call("GET", f"/api/v2/pools/{name}").json()
        except AirflowError as exc:
            if exc.status != 404:
                raise
        return self._call("POST", "/api/v2/pools", json={"name": name, "slots": slots, "description": description,
                                                          "include_deferred": False}).json()

    def assets(self) -> list[dict]:
        """Every Asset Airflow knows, with the DAGs scheduled on it and the tasks producing it."""
        return self._call("GET", "/api/v2/assets", params={"limit": 1000}).json()["assets"]

    def queued_asset_events(self, dag_id: str) -> list[dict]:
        """The Asset events queued for ``dag_id``'s next run (each with its ``asset_id`` and ``created_at``)."""
        return self._call("GET", f"/api/v2/dags/{dag_id}/assets/queuedEvents").json()["queued_events"]

    def post_asset_event(self, asset_id: int, extra: dict | None = None) -> dict:
        """Announce that an Asset changed outside Airflow (the DAGs scheduled on it run as for a task's event)."""
        return self._call("POST", "/api/v2/assets/events", json={"asset_id": asset_id, "extra": extra or {}}).json()

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        tis = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances").json()["task_instances"]
        return {ti["task_id"]: ti["state"] for ti in tis}

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        r = self._call(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}",
            params={"full_content": "true"}, headers={"Accept": "application/json"},
        )
        content = r.json().get("content", [])
        if isinstance(content, str):
            return content
        return "\n".join(e.get("event", "") if isinstance(e, dict) else str(e) for e in content)
