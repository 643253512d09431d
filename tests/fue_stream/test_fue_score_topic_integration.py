"""Pushed scores reach a running chooser through the compacted score topic and change its order (issue 4)."""

from __future__ import annotations

import time

import pytest

from focuscrawl.fue import RANKING_METHODS, Post, UserChooser
from focuscrawl.fue.pipeline import scores_topic
from focuscrawl.topics.priority import PriorityFollower, publish

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]  # includes the broker start


def test_pushed_scores_reorder_a_running_chooser(cfg, kafka_broker, toy_classifier, topic):
    chooser = UserChooser(RANKING_METHODS.create("HCP-0.9-0.1", classifier=toy_classifier))
    chooser.add_posts([Post(author="sad", created_utc=0.0, text="hopeless numb", post_id="a"),
                       Post(author="odd", created_utc=0.0, text="football recipe", post_id="b")])
    assert chooser.top(1)[0][0] == "sad"
    # What streaming/fue/chooser.py does with every record of its method's score topic.
    follower = PriorityFollower(cfg.kafka_bootstrap, scores_topic(topic),
                                lambda user, score: score is not None and chooser.set_scores([(user, score)]))
    follower.start()
    try:
        assert follower.caught_up.wait(60)
        publish(cfg.kafka_bootstrap, scores_topic(topic), [("odd", 0.9, {}), ("sad", 0.2, {}), ("gone", 0.5, {})])
        deadline = time.monotonic() + 30
        while chooser.top(1)[0][0] != "odd" and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        follower.stop()
        follower.join(10)
    assert chooser.top(2) == [("odd", 0.9), ("sad", 0.2)]
    assert chooser.choose() == "odd" and "gone" not in chooser
