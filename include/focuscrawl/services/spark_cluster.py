"""A Spark standalone cluster (one master, N workers) from pyspark's own launcher classes.

No Spark download: pyspark's package folder is a full SPARK_HOME, and ``bin/spark-class`` runs
``org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` in the foreground, so each is a
:class:`ManagedProcess` in its own group. Everything listens on the bind host; the master URL is
``settings().spark_cluster_url`` (set ``FOCUSCRAWL_SPARK_MASTER`` to it to use the cluster).
:func:`spark_submit` runs a job the way the DAGs' SparkSubmitOperator does, on any master.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from focuscrawl.config import Settings
from focuscrawl.core.interpreter import spark_home
from focuscrawl.services.probe import PROBE_TIMEOUT, Probe, failed
from focuscrawl.services.process import ManagedProcess, port_open, settings_env, wait_until


class SparkSubmitError(RuntimeError):
    pass


def spark_submit(cfg: Settings, application: Path | str, *args: str, timeout: float = 900.0) -> str:
    """Run ``application`` with pyspark's ``spark-submit`` on ``cfg.spark_master``; returns its stdout.

    Same command line as ``dags/common.py``'s ``spark_job`` (session conf as ``--conf``) and the resolved
    settings in the environment, so what runs here runs unchanged under Airflow, locally or on a cluster.
    """
    from focuscrawl.lake.spark import session_conf, submit_env

    conf = [item for key, value in session_conf(cfg).items() if key != "spark.master" for item in ("--conf", f"{key}={value}")]
    command = [f"{spark_home()}/bin/spark-submit", "--master", cfg.spark_master, *conf, str(application), *args]
    env = {**os.environ, **settings_env(cfg), **submit_env()}
    done = subprocess.run(command, env=env, cwd=str(cfg.home), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SparkSubmitError(f"spark-submit {Path(application).name} on {cfg.spark_master} failed "
                               f"({done.returncode}); last lines but Spark's INFO log:\n{_said(done.stderr)}")
    return done.stdout


_INFO = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ")


def _said(stderr: str, lines: int = 40) -> str:
    """The tail of a job's stderr without Spark's INFO lines, which the JVM keeps writing after the
    driver's traceback and would otherwise push it out of the message."""
    return "\n".join([line for line in stderr.splitlines() if not _INFO.match(line)][-lines:])


class SparkCluster:
    name = "spark"

    def __init__(self, cfg: Settings, workers: int = 2, worker_cores: int = 1, worker_memory: str = "1g") -> None:
        self.cfg = cfg
        home = spark_home()
        self.work_dir = Path(cfg.var_dir) / "spark-cluster"
        # Web UIs sit beside the master port, moved by the same offset as every other port.
        self.webui_port = cfg.spark_master_port + 1
        env = {
            **settings_env(cfg),
            "SPARK_HOME": home,
            "SPARK_LOG_DIR": str(self.work_dir / "logs"),
            "SPARK_LOCAL_IP": cfg.bind_host,
            "SPARK_NO_DAEMONIZE": "1",
            # The REST submission server listens on a fixed port (6066) whatever the offset: jobs
            # are submitted through the master port, so it is off and parallel clusters coexist.
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }

        def managed(name: str, *args: str) -> ManagedProcess:
            return ManagedProcess(
                name=name, run_dir=Path(cfg.var_dir) / "run", log_dir=Path(cfg.var_dir) / "logs",
                command=[f"{home}/bin/spark-class", *args], env=env, cwd=self.work_dir,
            )

        self.master = managed(
            "spark-master", "org.apache.spark.deploy.master.Master",
            "--host", cfg.bind_host, "--port", str(cfg.spark_master_port), "--webui-port", str(self.webui_port),
        )
        self.workers = [
            managed(
                f"spark-worker-{i}", "org.apache.spark.deploy.worker.Worker",
                "--host", cfg.bind_host, "--cores", str(worker_cores), "--memory", worker_memory,
                "--webui-port", str(self.webui_port + 1 + i), "--work-dir", str(self.work_dir / f"worker-{i}"),
                self.url,
            )
            for i in range(workers)
        ]

    @property
    def url(self) -> str:
        return self.cfg.spark_cluster_url

    @property
    def webui_url(self) -> str:
        return f"http://{self.cfg.bind_host}:{self.webui_port}"

    @property
    def processes(self) -> list[ManagedProcess]:
        return [self.master, *self.workers]

    def state(self) -> dict:
        """The master's own view (``/json/``: workers, cores, running and completed applications); {} when down."""
        import requests

        try:
            return requests.get(f"{self.webui_url}/json/", timeout=2).json()
        except (requests.RequestException, ValueError):
            return {}

    def alive_workers(self) -> int:
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def completed_apps(self) -> list[str]:
        """Names of the applications that ran on this cluster, oldest first."""
        return [a["name"] for a in sorted(self.state().get("completedapps", []), key=lambda a: a.get("starttime", 0))]

    def start(self, timeout: float = 90.0) -> None:
        if self.healthy():
            return
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.master.start()
        wait_until(lambda: port_open(self.cfg.bind_host, self.cfg.spark_master_port), timeout,
                   f"Spark master on {self.url}", log=self.master)
        for worker in self.workers:
            worker.start()
        wait_until(lambda: self.alive_workers() >= len(self.workers), timeout,
                   f"{len(self.workers)} Spark workers registered with {self.url}", log=self.master)

    def stop(self) -> bool:
        # Workers first, so the master does not log them as lost.
        stopped = [w.stop() for w in self.workers]
        return self.master.stop() or any(stopped)

    def probe(self, timeout: float = PROBE_TIMEOUT) -> Probe:
        """The master's own view over HTTP: up when every worker of ours is registered with it as alive."""
        import requests

        if not port_open(self.cfg.bind_host, self.webui_port, timeout=min(timeout, 0.5)):
            return Probe(False, f"nothing listens on {self.webui_url}")
        try:
            state = requests.get(f"{self.webui_url}/json/", timeout=timeout).json()
        except (requests.RequestException, ValueError) as exc:
            return failed(exc)
        alive = sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")
        return Probe(alive >= len(self.workers), f"{alive} of {len(self.workers)} workers alive")

    def healthy(self) -> bool:
        return all(p.running() for p in self.processes) and self.alive_workers() >= len(self.workers)
