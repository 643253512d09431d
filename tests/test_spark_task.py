"""A DAG's Spark task (focuscrawl.orchestration.spark_task): a job whose input is not ready yet skips the task
instead of failing it, so Airflow does not retry what cannot succeed before the next asset event; every task
joins the jobs' one session on the warm Spark when a job first asks for it (one whose jobs all run in process
never does), renews it once the server has closed it, and a killed task interrupts its own operations only."""

from __future__ import annotations

import types

import pytest


class FakeSession:
    """A Spark Connect client as the operator uses it; ``closed`` names the session ids the server has closed."""

    closed: set = set()
    made: list = []

    def __init__(self, url):
        self.url, self.tags, self.interrupted, self.stopped = url, [], [], False
        self.release_session_on_close = True
        FakeSession.made.append(self)

    @property
    def version(self):
        if self.url.rsplit("session_id=", 1)[1] in FakeSession.closed:
            raise RuntimeError("[INVALID_HANDLE.SESSION_CLOSED] The handle is invalid. Session was closed.")
        return "4.2.0"

    def addTag(self, tag):
        self.tags.append(tag)

    def interruptTag(self, tag):
        self.interrupted.append(tag)

    def stop(self):
        self.stopped = True


@pytest.fixture
def operator(monkeypatch, tmp_path):
    """The operator with the warm Spark's client replaced: ``set_status(n)`` makes the chain return ``n``."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
    from pyspark.sql import SparkSession

    import focuscrawl.orchestration.spark_task as spark_task

    monkeypatch.setenv("SPARK_REMOTE", "")  # execute sets it for its process: restored after the test
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    monkeypatch.setattr(SparkConnectHook, "get_connection_url", lambda self: "sc://localhost:1/;token=t")
    monkeypatch.setattr(FakeSession, "closed", set())
    monkeypatch.setattr(FakeSession, "made", [])

    class Builder:
        def remote(self, url):
            self.url = url
            return self

        def create(self):
            return FakeSession(self.url)

    monkeypatch.setattr(SparkSession, "builder", Builder())
    status = {"n": 0, "spark": True}

    def chain(steps):
        if status["spark"]:  # a job on Spark asks for its session
            from focuscrawl.lake.spark import get_session

            get_session()
        return status["n"]

    monkeypatch.setattr(spark_task, "load_chain", lambda jobs_dir: types.SimpleNamespace(main=chain))

    def make(task_id="train"):
        return spark_task.SparkConnectJobOperator(task_id=task_id, jobs_dir=str(tmp_path), steps=["outlinks_train.py"])

    op = make()
    op.set_status = lambda n: status.__setitem__("n", n)
    op.on_spark = lambda on: status.__setitem__("spark", on)
    op.make = make
    return op


def test_a_job_with_nothing_to_do_skips_its_task_and_a_failed_one_fails_it(operator):
    from airflow.sdk.exceptions import AirflowSkipException

    from focuscrawl.lake.spark import NOTHING_TO_DO
    from focuscrawl.orchestration.spark_task import SparkJobFailed

    operator.execute({})  # status 0: done
    operator.set_status(NOTHING_TO_DO)
    with pytest.raises(AirflowSkipException, match="not ready yet"):
        operator.execute({})
    operator.set_status(1)
    with pytest.raises(SparkJobFailed, match="exited with status 1"):
        operator.execute({})


def test_every_task_joins_the_jobs_one_session_and_interrupts_only_its_own_operations(operator):
    import os

    from focuscrawl.config import settings
    from focuscrawl.services.spark_connect import jobs_session

    other = operator.make("features")
    operator.execute({})
    other.execute({})
    first, second = FakeSession.made
    session = jobs_session(settings())
    assert first.url == second.url == f"sc://localhost:1/;token=t;session_id={session}"
    assert os.environ["SPARK_REMOTE"] == first.url  # what each job's get_session connects with
    assert first.tags and first.tags != second.tags  # each task tags its own operations
    operator.on_kill()
    assert first.interrupted == first.tags and not second.interrupted and not first.stopped


def test_a_task_whose_jobs_all_run_in_process_never_joins_the_warm_spark(operator, monkeypatch):
    """Its steps still see ``SPARK_REMOTE`` (they are a DAG task's: ``in_process`` holds), so while the server is down
    (the kill round restarts it) such a task runs; one whose job asks for a session fails naming the fix."""
    import os

    from pyspark.sql import SparkSession

    from focuscrawl.config import settings
    from focuscrawl.orchestration.spark_task import SparkJobFailed
    from focuscrawl.services.spark_connect import jobs_session

    def refused(url):
        raise ConnectionRefusedError(url)

    monkeypatch.setattr(SparkSession.builder, "create", lambda: refused(SparkSession.builder.url))
    operator.on_spark(False)
    operator.execute({})
    assert FakeSession.made == [] and os.environ["SPARK_REMOTE"].endswith(f"session_id={jobs_session(settings())}")
    operator.on_spark(True)
    with pytest.raises(SparkJobFailed, match="did not answer: ConnectionRefusedError.*services up --only spark-connect"):
        operator.execute({})


def test_a_session_the_server_closed_is_renewed_once_and_kept_for_the_next_tasks(operator, monkeypatch):
    import focuscrawl.services.spark_connect as spark_connect
    from focuscrawl.config import settings
    from focuscrawl.orchestration.spark_task import SparkJobFailed

    closed = spark_connect.jobs_session(settings())
    FakeSession.closed.add(closed)
    operator.execute({})
    refused, joined = FakeSession.made
    renewed = spark_connect.jobs_session(settings())
    assert renewed != closed and joined.url.endswith(f"session_id={renewed}")
    assert refused.stopped and not refused.release_session_on_close  # the client closed, nothing released
    operator.make().execute({})
    assert FakeSession.made[-1].url.endswith(f"session_id={renewed}")

    # Refused again after the renewal: no loop of renewals, the task fails naming the fix.
    FakeSession.closed.add(renewed)
    monkeypatch.setattr(spark_connect, "renew_jobs_session", lambda cfg: renewed)
    with pytest.raises(SparkJobFailed, match="services up --only spark-connect"):
        operator.make().execute({})


MIB = 2**20


@pytest.mark.parametrize("remote, size, bound, expected", [
    (None, MIB, 64, False),                 # a driver of its own (spark-submit, the tests' session): always Spark
    ("sc://localhost", MIB, 64, True),
    ("sc://localhost", 64 * MIB, 64, True),
    ("sc://localhost", 64 * MIB + 1, 64, False),
    ("sc://localhost", MIB, 0, False),      # FOCUSCRAWL_SPARK_IN_PROCESS_MIB=0: always Spark
])
def test_only_a_client_of_the_warm_spark_on_a_small_table_runs_its_job_in_process(cfg, monkeypatch, remote, size,
                                                                                  bound, expected):
    import dataclasses

    from focuscrawl.lake.spark import in_process
    from focuscrawl.outlinks.tables import SNAPSHOTS

    monkeypatch.setattr("focuscrawl.lake.size_bytes", lambda spec, cfg: size)
    if remote:
        monkeypatch.setenv("SPARK_REMOTE", remote)
    else:
        monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert in_process(SNAPSHOTS, dataclasses.replace(cfg, spark_in_process_mib=bound)) is expected


def test_a_tables_size_is_its_current_versions_parquet(cfg, tmp_path):
    """What ``in_process`` bounds: the bytes of the files the current version reads, not the log's history."""
    import dataclasses

    import pandas as pd

    from focuscrawl import lake
    from focuscrawl.ephemeral.tables import SOURCE_ESTIMATES

    local = dataclasses.replace(cfg, lake=str(tmp_path / "lake"))
    assert lake.size_bytes(SOURCE_ESTIMATES, local) == 0  # not made yet
    frame = pd.DataFrame({"source_url": [f"http://s{i}.example/" for i in range(500)], "lam": 0.5})
    lake.replace_frame(frame, SOURCE_ESTIMATES, local)
    first = lake.size_bytes(SOURCE_ESTIMATES, local)
    parquet = sum(p.stat().st_size for p in (tmp_path / "lake" / "source_estimates").glob("*.parquet"))
    assert 0 < first == parquet
    lake.replace_frame(frame.head(5), SOURCE_ESTIMATES, local)  # the old file stays on disk, outside the version
    assert 0 < lake.size_bytes(SOURCE_ESTIMATES, local) < first
