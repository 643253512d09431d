"""HAS user priorities (seed 000, IV-B): the pure transform on golden data, and the job over real Delta tables."""

from __future__ import annotations

import dataclasses

import pytest
from deltalake import DeltaTable

from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.delta_sink import DeltaSink, StreamRecord
from focuscrawl.user_priority import USER_PRIORITIES_TABLE, user_priorities

pytestmark = pytest.mark.integration

POSTS = [  # author, score, num_comments, created_utc
    ("ann", 10, 2, 100.0), ("ann", 30, 4, 300.0),  # avg 20
    ("ben", 5, 0, 200.0),  # avg 5
    ("cat", 50, 9, 150.0),  # avg 50
    ("[deleted]", 999, 0, 50.0),  # not a user
]


def test_has_ranks_users_by_average_score(spark):
    posts = spark.createDataFrame(POSTS, "author string, score long, num_comments long, created_utc double")
    got = user_priorities(posts).drop("computed_at")
    # pyspark.testing.assertDataFrameEqual imports pyspark.pandas, which fails under pandas 3:
    # compare the schema and the rows directly.
    assert got.schema.simpleString() == (
        "struct<author:string,posts:bigint,avg_score:double,avg_comments:double,last_post_utc:double,"
        "priority:double,method:string>")
    assert sorted(tuple(r) for r in got.collect()) == [
        ("ann", 2, 20.0, 3.0, 300.0, 0.5, "HAS"), ("ben", 1, 5.0, 0.0, 200.0, 0.0, "HAS"),
        ("cat", 1, 50.0, 9.0, 150.0, 1.0, "HAS")]
    assert [r.author for r in user_priorities(posts, min_posts=2).collect()] == ["ann"]


def test_users_tied_at_the_top_all_get_priority_one(spark):
    # The crawler picks a priority-1.0 user first: a tie at the top must not leave nobody at 1.0.
    posts = spark.createDataFrame(POSTS + [("dan", 50, 1, 160.0), ("eve", 5, 0, 210.0)],
                                  "author string, score long, num_comments long, created_utc double")
    got = {r.author: r.priority for r in user_priorities(posts).collect()}
    assert got == {"cat": 1.0, "dan": 1.0, "ann": 0.5, "ben": 0.25, "eve": 0.25}


def test_job_overwrites_the_priority_table_with_its_comments(spark, cfg, tmp_path):
    import importlib.util

    lake = dataclasses.replace(cfg, lake=str(tmp_path / "lake"))
    sink = DeltaSink(POSTS_TABLE.path(lake), POSTS_TABLE, "g", dead_letter_uri=str(tmp_path / "dl"))
    sink.write([
        StreamRecord("posts", 0, i, (
            f'{{"name": "t3_{i}", "id": "{i}", "kind": "t3", "author": "{a}", "score": {s}, '
            f'"num_comments": {c}, "created_utc": {t}}}').encode())
        for i, (a, s, c, t) in enumerate(POSTS)
    ])
    spec = importlib.util.spec_from_file_location("user_priorities_job", cfg.home / "spark_jobs" / "user_priorities.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)

    assert job.run(spark, lake) == 3
    assert job.run(spark, lake, min_posts=2) == 1  # overwrite, not append
    dt = DeltaTable(USER_PRIORITIES_TABLE.path(lake))
    rows = dt.to_pyarrow_table().to_pylist()
    assert [(r["author"], r["posts"], r["avg_score"], r["priority"]) for r in rows] == [("ann", 2, 20.0, 1.0)]  # the only one is the best
    assert dt.metadata().description == USER_PRIORITIES_TABLE.comment
    comments = {f.name: f.metadata.get("comment") for f in dt.schema().fields}
    assert comments == {c.name: c.comment for c in USER_PRIORITIES_TABLE.columns}
