"""# source_schedule: recrawl plan of content sources for ephemeral new content (seed 001)

Seed 001 (*Timely crawling of high-quality ephemeral new content*): split one crawl budget between recrawling content
sources and fetching the new pages they reveal, so that the most clicks are earned before the
pages' value decays.

1. **source_schedule** (`spark_jobs/source_schedule.py` on the warm Spark; on a small lake in the task's
   own process, `focuscrawl.lake.spark.in_process`): reads `source_recrawls`
   and the table of the project's profit signal (`[loops.sources] feedback`,
   `focuscrawl.ephemeral.feedback`: `page_clicks` for clicks, `source_pages` for the fetched pages'
   relevance), fits each source's new-link rate λ, page profit P and decay μ
   (applyInPandas over `focuscrawl.ephemeral.estimate`), solves the Lagrangian budget split
   (`focuscrawl.ephemeral.optimiser`), overwrites `source_estimates` and `source_schedule`.
2. **publish_schedule**: sends every row of `source_schedule` to the compacted Kafka topic
   `focuscrawl.source_schedule`; crawlers follow it and keep their last plan between pushes.

Runs when new recrawls or feedback rows land, and hourly as estimates age. Params: `budget`
(fetches per second: the project's `[loops.sources] fetches_per_second`), `host_min_interval_s`
(politeness), `optimism` (exploration), `feedback` and `freshness_half_life_s` (the project's
`[loops.sources] feedback` and `freshness_half_life`); defaults: `focuscrawl.ephemeral.params.EphemeralParams`.
"""

from __future__ import annotations

from dataclasses import replace

from airflow.sdk import dag, task

from assets import PAGE_CLICKS_ASSET, SOURCE_PAGES_ASSET
from assets import SOURCE_ESTIMATES_ASSET as ESTIMATES
from assets import SOURCE_RECRAWLS_ASSET as RECRAWLS
from assets import SOURCE_SCHEDULE_ASSET as SCHEDULE
from assets import SOURCE_SCHEDULE_PUSHED as SCHEDULE_PUSHED
from common import DEFAULT_ARGS, cfg, dag_params, schedule, spark_job
from focuscrawl.orchestration.schedules import loop_setting
from focuscrawl.ephemeral.feedback import profit_signal
from focuscrawl.ephemeral.params import DEFAULT, SCHEDULE_KNOBS
from focuscrawl.core.params import cli_args

PARAMS = replace(
    DEFAULT, budget=float(loop_setting(cfg, "sources", "fetches_per_second", DEFAULT.budget)),
    feedback=str(loop_setting(cfg, "sources", "feedback", DEFAULT.feedback)).upper(),
    freshness_half_life_s=float(loop_setting(cfg, "sources", "freshness_half_life_s", DEFAULT.freshness_half_life_s)))
# The signal's table starts the DAG besides the recrawls (the clicks, or the fetched pages and their relevance).
FEEDBACK = {"page_clicks": PAGE_CLICKS_ASSET, "source_pages": SOURCE_PAGES_ASSET}[profit_signal(PARAMS.feedback).table]


@dag(
    dag_id="source_schedule",
    doc_md=__doc__,
    schedule=schedule("source_schedule", RECRAWLS | FEEDBACK),
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "ephemeral", "schedule", "seed-001"],
    default_args=DEFAULT_ARGS,
    params=dag_params(PARAMS, SCHEDULE_KNOBS),
)
def source_schedule():
    compute = spark_job(
        "source_schedule", "source_schedule.py",
        cli_args(SCHEDULE_KNOBS),
        inlets=[RECRAWLS, FEEDBACK], outlets=[ESTIMATES, SCHEDULE],
    )

    @task(inlets=[SCHEDULE], outlets=[SCHEDULE_PUSHED])
    def publish_schedule() -> int:
        from focuscrawl.ephemeral.schedule_topic import publish_schedule as publish

        return publish(cfg)

    compute >> publish_schedule()


source_schedule()
