"""# thin_loop: learn user priorities from the posts and push them to the running crawlers

The feedback half of focuscrawl's thin loop (issue 2, point 5; seed 000, section IV-B, HAS):

0. **quality_reddit_posts**: the Great Expectations suite of `reddit_posts` (from its table spec);
   a failing suite stops the run and names the failed expectations.
1. **user_priorities** (`spark-submit spark_jobs/user_priorities.py`): reads the `reddit_posts`
   Delta table with delta-spark, ranks every author by the average score of their posts seen so
   far, overwrites the `user_priorities` Delta table.
2. **publish_priorities**: sends every row of `user_priorities` to the compacted Kafka topic
   `focuscrawl.user_priorities`; crawlers follow that topic and reorder their frontier at once.

Params: `min_posts` (ignore users with fewer posts seen). Spark master and jars come from
`focuscrawl.spark.session_conf`; the `spark_default` connection names the master for spark-submit.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag, task

from assets import POSTS, USER_PRIORITIES, USER_PRIORITIES_PUSHED
from common import DEFAULT_ARGS, cfg, spark_job
from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.quality import gx_gate


@dag(
    dag_id="thin_loop",
    doc_md=__doc__,
    schedule=None,
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "thin-loop", "priorities"],
    default_args=DEFAULT_ARGS,
    dagrun_timeout=timedelta(hours=1),
    params={"min_posts": Param(1, type="integer", minimum=1, description="ignore users with fewer posts seen")},
)
def thin_loop():
    compute = spark_job("user_priorities", "user_priorities.py", ["--min-posts", "{{ params.min_posts }}"],
                        inlets=[POSTS], outlets=[USER_PRIORITIES])

    @task(inlets=[USER_PRIORITIES], outlets=[USER_PRIORITIES_PUSHED])
    def publish_priorities() -> int:
        from focuscrawl.priority_topic import USER_PRIORITIES_TOPIC, publish_table
        from focuscrawl.user_priority import USER_PRIORITIES_TABLE

        return publish_table(USER_PRIORITIES_TABLE.path(cfg), cfg.kafka_bootstrap, USER_PRIORITIES_TOPIC)

    gx_gate(POSTS_TABLE)() >> compute >> publish_priorities()


thin_loop()
