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
from focuscrawl.topics.priority import Priority, PriorityFollower

log = logging.getLogger(__name__)

SOURCE_SCHEDULE_TOPIC = "focuscrawl.source_schedule"


def publish_schedule(cfg: Settings, topic: str = SOURCE_SCHEDULE_TOPIC) -> int:
    """Send every row of the ``source_schedule`` Delta table; returns how many were sent."""
    from focuscrawl.topics.priority import publish_table

    return publish_table(SOURCE_SCHEDULE.path(cfg), cfg.kafka_bootstrap, topic,
                         key_column="source_url", score_column="recrawl_rate")


class ScheduleFollower(PriorityFollower):
    """A :class:`~focuscrawl.topics.priority.PriorityFollower` that hands over the whole pushed row
    (``score`` = recrawl rate, with ``skip_below``, ``P``, ``mu``, ...), not only the score: the
    crawler orders discovered pages with the P and μ the schedule was computed from.
    ``apply(source_url, row)`` (None: the source was deleted from the topic)."""

    def _apply(self, rec) -> None:
        try:
            self.apply(rec.key.decode(), None if rec.value is None else Priority.from_json(rec.value).row())
        except (AttributeError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring malformed schedule row %s@%d key=%r: %s", self.topic, rec.offset, rec.key, exc)
