"""Fixtures of the fault and load suite (helpers in ``harness.py``).

``--soak`` or FOCUSCRAWL_FAULT_SUITE=1 (``make soak`` sets both) runs the same scenarios for minutes
instead of about a minute, the bounded short form CI runs.
"""

from __future__ import annotations

import os

import pytest

from harness import LiveWorld, Pipeline


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help="run the reliability scenarios for minutes (make soak) instead of the short CI form")


@pytest.fixture(scope="session")
def soak(request) -> bool:
    return request.config.getoption("--soak") or bool(os.environ.get("FOCUSCRAWL_FAULT_SUITE"))


@pytest.fixture
def live_world(cfg):
    # Few enough posts (a few hundred, +0.1/s) that the 1000-deep listing never drops one: a post
    # served just before a crawler kill is listed again when the restarted crawler comes by.
    world = LiveWorld(cfg, speedup=1.0, events_per_minute=20)
    world.up()
    yield world
    if world.server is not None:
        world.down()


def _pipeline(cfg, tmp_path, topic, broker):
    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    p = Pipeline(cfg, tmp_path, topic, broker)
    # Created up front, as a deployment does: a consumer subscribing first would auto-create them.
    ensure_topics(broker.url, [TopicSpec(p.topic, "author"), TopicSpec(p.dl_topic, "host")],
                  cfg.kafka_partitions, cfg.kafka_replication)
    return p


@pytest.fixture
def pipeline(cfg, tmp_path, topic, kafka_broker):
    """Crawler and consumer processes on the session's broker (tests that leave the broker alone)."""
    p = _pipeline(cfg, tmp_path, topic, kafka_broker)
    yield p
    p.stop_all()


@pytest.fixture
def restartable_pipeline(cfg, tmp_path, topic, own_kafka_broker):
    """The same on a broker of the test's own (``pipeline.broker``), which the test may kill and restart."""
    p = _pipeline(cfg, tmp_path, topic, own_kafka_broker)
    yield p
    p.stop_all()
