"""# graph_estimation: content statistics with error bars from budget-limited graph crawls

Seed 003 ("Fast crawling methods of exploring content distributed over large graphs"), issue 7.
Crawlers sample a site's graph under a vertex-query budget (UNI, RW, MHRW or FS) and append each
crawl to the `graph_sample` Delta table. This DAG runs when that table changes:

1. **graph_estimation** (`spark-submit spark_jobs/graph_estimation.py`): per crawl, the estimators
   NAIVE, MLE (UNI crawls only), SCE and WCE of `focuscrawl.graph.estimators` on the crawl and on
   bootstrap replicates (moving blocks: walk draws are correlated), for the copy-count distribution
   (omega) and the label distribution; writes `graph_estimates` with percentile intervals,
   replacing the rows of the crawls it processed.

Params: `estimators`, `targets`, `replicates`, `block_length`, `level`, `crawl_ids` (empty: the crawls
not estimated yet, so a run on the sampler's newest crawl estimates that one; `all`: every crawl).
Spark master and jars come from `focuscrawl.spark.session_conf`; the `spark_default` connection
names the master for spark-submit.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag

from assets import GRAPH_ESTIMATES_ASSET as ESTIMATES, GRAPH_SAMPLES as SAMPLES
from common import DEFAULT_ARGS, cfg, schedule, spark_job
from focuscrawl.dag_schedules import loop_setting


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
        "estimators": Param(",".join(loop_setting(cfg, "graph", "estimators", ["NAIVE", "MLE", "SCE", "WCE"])),
                            type="string", description="comma-separated (the project's [loops.graph] estimators); "
                                                       "MLE only on UNI crawls"),
        "targets": Param("copies,label", type="string", description="copies (omega) and/or label"),
        "replicates": Param(200, type="integer", minimum=1, description="bootstrap replicates per crawl"),
        "block_length": Param(20, type="integer", minimum=1, description="moving-block length in draws"),
        "level": Param(0.95, type="number", exclusiveMinimum=0, exclusiveMaximum=1, description="confidence level"),
        "crawl_ids": Param("", type="string", description="comma-separated crawls to estimate, 'all', or empty: "
                                                          "the crawls without estimates yet"),
    },
)
def graph_estimation():
    spark_job(
        "graph_estimation",
        "graph_estimation.py",
        [
            "--estimators", "{{ params.estimators }}",
            "--targets", "{{ params.targets }}",
            "--replicates", "{{ params.replicates }}",
            "--block-length", "{{ params.block_length }}",
            "--level", "{{ params.level }}",
            "--crawl-ids", "{{ params.crawl_ids }}",
        ],
        inlets=[SAMPLES],
        outlets=[ESTIMATES],
    )


graph_estimation()
