"""A background process we own: its own process group, a pid file under ``var/run``, a log under ``var/logs``.

``stop`` signals the whole group, so children (Airflow's scheduler, API server, DAG processor,
a JVM's forks) go with their parent and ``services down`` leaves nothing of ours running.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Write a secret with mode 0600 from the start (never world-readable, even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def kept_secret(path: Path) -> str:
    """A random secret generated on first use and kept (mode 0600) at ``path`` for every later use."""
    try:
        secret = path.read_text().strip()
    except OSError:
        secret = ""
    if not secret:
        secret = secrets.token_urlsafe(32)
        write_private(path, secret)
    return secret


def kept_password(path: Path, user: str, configured: str | None) -> str:
    """``user``'s login password: ``configured``, else the one generated on first use; kept (mode 0600) at
    ``path`` as ``{user: password}``, the JSON file Airflow's Simple auth manager reads."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        stored = {}
    wanted = configured or stored.get(user) or secrets.token_urlsafe(16)
    if stored != {user: wanted}:
        write_private(path, json.dumps({user: wanted}) + "\n")
    return wanted


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return _not_zombie(pid)


def _not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class ManagedProcess:
    name: str
    run_dir: Path
    log_dir: Path
    command: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: Path | None = None
    # The Popen of a process this object started: kept so its exit code can be read
    # (a dropped Popen is reaped by subprocess's own clean-up, exit code lost).
    _popen: subprocess.Popen | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.log_dir / f"{self.name}.log"

    def pid(self) -> int | None:
        pid = recorded_pid(self.pid_file)
        return pid if pid is not None and pid_alive(pid) else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self) -> int:
        existing = self.pid()
        if existing:
            return existing
        self.stop_leftovers()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(self.env or {})
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=str(self.cwd) if self.cwd else None,
                start_new_session=True,  # own process group: stop() reaches every child
            )
        self._popen = proc
        self.pid_file.write_text(str(proc.pid))
        return proc.pid

    def stop_leftovers(self) -> bool:
        """A process's children may outlive it in its session (Airflow's scheduler leaves its LocalExecutor
        workers, and each task runs in a process group of its own there): stop them (before a new one starts,
        and on stop), so none is orphaned. True if there were any.

        Started with its own session, the process's session id is its pid, and Linux does not hand out a pid
        still in use as a session id, so a member of that session is its child, however it looks: the
        LocalExecutor workers set their title over their environment, so neither their command line nor their
        environment names our var folder (make chaos at 8cd6a2e: 8 workers of SIGKILLed schedulers outlived
        `down`; at 06ea6af, 12 processes of joblib pools in task process groups)."""
        old = recorded_pid(self.pid_file)
        if old is None:
            return False
        groups = session_groups(old)
        if not groups:
            return False
        for pgid in groups:
            _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_group_alive(pgid) for pgid in groups):
            time.sleep(0.1)
        for pgid in groups:
            _signal_group(pgid, signal.SIGKILL)
        return True

    def start_until(self, ready, timeout: float, what: str) -> None:
        """Start it and wait until ``ready()``; if it never gets there (or the wait is interrupted) it is
        stopped again, so a failed start leaves no half-started service behind."""
        self.start()
        try:
            wait_until(ready, timeout, what, log=self)
        except BaseException:
            self.stop()
            raise

    def returncode(self) -> int | None:
        """Exit code of the process this object started, once it has ended (negative: killed by
        that signal); None while it runs or when another object started it. Call it before
        :meth:`pid`/:meth:`running`, which reap the zombie without keeping its status."""
        return self._popen.poll() if self._popen is not None else None

    def stop(self, timeout: float = 20.0, sig: int = signal.SIGTERM) -> bool:
        """Signal the process group, wait, then SIGKILL what is left. True if something was stopped."""
        pid = self.pid()
        if pid is None:  # gone, perhaps SIGKILLed: what it started may still run in its group
            left = self.stop_leftovers()
            self.pid_file.unlink(missing_ok=True)
            return left
        try:
            pgid = os.getpgid(pid)
        except ProcessLookupError:
            pgid = pid
        _signal_group(pgid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_alive(pgid):
            time.sleep(0.2)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _group_alive(pgid):
                time.sleep(0.1)
        self.stop_leftovers()  # its session's other groups (an Airflow task's own group)
        self.pid_file.unlink(missing_ok=True)
        return True

    def kill(self) -> None:
        """SIGKILL the group at once (fault tests)."""
        self.stop(timeout=0, sig=signal.SIGKILL)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def recorded_pid(pid_file: Path) -> int | None:
    """The pid a pid file names, alive or not; None if there is no readable one."""
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def proc_stats():
    """``(pid, fields)`` of every live (not zombie) process, ``fields`` its /proc stat after the command name
    (0: state, 1: parent, 2: process group, 3: session)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 3 and fields[0] != "Z":
            yield int(entry.name), fields


def group_members(pgid: int) -> list[int]:
    return [pid for pid, fields in proc_stats() if fields[2] == str(pgid)]


def session_groups(sid: int) -> set[int]:
    """The process groups of session ``sid``'s live members."""
    return {int(fields[2]) for _, fields in proc_stats() if fields[3] == str(sid)}


def _group_alive(pgid: int) -> bool:
    for pid in group_members(pgid):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    return bool(group_members(pgid))


def wait_until(check, timeout: float, what: str, log: ManagedProcess | None = None, interval: float = 0.25):
    """Poll ``check`` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        if log is not None and not log.running():
            raise RuntimeError(f"{what}: process exited early. Last log lines ({log.log_file}):\n{log.log_tail()}")
        time.sleep(interval)
    tail = f"\nLast log lines ({log.log_file}):\n{log.log_tail()}" if log else ""
    raise TimeoutError(f"{what} not ready after {timeout:.0f}s{tail}")


def settings_env(cfg) -> dict[str, str]:
    """The resolved settings as ``FOCUSCRAWL_*`` variables, so child processes (Airflow tasks,
    the world, spark-submit) see exactly the values the parent resolved, not their own defaults.
    The passwords stay out: no task needs Airflow's, and a task that logs a model reads MLflow's from its file
    (:func:`focuscrawl.services.mlflow.credentials`), so neither reaches every child's environment."""
    env = {
        "FOCUSCRAWL_HOME": str(cfg.home),
        "FOCUSCRAWL_VAR": str(cfg.var_dir),
        "FOCUSCRAWL_JARS": str(cfg.jars_dir),
        "FOCUSCRAWL_LAKE": cfg.lake,
        "FOCUSCRAWL_BIND_HOST": cfg.bind_host,
        "FOCUSCRAWL_KAFKA_PORT": str(cfg.kafka_port),
        "FOCUSCRAWL_KAFKA_CONTROLLER_PORT": str(cfg.kafka_controller_port),
        "FOCUSCRAWL_KAFKA_BOOTSTRAP": cfg.kafka_bootstrap,
        "FOCUSCRAWL_KAFKA_PARTITIONS": str(cfg.kafka_partitions),
        "FOCUSCRAWL_KAFKA_REPLICATION": str(cfg.kafka_replication),
        "FOCUSCRAWL_KAFKA_HEAP": cfg.kafka_heap,
        "FOCUSCRAWL_AIRFLOW_PORT": str(cfg.airflow_port),
        "FOCUSCRAWL_AIRFLOW_USER": cfg.airflow_user,
        "FOCUSCRAWL_MLFLOW_PORT": str(cfg.mlflow_port),
        "FOCUSCRAWL_MLFLOW_USER": cfg.mlflow_user,
        "FOCUSCRAWL_WORLD_PORT": str(cfg.world_port),
        "FOCUSCRAWL_WORLD_EVAL_PORT": str(cfg.world_eval_port),
        "FOCUSCRAWL_SPARK_MASTER": cfg.spark_master,
        "FOCUSCRAWL_SPARK_MASTER_PORT": str(cfg.spark_master_port),
        "FOCUSCRAWL_SPARK_DRIVER_MEMORY": cfg.spark_driver_memory,
        "FOCUSCRAWL_SPARK_CONNECT_PORT": str(cfg.spark_connect_port),
        "FOCUSCRAWL_SPARK_IN_PROCESS_MIB": str(cfg.spark_in_process_mib),
        "FOCUSCRAWL_CATALOG_DB": cfg.catalog_db,
        "FOCUSCRAWL_USER_AGENT": cfg.user_agent,
        "FOCUSCRAWL_METRICS_PORT": str(cfg.metrics_port),
        "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": ",".join(cfg.allow_private_hosts),
    }
    if cfg.data_dir is not None:
        env["FOCUSCRAWL_DATA"] = str(cfg.data_dir)
    if cfg.mlflow_address is not None:
        env["FOCUSCRAWL_MLFLOW_URL"] = cfg.mlflow_address
    return env

