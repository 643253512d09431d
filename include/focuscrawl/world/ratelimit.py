"""Per-client rate limiting as reddit's: ``X-Ratelimit-Used/Remaining/Reset`` over a 600-second window, 429 + Retry-After.

reddit counts each client's requests in fixed slices of the clock (``r2/lib/ratelimit.py``,
``get_timeslice``: a slice starts at a multiple of its width since the epoch) and sends, with every
API answer, the requests used in the slice, those left, and the seconds to the slice's end
(``r2/controllers/reddit_base.py``, ``run_sitewide_ratelimits``; the window "is currently set to 10
minutes", reddit's announcement of the headers, r/redditdev "Formal ratelimiting headers"). Every
request counts, a refused one too; over the limit the answer is 429 with ``Retry-After``, the seconds
to the slice's end.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable

REDDIT_WINDOW = 600.0  # seconds in one of reddit's rate-limit slices


class RateLimiter:
    """``limit`` requests per client in each ``window``-second slice of the wall clock; ``limit=0`` switches it off."""

    def __init__(self, limit: int, window: float = REDDIT_WINDOW, wall: Callable[[], float] = time.time) -> None:
        if window <= 0:
            raise ValueError(f"the rate-limit window must be positive seconds, got {window}")
        self.limit = limit
        self.window = window
        self._wall = wall
        self._lock = threading.Lock()
        self._used: dict[str, tuple[float, int]] = {}  # client -> (its slice's start, requests in it)

    def hit(self, client: str) -> tuple[bool, dict[str, str]]:
        """Count one request of ``client``; returns whether it may pass and the headers to send."""
        if self.limit <= 0:
            return True, {}
        now = self._wall()
        start = math.floor(now / self.window) * self.window
        with self._lock:
            began, used = self._used.get(client, (start, 0))
            used = (used if began == start else 0) + 1
            self._used[client] = (start, used)
        allowed = used <= self.limit
        reset = max(1, math.ceil(start + self.window - now))
        headers = {
            "x-ratelimit-used": str(used),
            "x-ratelimit-remaining": f"{float(max(0, self.limit - used)):.1f}",
            "x-ratelimit-reset": str(reset),
        }
        if not allowed:
            headers["Retry-After"] = str(reset)
        return allowed, headers
