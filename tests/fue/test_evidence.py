"""The user updater: averages, hours (arithmetic as in the paper, and circular), text bounds."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from focuscrawl.fue import EvidenceAggregator, Post, UserEvidence, hour_distance
from focuscrawl.fue.evidence import EvidenceState


def at(hour: int, minute: int = 0) -> float:
    return datetime(2026, 11, 29, hour, minute, tzinfo=timezone.utc).timestamp()


def test_averages_of_score_comments_and_hour() -> None:
    agg = EvidenceAggregator()
    agg.add(Post("ann", at(4), score=10, num_comments=1, title="t1", text="x1", community="depression", post_id="p1"))
    ev = agg.add(Post("ann", at(8, 30), score=-4, num_comments=6, text="x2", community="sleep", post_id="p2"))
    assert ev == UserEvidence(
        user="ann", count=2, mean_score=3.0, mean_comments=3.5, mean_hour=6.25,
        circular_hour=pytest.approx(6.25), text="t1\nx1\nx2", communities=("depression", "sleep"),
    )


def test_circular_mean_crosses_midnight_where_the_arithmetic_one_fails() -> None:
    agg = EvidenceAggregator()
    agg.add(Post("bo", at(23), post_id="a"))
    ev = agg.add(Post("bo", at(1), post_id="b"))
    assert ev.mean_hour == 12.0            # the paper's average: noon
    assert ev.circular_hour == pytest.approx(0.0, abs=1e-9) or ev.circular_hour == pytest.approx(24.0)
    assert ev.hour("circular") == ev.circular_hour
    with pytest.raises(ValueError, match="hour mean"):
        ev.hour("median")


def test_opposite_hours_have_no_circular_mean() -> None:
    agg = EvidenceAggregator()
    agg.add(Post("cy", at(0), post_id="a"))
    assert agg.add(Post("cy", at(12), post_id="b")).circular_hour is None


def test_repeated_posts_count_once_and_forget_drops_the_user() -> None:
    agg = EvidenceAggregator()
    assert agg.add(Post("di", at(3), score=5, post_id="same")) is not None
    assert agg.add(Post("di", at(3), score=5, post_id="same")) is None
    assert agg.get("di").count == 1
    agg.forget("di")
    assert "di" not in agg and agg.get("di") == UserEvidence("di")


def test_post_ids_are_bounded_per_user_and_go_with_the_user() -> None:
    agg = EvidenceAggregator(max_post_ids=3)
    for i in range(5):
        agg.add(Post("fa", at(2), post_id=f"p{i}"))
    assert agg.state("fa").post_ids == ["p2", "p3", "p4"]
    assert agg.add(Post("fa", at(2), post_id="p4")) is None       # a recent repeat still counts once
    assert agg.get("fa").count == 5
    agg.add(Post("gu", at(2), post_id="q"))
    agg.forget("fa")
    agg.drop("gu")
    assert agg._seen_posts == {}                                    # nothing of the gone users stays
    restored = EvidenceAggregator(max_post_ids=3)
    restored.restore("fa", EvidenceState(count=1, post_ids=["r1"]))
    assert restored.add(Post("fa", at(2), post_id="r1")) is None    # a restored user's posts count as seen


def test_text_is_bounded_keeping_the_newest() -> None:
    agg = EvidenceAggregator(max_text_chars=12, max_communities=2)
    for i, community in enumerate(["a", "b", "c"]):
        ev = agg.add(Post("ed", at(1), text=f"post{i}", community=community, post_id=str(i)))
    assert ev.text == "post1\npost2"
    assert ev.communities == ("b", "c")


def test_hour_distance_is_circular() -> None:
    assert hour_distance(23.0, 1.0) == 2.0
    assert hour_distance(6.0, 18.0) == 12.0
    assert hour_distance(5.5, 6.0) == 0.5
