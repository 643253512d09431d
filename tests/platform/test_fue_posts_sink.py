"""The FUE explorer's posts land in reddit_posts (focuscrawl.fue.pipeline.post_row, the `fue_posts` sink)."""

from __future__ import annotations

import pytest


def test_fue_posts_land_as_reddit_posts_rows():
    from focuscrawl.lake.delta_sink import RecordRejected, StreamRecord
    from focuscrawl.fue.evidence import Post
    from focuscrawl.fue.pipeline import post_row, post_to_json

    def record(value):
        return StreamRecord(topic="focuscrawl.fue.posts", partition=0, offset=1, key=b"ann", value=value)

    post = Post(author="ann", created_utc=5.0, score=3.0, num_comments=2.0, title="t", text="body",
                community="sad", post_id="t1_abc")
    assert post_row(record(post_to_json(post))) == {
        "name": "t1_abc", "id": "abc", "kind": "t1", "author": "ann", "subreddit": "sad", "title": "t",
        "selftext": "body", "score": 3, "num_comments": 2, "created_utc": 5.0}
    read = Post(author="ann", created_utc=5.0, community="sad", post_id="t3_def", listing_url="http://w/r/sad/new.json",
                fetched_at_ms=7000, chosen_by="RANDOM")  # the explorer's read, and what chose it
    row = post_row(record(post_to_json(read)))
    assert {k: row[k] for k in ("listing_url", "fetched_at_ms", "chosen_by_loop", "chosen_by_method",
                                "chosen_by_model", "chosen_score", "chosen_rank")} == {
        "listing_url": "http://w/r/sad/new.json", "fetched_at_ms": 7000, "chosen_by_loop": "fue",
        "chosen_by_method": "RANDOM", "chosen_by_model": None, "chosen_score": None, "chosen_rank": None}
    for bad in (b"{}", b"[1]", post_to_json(Post(author="ann", created_utc=1.0, post_id=""))):
        with pytest.raises(RecordRejected):
            post_row(record(bad))
