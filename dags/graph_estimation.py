"""# graph_estimation: content statistics with error bars from budget-limited graph crawls

Seed 003 ("Fast crawling methods of exploring content distributed over large graphs"), issue 7.
Crawlers sample a site's graph under a vertex-query budget (UNI, RW, MHRW or FS) and append each
crawl to the `graph_sample` Delta table. This DAG runs when that table changes:

1. **graph_estimation** (`spark-submit spark_jobs/graph_estimation.py`): per crawl, the estimators
   NAIVE, MLE (UNI crawls only), SCE and WCE of `focuscrawl.graph.estimators` on the crawl and on
   bootstrap replicates (moving blocks: walk draws are correlated), for the copy-count distribution
   (omega) and the label distribution; writes `graph_estimates` with percentile intervals,
   replacing the rows of the crawls it processed.

Params: `estimators`, `targets`, `replicates`, `block_length`, `level`, `crawl_ids` (empty: all).
Spark master and jars come from `focuscrawl.spark.session_conf`; the `spark_default` connection
names the master for spark-submit.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from datetime import timedelta
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param, dag

from assets import table_asset
from focuscrawl.config import settings
from focuscrawl.graph.tables import GRAPH_ESTIMATES, GRAPH_SAMPLE
from focuscrawl.spark import session_conf

cfg = settings()
SAMPLES = table_asset(GRAPH_SAMPLE)
ESTIMATES = table_asset(GRAPH_ESTIMATES)

# spark-submit comes with pip's pyspark: it must find its SPARK_HOME, and the job's Python workers
# (mapInPandas) must run this interpreter, the one that has focuscrawl.
SPARK_SUBMIT_ENV = {
    "SPARK_HOME": importlib.util.find_spec("pyspark").submodule_search_locations[0],
    "PYSPARK_PYTHON": sys.executable,
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
}


@dag(
    dag_id="graph_estimation",
    doc_md=__doc__,
    schedule=[SAMPLES],
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "graph", "estimation", "seed-003"],
    default_args={
        "owner": "focuscrawl",
        "retries": 2,
        "retry_delay": timedelta(seconds=30),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=10),
    },
    params={
        "estimators": Param("NAIVE,MLE,SCE,WCE", type="string", description="comma-separated; MLE only on UNI crawls"),
        "targets": Param("copies,label", type="string", description="copies (omega) and/or label"),
        "replicates": Param(200, type="integer", minimum=1, description="bootstrap replicates per crawl"),
        "block_length": Param(20, type="integer", minimum=1, description="moving-block length in draws"),
        "level": Param(0.95, type="number", exclusiveMinimum=0, exclusiveMaximum=1, description="confidence level"),
        "crawl_ids": Param("", type="string", description="comma-separated crawls to estimate; empty: all"),
    },
)
def graph_estimation():
    SparkSubmitOperator(
        task_id="graph_estimation",
        conn_id="spark_default",
        application=str(cfg.home / "spark_jobs" / "graph_estimation.py"),
        application_args=[
            "--estimators", "{{ params.estimators }}",
            "--targets", "{{ params.targets }}",
            "--replicates", "{{ params.replicates }}",
            "--block-length", "{{ params.block_length }}",
            "--level", "{{ params.level }}",
            "--crawl-ids", "{{ params.crawl_ids }}",
        ],
        conf={**session_conf(cfg), "spark.pyspark.python": sys.executable},
        env_vars=SPARK_SUBMIT_ENV,
        name="focuscrawl-graph-estimation",
        inlets=[SAMPLES],
        outlets=[ESTIMATES],
    )


graph_estimation()
