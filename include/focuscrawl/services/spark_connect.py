"""The warm Spark: one long-lived Spark Connect server that every DAG task's job runs on.

A Spark task used to be a ``spark-submit`` of its own: a cold driver JVM per task (6-10 s idle, 96-253 s
each on the live platform under load), one at a time in a one-slot pool. Spark Connect (Spark 4's
client-server protocol; its server class ships in pip's pyspark) keeps one driver running with the
session conf of :func:`focuscrawl.lake.spark.session_conf` (Delta extension, jars, master), and a task
is a thin gRPC client (:class:`focuscrawl.orchestration.spark_task.SparkConnectJobOperator`) whose
DataFrame plans run on it. Concurrent tasks share it under Spark's fair scheduler.

Security: the server listens on the bind host only and admits a client only with the bearer token kept
in ``$FOCUSCRAWL_VAR/spark-connect/token`` (mode 0600), passed to the server in its environment, never on
a command line (``ps`` shows those). pyspark sends a token over a plain channel only to ``localhost``
(``ChannelBuilder.toChannel``), so the clients' URL names ``localhost``. With ``services up
--spark-cluster`` the server's master is the standalone cluster: the driver stays here, the executors
scale out.

The DAG tasks' jobs share one server session (:func:`jobs_session`). The server keys its Python workers (the
processes that run ``mapInPandas`` and the UDFs) by session: a task of its own session started a Python daemon
and workers of its own, each importing pandas, scikit-learn and focuscrawl again, on every task (0.8 s idle,
4 s with six busy processes on this machine's two cores, 2026-12-05; the first features task of a loaded
live run took 62.8 s to embed 76 pages, later ones 15-22 s). One session for all keeps them warm. What a
session holds besides (SQL conf, temporary views) no job sets, and a task interrupts only its own operations
(by tag: :class:`focuscrawl.orchestration.spark_task.SparkConnectJobOperator`), never the session's.

A started server is warmed in that session (``spark_jobs/warm_up.py``, a process of its own beside it): its Python
workers import what the jobs' functions need, and its driver runs a Delta write and read once, while the platform's
first data is still being fetched. Unwarmed, the loops' first runs paid for it (the first features task of a loaded
live run: 134 s, against 55 s for its second).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from focuscrawl.config import Settings
from focuscrawl.core.interpreter import spark_home
from focuscrawl.services.probe import PROBE_TIMEOUT, Probe
from focuscrawl.services.process import ManagedProcess, kept_secret, port_open, settings_env, write_private

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# One plan carries a job's Python functions with what they close over (the related-pages index:
# 40 MB at 100k pages, d = 100); the server's 128 MB default would refuse a larger site's.
MAX_MESSAGE_BYTES = 1 << 30


def token_file(cfg: Settings) -> Path:
    return Path(cfg.var_dir) / "spark-connect" / "token"


def connect_token(cfg: Settings) -> str:
    """The server's bearer token, generated on first use and kept (mode 0600) for every later start."""
    return kept_secret(token_file(cfg))


def _jobs_session_file(cfg: Settings) -> Path:
    return Path(cfg.var_dir) / "spark-connect" / "jobs-session"


def jobs_session(cfg: Settings) -> str:
    """The id of the server session the DAG tasks' jobs share (module docstring), kept for every later task."""
    try:
        return str(uuid.UUID(_jobs_session_file(cfg).read_text().strip()))
    except (OSError, ValueError):
        return renew_jobs_session(cfg)


def renew_jobs_session(cfg: Settings) -> str:
    """A new id for the jobs' session: the server refuses a closed session's id for good (one idle past the
    server's session timeout, an hour by default, is closed), and the next task opens the new one."""
    session = str(uuid.uuid4())
    write_private(_jobs_session_file(cfg), session + "\n")
    return session


def url(cfg: Settings) -> str:
    """Where clients connect (the token is not part of it: :func:`connection` adds it)."""
    return f"sc://localhost:{cfg.spark_connect_port}"


def connection(cfg: Settings) -> dict:
    """Airflow's ``spark_connect`` connection to the server (the provider's SparkConnectHook builds the URL)."""
    return {"conn_type": "spark_connect", "host": "localhost", "port": cfg.spark_connect_port,
            "password": connect_token(cfg)}


class SparkConnect:
    name = "spark-connect"

    def __init__(self, cfg: Settings, master: str | None = None) -> None:
        """``master``: where the server's executors run (default ``cfg.spark_master``, ``local[*]``)."""
        from focuscrawl.lake.spark import session_conf, submit_env

        self.cfg = cfg
        self.master = master or cfg.spark_master
        conf = {
            **session_conf(cfg, self.master),
            "spark.connect.grpc.binding.address": cfg.bind_host,
            "spark.connect.grpc.binding.port": str(cfg.spark_connect_port),
            "spark.connect.grpc.maxInboundMessageSize": str(MAX_MESSAGE_BYTES),
            # Two loops' tasks at once share the executors instead of queueing behind each other.
            "spark.scheduler.mode": "FAIR",
        }
        work = Path(cfg.var_dir) / "spark-connect"
        self.process = ManagedProcess(
            name=self.name, run_dir=Path(cfg.var_dir) / "run", log_dir=Path(cfg.var_dir) / "logs",
            command=[f"{spark_home()}/bin/spark-submit", "--class", SERVER_CLASS, "--name", "focuscrawl-warm-spark",
                     *[item for key, value in conf.items() for item in ("--conf", f"{key}={value}")],
                     "spark-internal"],
            env={**settings_env(cfg), **submit_env()}, cwd=work,
        )
        self.processes = {self.name: self.process}

    @property
    def url(self) -> str:
        return url(self.cfg)

    def _ready(self) -> bool:
        return port_open(self.cfg.bind_host, self.cfg.spark_connect_port)

    def start(self, timeout: float = 180.0) -> None:
        if self.healthy():
            return
        if self._ready():  # a server that is not ours (another var folder): ours could not bind, clients would miss
            raise RuntimeError(f"port {self.cfg.spark_connect_port} is taken by another process; stop it, or give "
                               "this platform other ports (FOCUSCRAWL_PORT_OFFSET or FOCUSCRAWL_SPARK_CONNECT_PORT)")
        (Path(self.cfg.var_dir) / "spark-connect").mkdir(parents=True, exist_ok=True)
        self.process.env = {**self.process.env, "SPARK_CONNECT_AUTHENTICATE_TOKEN": connect_token(self.cfg)}
        # Up once the protocol answers (its first session built), not when the port opens: a status or a task
        # right after the start finds it serving.
        self.process.start_until(lambda: self.probe(timeout=10.0).up, timeout, f"Spark Connect server on {self.url}")
        self.warm()

    def warm(self) -> threading.Thread:
        """``spark_jobs/warm_up.py`` on the jobs' session in a process of its own, not waited for (its log:
        ``logs/spark-connect-warm-up.log``); a failed warm-up costs the first jobs their cold start, nothing else.
        The session's URL carries the token: it goes in the process's environment, never on its command line."""
        log = Path(self.cfg.var_dir) / "logs" / "spark-connect-warm-up.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **settings_env(self.cfg),
               "SPARK_REMOTE": f"{self.url}/;token={connect_token(self.cfg)};session_id={jobs_session(self.cfg)}"}

        def run() -> None:
            with open(log, "a") as out:
                try:
                    subprocess.run([sys.executable, str(self.cfg.home / "spark_jobs" / "warm_up.py")], stdout=out,
                                   stderr=subprocess.STDOUT, timeout=900, env=env, check=False)
                except subprocess.TimeoutExpired:
                    out.write("warm-up: not done after 900 s; stopped (the first jobs pay their cold start)\n")

        thread = threading.Thread(target=run, name="spark-connect-warm-up", daemon=True)
        thread.start()
        return thread

    def stop(self) -> bool:
        return self.process.stop()

    def healthy(self) -> bool:
        """Ours runs and its port accepts: what ``start`` and the platform's watch go by (a session probe every
        few seconds on a loaded machine would restart a busy server)."""
        return self.process.running() and self._ready()

    def probe(self, timeout: float = PROBE_TIMEOUT) -> Probe:
        """One RPC of the Spark Connect protocol with the server's token (``AnalyzePlan`` for the Spark version):
        the server admits us and its driver answers."""
        if not self._ready():
            return Probe(False, f"nothing listens on port {self.cfg.spark_connect_port}")
        import uuid
        import warnings

        import grpc

        with warnings.catch_warnings():  # pyspark's connect package warns about pandas versions on import
            warnings.simplefilter("ignore")
            from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

        # One session for every probe of this platform: the first request of a new session builds it on the
        # server (seconds on a loaded machine), later ones find it (milliseconds); the server expires it idle.
        session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"focuscrawl-probe:{self.cfg.var_dir}"))
        user = base_pb2.UserContext(user_id="focuscrawl-probe")
        auth = [("authorization", f"Bearer {connect_token(self.cfg)}")]
        try:
            with grpc.insecure_channel(f"localhost:{self.cfg.spark_connect_port}") as channel:
                answer = base_pb2_grpc.SparkConnectServiceStub(channel).AnalyzePlan(base_pb2.AnalyzePlanRequest(
                    session_id=session, user_context=user, client_type="focuscrawl-probe",
                    spark_version=base_pb2.AnalyzePlanRequest.SparkVersion()), timeout=timeout, metadata=auth)
        except grpc.RpcError as exc:
            return Probe(False, f"{exc.code().name}: {exc.details()}"[:200])
        return Probe(True, f"Spark {answer.spark_version.version}")

