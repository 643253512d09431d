"""User priorities for the thin loop: HAS, the average score of a user's posts seen so far.

Seed ``000_c12b299f5bad9cdf.txt`` section IV-B ("Average score of user's texts"): for every
candidate user, average the scores of the posts observed in the listings crawled so far; HAS
extracts the user with the highest average first. The priority is that average turned into a
0-1 percent rank over all candidates (so the frontier needs no knowledge of the method, and
Reddit's heavy-tailed scores do not squash everyone else to ~0); tied users share the higher
rank, so the best candidates always get 1.0.

:func:`user_priorities` is a pure DataFrame -> DataFrame transform; ``spark_jobs/user_priorities.py``
wires the Delta input and output around it. pyspark is imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from focuscrawl.tables import Column, table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

# Reddit shows removed accounts under this name: not a user anyone can extract.
DELETED_AUTHOR = "[deleted]"

USER_PRIORITIES_TABLE = table(
    "user_priorities",
    "Priority of every candidate user, learned from the posts seen in listings (seed 000, section IV-B, HAS: "
    "highest average score first); overwritten by each run of the user_priorities job and pushed to crawlers.",
    [
        Column("author", pa.string(), "candidate user name", nullable=False),
        Column("posts", pa.int64(), "number of the user's posts seen so far", nullable=False),
        Column("avg_score", pa.float64(), "average score of those posts"),
        Column("avg_comments", pa.float64(), "average number of comments on those posts"),
        Column("last_post_utc", pa.float64(), "creation time of the newest of those posts, Unix epoch seconds"),
        Column("priority", pa.float64(), "0-1, higher = extract sooner: percent rank of avg_score (ties share the higher; the best get 1.0)", nullable=False),
        Column("method", pa.string(), "prioritisation method that produced the row", nullable=False),
        Column("computed_at", pa.timestamp("us", tz="UTC"), "when the job computed the row", nullable=False),
    ],
    layer="gold",
)


def user_priorities(posts: "DataFrame", min_posts: int = 1) -> "DataFrame":
    """Per-author HAS priorities from a posts DataFrame (columns ``author``, ``score``, ``num_comments``,
    ``created_utc``), in :data:`USER_PRIORITIES_TABLE`'s column order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    per_user = (
        posts.where(F.col("author").isNotNull() & (F.col("author") != DELETED_AUTHOR))
        .groupBy("author")
        .agg(
            F.count("*").alias("posts"),
            F.avg("score").alias("avg_score"),
            F.avg("num_comments").alias("avg_comments"),
            F.max("created_utc").alias("last_post_utc"),
        )
        .where(F.col("posts") >= min_posts)
    )
    # One global ranking: the candidate set is small next to the posts (one row per user). Ranked
    # best first, so tied users share the higher percent rank and the best always get 1.0.
    rank = Window.orderBy(F.col("avg_score").desc_nulls_last())
    return per_user.select(
        "author",
        F.col("posts").cast("long").alias("posts"),
        "avg_score",
        "avg_comments",
        F.col("last_post_utc").cast("double").alias("last_post_utc"),
        (F.lit(1.0) - F.percent_rank().over(rank)).alias("priority"),
        F.lit("HAS").alias("method"),
        F.current_timestamp().alias("computed_at"),
    )
