"""``focuscrawl services up|down|status``: the engines of the embedded default, started in order.

Every engine is a set of :class:`ManagedProcess` (own process group, pid file under
``$FOCUSCRAWL_VAR/run``). ``down`` stops every engine by its pid files, whatever started it,
then kills any stray process group still running out of our var folder, so nothing of ours is
left running.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from focuscrawl.config import Settings
from focuscrawl.services.probe import PROBE_TIMEOUT, Probe, failed
from focuscrawl.services.process import (
    ManagedProcess, group_members, port_open, proc_stats, recorded_pid, settings_env,
)

# The warm Spark and the model registry before Airflow: its Spark tasks run on the one and log to the other.
DEFAULT_SERVICES = ("kafka", "spark-connect", "mlflow", "airflow", "world")


def world_available() -> bool:
    """The world server is another area's module; run it only once it exists."""
    try:
        return importlib.util.find_spec("focuscrawl.world.__main__") is not None
    except ModuleNotFoundError:
        return False


class WorldService:
    """The local web the crawlers fetch from (``python -m focuscrawl.world serve``)."""

    name = "world"

    def __init__(self, cfg: Settings, args: Sequence[str] = ()) -> None:
        """``args``: more ``focuscrawl world serve`` arguments (a project's ``[world]`` knobs)."""
        self.cfg = cfg
        self.process = ManagedProcess(
            name=self.name, run_dir=Path(cfg.var_dir) / "run", log_dir=Path(cfg.var_dir) / "logs",
            command=[sys.executable, "-m", "focuscrawl.world", "serve", "--host", cfg.bind_host,
                     "--port", str(cfg.world_port), "--eval-port", str(cfg.world_eval_port),
                     "--clock-file", str(Path(cfg.var_dir) / "world" / "clock.json"), *args],
            env=settings_env(cfg), cwd=Path(cfg.home),
        )
        self.processes = {self.name: self.process}

    @property
    def url(self) -> str:
        return self.cfg.world_url

    def _ready(self) -> bool:
        return self.probe().up

    def probe(self, timeout: float = PROBE_TIMEOUT) -> Probe:
        """An HTTP request for its ``robots.txt``."""
        import requests

        if not port_open(self.cfg.bind_host, self.cfg.world_port, timeout=min(timeout, 0.5)):
            return Probe(False, f"nothing listens on {self.url}")
        try:
            code = requests.get(f"{self.url}/robots.txt", timeout=timeout).status_code
        except requests.RequestException as exc:
            return failed(exc)
        return Probe(code == 200, f"HTTP {code} for /robots.txt")

    def start(self, timeout: float = 120.0) -> None:
        if self.healthy():
            return
        self.process.start_until(self._ready, timeout, f"world server on {self.url}")

    def stop(self) -> bool:
        return self.process.stop()

    def healthy(self) -> bool:
        return self.process.running() and self._ready()

    def alive(self) -> bool:
        return self.process.running() and port_open(self.cfg.bind_host, self.cfg.world_port)


@dataclass(frozen=True)
class ServiceStatus:
    """A service as its probe found it (:mod:`focuscrawl.services.probe`). ``ours``: a process this var folder
    started runs (its pid file), which a probe alone cannot tell: an answering service that is not ours is
    another platform's on the same ports."""

    name: str
    up: bool
    url: str
    detail: str = ""
    probe: Probe | None = None
    ours: bool = False

    @property
    def fix(self) -> str:
        """What to do about it: nothing when up; else the command that starts it (what of it is missing: Airflow
        starts only its components that are not running), and its log when a process of ours runs."""
        if self.up:
            return ""
        log = {"airflow": "airflow-api-server", "spark": "spark-master"}.get(self.name, self.name)
        return f"`focuscrawl services up --only {self.name}`" + (f"; its log: `focuscrawl logs {log}`" if self.ours else "")


class ServiceManager:
    def __init__(self, cfg: Settings, dags_folder: Path | None = None, spark_cluster: bool = False,
                 world_args: Sequence[str] = ()) -> None:
        from focuscrawl.services.airflow import AirflowService
        from focuscrawl.services.kafka import KafkaBroker
        from focuscrawl.services.mlflow import MlflowServer
        from focuscrawl.services.spark_cluster import SparkCluster
        from focuscrawl.services.spark_connect import SparkConnect

        self.cfg = cfg
        self.spark_cluster = SparkCluster(cfg)
        # The warm Spark's executors run on the cluster when it is part of this start, else on the configured master.
        master = self.spark_cluster.url if spark_cluster else None
        self.services = {
            "kafka": KafkaBroker(cfg),
            "spark-connect": SparkConnect(cfg, master=master),
            "mlflow": MlflowServer(cfg),
            "airflow": AirflowService(cfg, dags_folder=dags_folder),
            "world": WorldService(cfg, world_args),  # a project's [world] knobs (Project.world.serve_args)
            "spark": self.spark_cluster,
        }

    @staticmethod
    def parse_only(only: str | None, spark_cluster: bool = False) -> list[str]:
        """``--only kafka,airflow`` -> start order; unknown names fail with the known ones listed."""
        names = [n.strip().lower() for n in only.split(",") if n.strip()] if only else list(DEFAULT_SERVICES)
        unknown = [n for n in names if n not in (*DEFAULT_SERVICES, "spark")]
        if unknown:
            raise ValueError(f"unknown service(s) {', '.join(unknown)}; known: {', '.join((*DEFAULT_SERVICES, 'spark'))}")
        if spark_cluster and "spark" not in names:
            names.append("spark")
        # The cluster first: the warm Spark's executors run on it.
        order = ["spark", *DEFAULT_SERVICES]
        return [n for n in order if n in names]

    def up(self, names: list[str], log=print) -> dict[str, float]:
        """Start ``names``; returns seconds each took. The world is skipped while absent.

        The Spark cluster, when named, starts first (the warm Spark's executors run on it); the others start
        side by side, since none needs another to start: one after another they took 41 s on the live
        platform's start (Airflow 13.8 s, the world 10.8 s, MLflow 6.8 s), each mostly one process's wait.
        A service that fails to start fails ``up`` once the others have started (``down`` stops them)."""
        from concurrent.futures import ThreadPoolExecutor

        if "world" in names and not world_available():
            log("world: skipped (module focuscrawl.world not installed yet)")
            names = [n for n in names if n != "world"]
        took: dict[str, float] = {}

        def start(name: str) -> None:
            started = time.monotonic()
            self.services[name].start()
            took[name] = time.monotonic() - started
            log(f"{name}: up in {took[name]:.1f}s  {self.services[name].url}")

        if "spark" in names:
            start("spark")
        rest = [n for n in names if n != "spark"]
        with ThreadPoolExecutor(max(1, len(rest))) as pool:
            futures = [pool.submit(start, name) for name in rest]
        for future in futures:
            future.result()  # the first failure, raised once every start has ended
        return took

    def down(self, log=print) -> list[str]:
        """Stop everything ours: services in reverse start order, then stray groups."""
        stopped = []
        for name in ("world", "airflow", "mlflow", "spark-connect", "kafka", "spark"):
            if self.services[name].stop():
                stopped.append(name)
                log(f"{name}: stopped")
        strays = stray_groups(self.cfg)
        for pgid in strays:
            log(f"killing stray process group {pgid}")
            _kill_group(pgid)
        return stopped

    def status(self, timeout: float = PROBE_TIMEOUT) -> list[ServiceStatus]:
        """Every service by its probe (all at once, each within ``timeout``), with whether a process of ours runs."""
        from concurrent.futures import ThreadPoolExecutor

        names = ("kafka", "spark-connect", "mlflow", "airflow", "world", "spark")
        with ThreadPoolExecutor(len(names)) as pool:
            probes = dict(zip(names, pool.map(lambda n: self._probe(n, timeout), names)))
        out = []
        for name in names:
            svc = self.services[name]
            if name == "world" and not world_available():
                out.append(ServiceStatus(name, False, svc.url, "not installed"))
                continue
            detail = ""
            if name == "airflow":
                detail = f"login: {self.cfg.airflow_user}, password in {svc.password_file}"
                if self.cfg.airflow_password:
                    detail = f"login: {self.cfg.airflow_user}, password from FOCUSCRAWL_AIRFLOW_PASSWORD"
            if name == "mlflow":
                detail = f"login: {self.cfg.mlflow_user}, password " + (
                    "from FOCUSCRAWL_MLFLOW_PASSWORD" if self.cfg.mlflow_password else f"in {svc.password_file}")
            procs = svc.processes.values() if isinstance(svc.processes, dict) else svc.processes
            ours = any(p.running() for p in procs)
            out.append(ServiceStatus(name, probes[name].up, svc.url, detail, probes[name], ours))
        return out

    def _probe(self, name: str, timeout: float) -> Probe:
        if name == "world" and not world_available():
            return Probe(False, "not installed")
        try:
            return self.services[name].probe(timeout)
        except Exception as exc:  # noqa: BLE001 - a probe that fails says why, it never fails status
            return failed(exc)


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def our_processes(cfg: Settings) -> dict[int, int]:
    """``{pid: pgid}`` of live processes run out of our var folder: its path on their command
    line, our ``AIRFLOW_HOME`` in their environment (Airflow's task workers), or a member of the
    session of a process our pid files name, alive or killed (the LocalExecutor workers of a
    SIGKILLed scheduler, whose title overwrites their environment: ``ManagedProcess.stop_leftovers``).
    The caller and its ancestors (a shell or pytest holding FOCUSCRAWL_VAR) are never counted."""
    var = str(Path(cfg.var_dir))
    airflow_home = f"AIRFLOW_HOME={Path(cfg.var_dir) / 'airflow'}".encode()
    sessions = {str(pid) for pid in map(recorded_pid, (Path(cfg.var_dir) / "run").glob("*.pid")) if pid is not None}
    mine = _ancestors()
    found = {}
    for pid, stat in proc_stats():
        if pid in mine:
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if (f"{var}/" in cmdline or cmdline.rstrip().endswith(var) or airflow_home in environ
                or stat[3] in sessions):
            found[pid] = int(stat[2])  # its process group (stat[3] is its session)
    return found


def stray_groups(cfg: Settings) -> list[int]:
    own = os.getpgid(0)
    return sorted({pgid for pgid in our_processes(cfg).values() if pgid != own})


def _kill_group(pgid: int, grace: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and group_members(pgid):
            time.sleep(0.1)
        if not group_members(pgid):
            return
