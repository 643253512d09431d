"""The user-priority table the listing crawler's compacted topic is published from (``priority_topic.publish_table``).

The thin loop that filled it (a Spark job ranking authors by HAS, seed 000 (*Real-time focused extraction of social media users*)
section IV-B) folded into the FUE loop: HAS is one registered ranking method
(``focuscrawl.fue.methods``) that the chooser computes itself. The table's format stays the
contract of a priority table any job may write for the listing crawler (``streaming/crawler.py``).
"""

from __future__ import annotations

import pyarrow as pa

from focuscrawl.lake.tables import UNIT_INTERVAL, Column, table

USER_PRIORITIES_TABLE = table(
    "user_priorities",
    "Priority of every candidate user, learned from the posts seen in listings (seed 000, section IV-B, HAS: "
    "highest average score first); pushed to the listing crawler's compacted topic.",
    [
        Column("author", pa.string(), "candidate user name", nullable=False),
        Column("posts", pa.int64(), "number of the user's posts seen so far", nullable=False),
        Column("avg_score", pa.float64(), "average score of those posts"),
        Column("avg_comments", pa.float64(), "average number of comments on those posts"),
        Column("last_post_utc", pa.float64(), "creation time of the newest of those posts, Unix epoch seconds"),
        Column("priority", pa.float64(), "0-1, higher = extract sooner: percent rank of avg_score (ties share the higher; the best get 1.0)", nullable=False,
               bounds=UNIT_INTERVAL),
        Column("method", pa.string(), "prioritisation method that produced the row", nullable=False),
        Column("computed_at", pa.timestamp("us", tz="UTC"), "when the job computed the row", nullable=False),
    ],
    layer="gold",
)

