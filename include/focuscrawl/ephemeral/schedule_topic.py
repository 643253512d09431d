"""The recrawl schedule pushed to running crawlers on a compacted Kafka topic (docs/architecture.md, loop 3).

Seed 001 (*Timely crawling of high-quality ephemeral new content*): the schedule is recomputed as estimates change; between pushes a
crawler keeps its last schedule. Key = source URL, score = recrawls per second (0: stop
recrawling it), with the interval, planned page rate, skip threshold, P and μ alongside; the
transport is :mod:`focuscrawl.topics.priority`, shared with the other priority feeds; the source
crawler (:mod:`focuscrawl.ephemeral.crawler`) follows it with :class:`ScheduleFollower`.
"""

from __future__ import annotations

import logging

from focuscrawl.config import Settings
from focuscrawl.ephemeral.tables import SOURCE_SCHEDULE
from focuscrawl.topics.priority import RowFollower

log = logging.getLogger(__name__)

SOURCE_SCHEDULE_TOPIC = "focuscrawl.source_schedule"
# The name a schedule push gives its model; its version is the Delta version of the source_schedule table pushed
# (each fit of the estimates and the Lagrangian plan overwrites it: one version per fit).
SCHEDULE_MODEL = "source_schedule"


def publish_schedule(cfg: Settings, topic: str = SOURCE_SCHEDULE_TOPIC) -> int:
    """Send every row of the ``source_schedule`` Delta table; returns how many were sent."""
    from focuscrawl.topics.priority import publish_table

    return publish_table(SOURCE_SCHEDULE.path(cfg), cfg.kafka_bootstrap, topic,
                         key_column="source_url", score_column="recrawl_rate", model=SCHEDULE_MODEL)


class ScheduleFollower(RowFollower):
    """A :class:`~focuscrawl.topics.priority.RowFollower`: the whole pushed row (``score`` = recrawl rate, with
    ``skip_below``, ``P``, ``mu``, and the ``model``/``model_version`` of the fit), not only the score: the
    crawler orders discovered pages with the P and μ the schedule was computed from.
    ``apply(source_url, row)`` (None: the source was deleted from the topic)."""
