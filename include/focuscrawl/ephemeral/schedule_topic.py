"""The recrawl schedule pushed to running crawlers on a compacted Kafka topic (DESIGN.md, loop 3).

Seed ``001_c276720796c36144.txt``: the schedule is recomputed as estimates change; between pushes a
crawler keeps its last schedule. Key = source URL, score = recrawls per second (0: stop
recrawling it), with the interval, planned page rate and skip threshold alongside; the transport
is :mod:`focuscrawl.priority_topic`, shared with the other priority feeds.
"""

from __future__ import annotations

import threading

from focuscrawl.config import Settings
from focuscrawl.ephemeral.tables import SOURCE_SCHEDULE

SOURCE_SCHEDULE_TOPIC = "focuscrawl.source_schedule"


def publish_schedule(cfg: Settings, topic: str = SOURCE_SCHEDULE_TOPIC) -> int:
    """Send every row of the ``source_schedule`` Delta table; returns how many were sent."""
    from focuscrawl.priority_topic import publish_table

    return publish_table(SOURCE_SCHEDULE.path(cfg), cfg.kafka_bootstrap, topic,
                         key_column="source_url", score_column="recrawl_rate")


class RecrawlPlan:
    """The crawler's copy of the schedule: updated by a follower of the topic, read by the crawl loop.

    Feed it to ``PriorityFollower(bootstrap, SOURCE_SCHEDULE_TOPIC, plan.apply)``. Sources never
    scheduled (or deleted) are not due; a source's first recrawl is due at once.
    """

    def __init__(self) -> None:
        self._rates: dict[str, float] = {}
        self._lock = threading.Lock()

    def apply(self, source: str, rate: float | None) -> None:
        with self._lock:
            if rate is None:
                self._rates.pop(source, None)
            else:
                self._rates[source] = rate

    def interval(self, source: str) -> float | None:
        """Seconds between recrawls of ``source``; None: do not recrawl it."""
        rate = self._rates.get(source, 0.0)
        return 1.0 / rate if rate > 0 else None

    def due(self, last_recrawl: dict[str, float], now: float) -> list[str]:
        """Sources whose next recrawl is due at ``now``, most overdue first."""
        with self._lock:
            rates = dict(self._rates)
        lateness = {s: now - last_recrawl.get(s, float("-inf")) - 1.0 / r for s, r in rates.items() if r > 0}
        return sorted((s for s, late in lateness.items() if late >= 0), key=lambda s: -lateness[s])

