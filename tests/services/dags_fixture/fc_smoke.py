"""Test-only DAG: proves a task runs under our Airflow and sees the focuscrawl environment."""

from __future__ import annotations

import os
import shutil

import pendulum
from airflow.sdk import dag, task


@dag(
    dag_id="fc_smoke",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["test"],
    doc_md=__doc__,
)
def fc_smoke():
    @task
    def environment(**context) -> str:
        from airflow.sdk import BaseHook

        spark = BaseHook.get_connection("spark_connect_default")
        # Printed lines are what the test reads back from the task log.
        print("FOCUSCRAWL_VAR=" + os.environ["FOCUSCRAWL_VAR"])
        print("spark-submit=" + str(shutil.which("spark-submit")))
        print("SPARK_HOME=" + os.environ["SPARK_HOME"])
        print(f"spark_connect_default={spark.host}:{spark.port}")
        print("conf.marker=" + str(context["dag_run"].conf.get("marker")))
        return os.environ["FOCUSCRAWL_VAR"]

    environment()


fc_smoke()
