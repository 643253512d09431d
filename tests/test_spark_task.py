"""A DAG's Spark task (focuscrawl.orchestration.spark_task): a job whose input is not ready yet skips the task
instead of failing it, so Airflow does not retry what cannot succeed before the next asset event."""

from __future__ import annotations

import types

import pytest


@pytest.fixture
def operator(monkeypatch, tmp_path):
    """The operator with the warm Spark's client replaced: ``set_status(n)`` makes the chain return ``n``."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
    from pyspark.sql import SparkSession

    import focuscrawl.orchestration.spark_task as spark_task

    monkeypatch.setenv("SPARK_REMOTE", "")  # execute sets it for its process: restored after the test
    monkeypatch.setattr(SparkConnectHook, "get_connection_url", lambda self: "sc://localhost:1/;token=t")

    class Builder:
        def remote(self, url):
            return self

        def getOrCreate(self):
            return types.SimpleNamespace(version="4.2.0")

    monkeypatch.setattr(SparkSession, "builder", Builder())
    status = {"n": 0}
    monkeypatch.setattr(spark_task, "load_chain", lambda jobs_dir: types.SimpleNamespace(main=lambda steps: status["n"]))
    op = spark_task.SparkConnectJobOperator(task_id="train", jobs_dir=str(tmp_path), steps=["outlinks_train.py"])
    op.set_status = lambda n: status.__setitem__("n", n)
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
