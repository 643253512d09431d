"""What every focuscrawl DAG shares: the retry policy, and how a Spark job is submitted.

A DAG file states its schedule, its tasks and its Assets; the mechanics of spark-submit live
here once (conn ``spark_default``, the session conf of ``focuscrawl.spark``, the environment
pip's pyspark needs), so a Spark task is one call: ``spark_job("x", "x.py", args, inlets, outlets)``.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from focuscrawl.config import settings
from focuscrawl.spark import session_conf, submit_env

cfg = settings()

DEFAULT_ARGS = {
    "owner": "focuscrawl",
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "execution_timeout": timedelta(hours=2),
}


def spark_job(task_id: str, application: str, application_args: list[str] | None = None, **kwargs) -> SparkSubmitOperator:
    """A task running ``spark_jobs/<application>`` with spark-submit on the configured master."""
    return SparkSubmitOperator(
        task_id=task_id,
        conn_id="spark_default",
        application=str(cfg.home / "spark_jobs" / application),
        application_args=application_args or [],
        conf=session_conf(cfg),
        env_vars=submit_env(),
        name=f"focuscrawl-{task_id.replace('_', '-')}",
        **kwargs,
    )
