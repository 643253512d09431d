"""The graph_estimation DAG parses, documents itself and wires the Spark job to its Delta assets."""

from __future__ import annotations

import pytest

from focuscrawl.graph.params import DEFAULT


@pytest.fixture(scope="module")
def dag(dag_bag):
    return dag_bag("graph_estimation.py")["graph_estimation"]


def test_dag_is_tagged_and_takes_its_params(dag):
    # Its doc title, owner, retries and back-off: tests/test_dag_integrity.py, for every DAG.
    assert "graph" in dag.tags
    assert dag.params["replicates"] == DEFAULT.replicates and dag.params["estimators"] == "NAIVE,MLE,SCE,WCE"


def test_spark_task_runs_the_job_on_the_sample_asset(dag, cfg):
    task = dag.get_task("graph_estimation")
    from focuscrawl.orchestration.spark_task import SparkConnectJobOperator

    assert isinstance(task, SparkConnectJobOperator) and task.jobs_dir == str(cfg.home / "spark_jobs")
    assert task.steps[0] == "graph_estimation.py"
    assert task.steps[task.steps.index("--replicates") + 1] == "{{ params.replicates }}"
    assert [a.name for a in task.inlets] == ["delta.graph_sample"]
    assert [a.name for a in task.outlets] == ["delta.graph_estimates"]
