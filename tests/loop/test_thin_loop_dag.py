"""The thin_loop DAG parses and wires the Spark job, the publish task and the assets as declared."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import BundleDagBag

    bag = BundleDagBag(dag_folder=str(ROOT / "dags" / "thin_loop.py"), bundle_path=ROOT / "dags")
    assert bag.import_errors == {}
    return bag.dags["thin_loop"]


def test_dag_documents_itself_and_retries_with_back_off(dag):
    assert dag.doc_md.startswith("# thin_loop")
    assert set(dag.tags) == {"focuscrawl", "thin-loop", "priorities"}
    assert dag.params["min_posts"] == 1
    for t in dag.tasks:
        assert t.owner == "focuscrawl"
        # The data-quality gate does not retry: no retry can fix the data.
        assert (t.retries, t.retry_exponential_backoff) == ((0, True) if t.task_id == "quality_reddit_posts" else (2, True))
    assert [t.task_id for t in dag.get_task("quality_reddit_posts").downstream_list] == ["user_priorities"]


def test_spark_task_runs_the_job_with_the_session_conf_then_publishes(dag, cfg):
    spark_task = dag.get_task("user_priorities")
    assert spark_task.application == str(cfg.home / "spark_jobs" / "user_priorities.py")
    assert spark_task.conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert "delta-spark" in spark_task.conf["spark.jars"]
    assert spark_task.application_args == ["--min-posts", "{{ params.min_posts }}"]
    assert [t.task_id for t in spark_task.downstream_list] == ["publish_priorities"]
    assert [a.name for a in spark_task.inlets] == ["delta.reddit_posts"]
    assert [a.name for a in spark_task.outlets] == ["delta.user_priorities"]
    publish = dag.get_task("publish_priorities")
    assert [a.uri for a in publish.outlets] == [f"kafka://{cfg.kafka_bootstrap}/focuscrawl.user_priorities"]


def test_spark_submit_finds_pyspark_and_this_interpreter(dag):
    import sys

    env = dag.get_task("user_priorities").env_vars
    assert Path(env["SPARK_HOME"], "bin", "spark-class").exists()
    assert env["PYSPARK_PYTHON"] == sys.executable
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
