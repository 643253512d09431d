"""Per-host politeness: at most ``max_in_flight`` requests per host, and a pause between them.

Issue 8, point 1 (as Heritrix and Scrapy's ``DOWNLOAD_DELAY`` do it): the pause runs from the
end of one request to the start of the next on the same host, and is the larger of the
configured ``min_delay`` and the host's robots.txt ``Crawl-delay``. A 429/503 ``Retry-After``
pushes the host's next slot back for every thread, not only the one that got it.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


@dataclass
class _Host:
    in_flight: int = 0
    next_start: float = 0.0


class HostPoliteness:
    """Thread-safe gate in front of every request, keyed by ``scheme://host:port``."""

    def __init__(self, min_delay: float = 1.0, max_in_flight: int = 1) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.min_delay = min_delay
        self.max_in_flight = max_in_flight
        self._hosts: dict[str, _Host] = {}
        self._cond = threading.Condition()

    @contextmanager
    def slot(self, host: str, delay: float | None = None) -> Iterator[None]:
        """Wait for a free, rested slot on ``host``; the pause after it is ``max(min_delay, delay)``."""
        pause = max(self.min_delay, delay or 0.0)
        with self._cond:
            state = self._hosts.setdefault(host, _Host())
            while True:
                wait = state.next_start - time.monotonic()
                if state.in_flight < self.max_in_flight and wait <= 0:
                    break
                self._cond.wait(timeout=wait if wait > 0 else None)
            state.in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                state.in_flight -= 1
                state.next_start = max(state.next_start, time.monotonic() + pause)
                self._cond.notify_all()

    def defer(self, host: str, seconds: float) -> None:
        """No request to ``host`` for ``seconds`` (a ``Retry-After``)."""
        with self._cond:
            state = self._hosts.setdefault(host, _Host())
            state.next_start = max(state.next_start, time.monotonic() + seconds)
            self._cond.notify_all()
