"""When a stream process applied each push of a feedback topic: the last pushes, for its status document.

A push is what a DAG's publish task sends to a compacted feedback topic in one go (every row of a score or
schedule table, Kafka timestamps within seconds of each other). A follower applies its records one by one;
:class:`AppliedPushes` folds them back into pushes, so the status document says, per topic, when each of the
last pushes was sent (its records' Kafka timestamps) and when the process had applied it (the wall clock
after its last record). That is the last stage of a loop's freshness, a Delta commit to the running process
applying the refreshed scores (docs/benchmarks.md, "Loop freshness"; ``bench/freshness``).

Records are folded into the topic's latest push while their Kafka timestamps stay within ``gap_ms`` of it; a
(re)started follower reading a topic's history from the beginning sees the older pushes the same way, each
with its own time of application (the restart), which a reader tells apart by ``last_record_ms``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

STATUS_KEY = "applied_pushes"


class AppliedPushes:
    """The last ``keep`` pushes applied per topic (thread-safe: followers apply on their own threads)."""

    def __init__(self, keep: int = 30, gap_ms: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self.keep, self.gap_ms, self.clock = keep, gap_ms, clock
        self._pushes: dict[str, deque] = {}
        self._lock = threading.Lock()

    def applied(self, topic: str, record_ms: int | None) -> float | None:
        """One record of ``topic`` (Kafka timestamp ``record_ms``, epoch ms) applied now; returns the seconds
        from its timestamp to now (None without a timestamp: the record is not counted)."""
        if record_ms is None or record_ms < 0:
            return None
        now_ms = int(self.clock() * 1000)
        with self._lock:
            pushes = self._pushes.setdefault(topic, deque(maxlen=self.keep))
            last = pushes[-1] if pushes else None
            if last is not None and last["first_record_ms"] - self.gap_ms <= record_ms <= last["last_record_ms"] + self.gap_ms:
                last["records"] += 1
                last["first_record_ms"] = min(last["first_record_ms"], record_ms)
                last["last_record_ms"] = max(last["last_record_ms"], record_ms)
                last["last_applied_ms"] = now_ms
            else:
                pushes.append({"topic": topic, "records": 1, "first_record_ms": record_ms, "last_record_ms": record_ms,
                               "first_applied_ms": now_ms, "last_applied_ms": now_ms})
        return max(0.0, (now_ms - record_ms) / 1000)

    def status(self) -> dict:
        """``{"applied_pushes": [push, ...]}``, oldest first per topic; a push is ``topic``, ``records``,
        ``first_record_ms``/``last_record_ms`` (Kafka timestamps) and ``first_applied_ms``/``last_applied_ms``."""
        with self._lock:
            return {STATUS_KEY: [dict(p) for pushes in self._pushes.values() for p in pushes]}
