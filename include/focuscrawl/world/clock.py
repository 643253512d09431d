"""The world's simulated clock: a start epoch, a speed-up factor, pausable and settable.

The crawl side never reads it directly (it only sees ``created_utc`` in what it fetches);
the evaluation side reads it through the evaluation server (``GET /time``).
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class SimClock:
    """``now() = start_epoch + speedup * (wall seconds since start)``, minus time spent paused."""

    def __init__(self, start_epoch: float, speedup: float = 60.0, paused: bool = False,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self._wall = wall
        self._lock = threading.Lock()
        self._anchor_sim = float(start_epoch)
        self._anchor_wall = wall()
        self._speedup = float(speedup)
        self._paused = paused
        self.start_epoch = float(start_epoch)

    def now(self) -> float:
        with self._lock:
            return self._now_locked()

    def _now_locked(self) -> float:
        if self._paused:
            return self._anchor_sim
        return self._anchor_sim + (self._wall() - self._anchor_wall) * self._speedup

    def _reanchor(self, sim: float) -> None:
        self._anchor_sim, self._anchor_wall = sim, self._wall()

    def wall_at(self, sim_time: float) -> float | None:
        """The reading of the wall clock at which :meth:`now` reaches ``sim_time`` while it runs as it
        does now (None when paused): a benchmark times a simulated event on its own machine's clock."""
        with self._lock:
            if self._paused:
                return None
            return self._anchor_wall + (float(sim_time) - self._anchor_sim) / self._speedup

    def pause(self) -> None:
        with self._lock:
            self._reanchor(self._now_locked())
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._reanchor(self._now_locked())
            self._paused = False

    def set(self, sim_time: float) -> None:
        """Jump to ``sim_time``; moving backwards is refused (content already served cannot un-happen)."""
        with self._lock:
            current = self._now_locked()
            if sim_time < current:
                raise ValueError(f"cannot move the clock back from {current:.0f} to {sim_time:.0f}")
            self._reanchor(sim_time)

    def advance(self, seconds: float) -> None:
        self.set(self.now() + seconds)

    def set_speedup(self, speedup: float) -> None:
        with self._lock:
            self._reanchor(self._now_locked())
            self._speedup = float(speedup)

    def state(self) -> dict:
        with self._lock:
            return {"sim_now": self._now_locked(), "speedup": self._speedup, "paused": self._paused,
                    "start_epoch": self.start_epoch}
