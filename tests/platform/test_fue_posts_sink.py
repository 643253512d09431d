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
    for bad in (b"{}", b"[1]", post_to_json(Post(author="ann", created_utc=1.0, post_id=""))):
        with pytest.raises(RecordRejected):
            post_row(record(bad))
