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


class ClockFile:
    """Where a served world keeps its simulated time, so a restart resumes it instead of rewinding.

    A world restarted at its start epoch served the past again: the revisitor revisited past periods
    and wrote them a second time. :meth:`keep` writes ``{"sim_now", "start_epoch", "seed"}`` every
    ``every`` wall seconds (atomically; a SIGKILL loses at most that much) and once more at :meth:`stop`;
    :meth:`resume` moves a new world's clock forward to the time written, when it is the same world
    (start epoch and seed) and the time is later. Delete the file to start the clock over.
    """

    def __init__(self, path, clock: SimClock, seed: int, every: float = 1.0) -> None:
        from pathlib import Path

        self.path, self.clock, self.seed, self.every = Path(path), clock, seed, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def resume(self) -> float | None:
        """Set the clock to where the last run of this world stopped; the time resumed at, or None."""
        from focuscrawl.core.status_file import read_status

        saved = read_status(self.path)
        if saved.get("seed") != self.seed or saved.get("start_epoch") != self.clock.start_epoch:
            return None  # none yet, or another world's: start at the start epoch
        at = float(saved.get("sim_now") or 0.0)
        if at <= self.clock.now():
            return None
        self.clock.set(at)
        return at

    def write(self) -> None:
        from focuscrawl.core.status_file import write_status

        write_status(self.path, {"sim_now": self.clock.now(), "start_epoch": self.clock.start_epoch, "seed": self.seed})

    def keep(self) -> "ClockFile":
        def loop() -> None:
            while not self._stop.wait(self.every):
                self.write()

        self.write()
        self._thread = threading.Thread(target=loop, name="world-clock-file", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.write()
