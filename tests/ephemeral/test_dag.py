"""The source_schedule DAG parses and wires the Spark job, the publish task and the assets."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def dag(dag_bag):
    return dag_bag("source_schedule.py")["source_schedule"]


def test_dag_is_tagged_with_its_seed_and_takes_its_params(dag):
    # Its doc title, owner, retries and back-off: tests/test_dag_integrity.py, for every DAG.
    assert "seed-001" in dag.tags
    assert dag.params["budget"] == 0.025 and dag.params["host_min_interval_s"] == 60.0


def test_spark_task_runs_the_job_then_publishes(dag, cfg):
    job = dag.get_task("source_schedule")
    from focuscrawl.orchestration.spark_task import SparkConnectJobOperator

    assert isinstance(job, SparkConnectJobOperator) and job.jobs_dir == str(cfg.home / "spark_jobs")
    assert job.steps[:3] == ["source_schedule.py", "--budget", "{{ params.budget }}"]
    assert [a.name for a in job.inlets] == ["delta.source_recrawls", "delta.page_clicks"]
    assert [a.name for a in job.outlets] == ["delta.source_estimates", "delta.source_schedule"]
    assert [t.task_id for t in job.downstream_list] == ["publish_schedule"]
    publish = dag.get_task("publish_schedule")
    assert [a.uri for a in publish.outlets] == [f"kafka://{cfg.kafka_bootstrap}/focuscrawl.source_schedule"]
