"""Spark job: posts Delta table -> user priorities Delta table (overwrite), seed 000 section IV-B (HAS).

    spark-submit spark_jobs/user_priorities.py [--min-posts 1]

Extract, transform (``focuscrawl.user_priority.user_priorities``), load. The session comes from
``focuscrawl.spark.get_session`` so the same code runs under spark-submit, Airflow and tests.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl.config import Settings, settings
from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.delta_sink import ensure_table
from focuscrawl.tables import with_comments
from focuscrawl.user_priority import USER_PRIORITIES_TABLE, user_priorities


def run(spark, cfg: Settings, min_posts: int = 1) -> int:
    """Recompute the priority table; returns its number of rows."""
    posts = spark.read.format("delta").load(POSTS_TABLE.path(cfg))
    out_path = USER_PRIORITIES_TABLE.path(cfg)
    # Created from the spec first, so the table's description comes from the one declaration.
    ensure_table(out_path, USER_PRIORITIES_TABLE)
    result = with_comments(user_priorities(posts, min_posts), USER_PRIORITIES_TABLE).cache()
    result.write.format("delta").mode("overwrite").save(out_path)
    n = result.count()
    result.unpersist()
    return n


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.spark import get_session, register_tables

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-posts", type=int, default=1, help="ignore users with fewer posts seen")
    args = ap.parse_args(argv)
    cfg = settings()
    spark = get_session("user_priorities", cfg=cfg)
    n = run(spark, cfg, args.min_posts)
    register_tables(spark, cfg)
    print(f"user_priorities: {n} users -> {USER_PRIORITIES_TABLE.path(cfg)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
