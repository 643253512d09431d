"""# graph_estimation: content statistics with error bars from budget-limited graph crawls

Seed 003 ("Fast crawling methods of exploring content distributed over large graphs"); docs/loops/graph.md.
Crawlers sample a site's graph under a vertex-query budget (UNI, RW, MHRW or FS) and append each
crawl to the `graph_sample` Delta table. This DAG runs when that table changes:

1. **graph_estimation** (`spark_jobs/graph_estimation.py` on the warm Spark, or on pandas in the task's process
   while `graph_sample` is at most `FOCUSCRAWL_SPARK_IN_PROCESS_MIB` of Parquet,
   `focuscrawl.lake.spark.in_process`): per crawl, the estimators
   NAIVE, MLE (UNI crawls only), SCE and WCE of `focuscrawl.graph.estimators` on the crawl and on
   bootstrap replicates (moving blocks: walk draws are correlated), for the copy-count distribution
   (omega) and the label distribution; writes `graph_estimates` with percentile intervals,
   replacing the rows of the crawls it processed.

Params: `estimators` (the project's `[loops.graph] estimators`), `targets`, `replicates`, `block_length`,
`level`, `seed` (defaults: `focuscrawl.graph.params.GraphEstimationParams`), `crawl_ids` (empty: the crawls
not estimated yet, so a run on the sampler's newest crawl estimates that one; `all`: every crawl).
On Spark, the job runs on the warm Spark (the Spark Connect server `focuscrawl services up` starts; connection
`spark_connect_default`), whose master and jars come from `focuscrawl.lake.spark.session_conf`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from airflow.sdk import Param, dag

from assets import GRAPH_ESTIMATES_ASSET as ESTIMATES, GRAPH_SAMPLES as SAMPLES
from common import DEFAULT_ARGS, cfg, dag_params, schedule, spark_job
from focuscrawl.orchestration.schedules import loop_setting
from focuscrawl.graph.params import DEFAULT, ESTIMATION
from focuscrawl.core.params import cli_args

PARAMS = replace(DEFAULT, estimators=tuple(loop_setting(cfg, "graph", "estimators", DEFAULT.estimators)))


@dag(
    dag_id="graph_estimation",
    doc_md=__doc__,
    schedule=schedule("graph_estimation", [SAMPLES]),
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "graph", "estimation", "seed-003"],
    default_args=DEFAULT_ARGS,
    dagrun_timeout=timedelta(hours=2),
    params={
        **dag_params(PARAMS, ESTIMATION),
        "crawl_ids": Param("", type="string", description="comma-separated crawls to estimate, 'all', or empty: "
                                                          "the crawls without estimates yet"),
    },
)
def graph_estimation():
    spark_job(
        "graph_estimation",
        "graph_estimation.py",
        cli_args([*ESTIMATION, "crawl_ids"]),
        inlets=[SAMPLES],
        outlets=[ESTIMATES],
    )


graph_estimation()
