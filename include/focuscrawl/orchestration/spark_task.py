"""A Spark task as a client of the warm Spark: the job's own Python runs in the task, its plans on the server.

:class:`SparkConnectJobOperator` runs ``spark_jobs/chain.py``'s steps in the Airflow task's process with
pyspark's ``SPARK_REMOTE`` set to the provider's Spark Connect connection (``spark_connect_default``,
``focuscrawl.services.spark_connect.connection``), so each job's ``get_session`` returns a client of the
running server: no JVM starts in the task. The task joins the server when a job first asks for a session
(``focuscrawl.lake.spark.joined_on_first_session``): a task whose jobs all run in process on a small lake
(``focuscrawl.lake.spark.in_process``) never connects, and runs while the server restarts. What a job does on
its driver (fitting ExtraTrees and NGBoost, building a FAISS index) runs here; its DataFrame work runs on the
server. The same job files still run
under ``spark-submit`` (``focuscrawl.services.spark_cluster.spark_submit``) for a cluster of their own.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path

from airflow.sdk import BaseOperator

from focuscrawl.lake.spark import NOTHING_TO_DO, joined_on_first_session

CONN_ID = "spark_connect_default"


class SparkJobFailed(RuntimeError):
    pass


def load_chain(jobs_dir: Path):
    """``spark_jobs/chain.py`` as a module (the folder is no package: jobs are files spark-submit runs)."""
    spec = importlib.util.spec_from_file_location("focuscrawl_spark_chain", jobs_dir / "chain.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SparkConnectJobOperator(BaseOperator):
    """Runs ``steps`` (``[job.py, args..., "--", job.py, args...]``, chain.py's argument list) on the warm Spark."""

    template_fields = ("steps",)
    ui_color = "#f4a460"

    def __init__(self, *, jobs_dir: str, steps: list[str], conn_id: str = CONN_ID, **kwargs) -> None:
        super().__init__(**kwargs)
        self.jobs_dir, self.steps, self.conn_id = jobs_dir, steps, conn_id
        self._session = None
        self._tag = f"focuscrawl-task-{uuid.uuid4().hex}"

    def _join(self, url: str):
        """A client of the jobs' shared session (``focuscrawl.services.spark_connect.jobs_session``), its URL in
        pyspark's ``SPARK_REMOTE`` for this process only (it carries the token: never logged), so each job's
        ``get_session`` returns it (:meth:`_joined`). A session the server closed (idle past its timeout) is
        renewed once."""
        from pyspark.sql import SparkSession

        from focuscrawl.config import settings
        from focuscrawl.services.spark_connect import jobs_session, renew_jobs_session

        def client(session_id: str):
            os.environ["SPARK_REMOTE"] = f"{url};session_id={session_id}"
            return SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).create()

        cfg = settings()
        session = client(jobs_session(cfg))
        try:
            version = session.version  # the first call that reaches the server
        except Exception as exc:  # noqa: BLE001 - pyspark raises its own classes per error
            if "SESSION_CLOSED" not in str(exc):
                raise
            self.log.warning("the jobs' session on the warm Spark was closed; this task opens a new one")
            session.release_session_on_close = False  # the server has released it already
            session.stop()
            session = client(renew_jobs_session(cfg))
            version = session.version
        self.log.info("on the warm Spark %s", version)
        return session

    def _joined(self, url: str):
        """The task's one session on the warm Spark, joined when a job first asks for it."""
        if self._session is None:
            try:
                session = self._join(url)
            except Exception as exc:  # noqa: BLE001 - whatever the client raises, the fix is the same
                raise SparkJobFailed(f"the warm Spark (connection {self.conn_id}) did not answer: "
                                     f"{type(exc).__name__}; `focuscrawl services status` shows it, "
                                     "`focuscrawl services up --only spark-connect` starts it") from exc
            # This task's operations carry its tag: ``on_kill`` interrupts them, not the other tasks' in the session.
            session.addTag(self._tag)
            self._session = session
        return self._session

    def execute(self, context) -> None:
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        from focuscrawl.config import settings
        from focuscrawl.core.blas import pin_openblas_kernels
        from focuscrawl.services.spark_connect import jobs_session

        pin_openblas_kernels()  # before any step imports FAISS (chain.py's own entry does the same)
        url = SparkConnectHook(self.conn_id).get_connection_url()
        # Set before any step: a job decides by it whether it is a client of the warm Spark (in_process).
        os.environ["SPARK_REMOTE"] = f"{url};session_id={jobs_session(settings())}"
        self._session = None
        with joined_on_first_session(lambda: self._joined(url)):
            status = load_chain(Path(self.jobs_dir)).main([str(s) for s in self.steps]) or 0
        if status == NOTHING_TO_DO:
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"{' '.join(map(str, self.steps))}: its input is not ready yet, nothing to do "
                                       "(its log above says what it waits for); the next run of its asset tries again")
        if status:
            raise SparkJobFailed(f"{' '.join(map(str, self.steps))}: exited with status {status} (its log above says why)")

    def on_kill(self) -> None:
        # The server keeps running the killed task's queries unless told: this task's, not the others' in the session.
        if self._session is not None:
            try:
                self._session.interruptTag(self._tag)
            except Exception:  # noqa: BLE001 - a stopped session has nothing left to interrupt
                pass
