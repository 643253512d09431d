"""Per-client rate limiting with Reddit's headers (``x-ratelimit-used/remaining/reset``) and 429 + Retry-After."""

from __future__ import annotations

import math
import threading
import time
from typing import Callable


class RateLimiter:
    """A fixed window of ``limit`` requests per ``window`` wall seconds per client; ``limit=0`` switches it off."""

    def __init__(self, limit: int, window: float, wall: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._wall = wall
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[float, int]] = {}

    def hit(self, client: str) -> tuple[bool, dict[str, str]]:
        """Count one request of ``client``; returns whether it may pass and the headers to send."""
        if self.limit <= 0:
            return True, {}
        now = self._wall()
        with self._lock:
            start, used = self._windows.get(client, (now, 0))
            if now - start >= self.window:
                start, used = now, 0
            allowed = used < self.limit
            used += allowed
            self._windows[client] = (start, used)
        reset = max(1, math.ceil(start + self.window - now))
        headers = {
            "x-ratelimit-used": str(used),
            "x-ratelimit-remaining": f"{float(self.limit - used):.1f}",
            "x-ratelimit-reset": str(reset),
        }
        if not allowed:
            headers["Retry-After"] = str(reset)
        return allowed, headers
