"""When to try again after 429/503 or a transient network error, and how long to wait.

``Retry-After`` (seconds or an HTTP date, RFC 9110 10.2.3) is honoured as a floor, with up to
10 % jitter so that crawlers told the same instant do not return together; without it the
wait is exponential with "equal jitter" (half fixed, half random), capped at ``max_delay``.
A server asking for more than ``max_retry_after`` seconds is not waited for: the fetch fails
with a message naming that setting.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header, or None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class RetryPolicy:
    def __init__(
        self,
        max_retries: int = 3,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        max_retry_after: float = 300.0,
        statuses: tuple[int, ...] = (429, 503),
        seed: int | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.statuses = statuses
        self._rng = random.Random(seed)

    def backoff(self, attempt: int) -> float:
        """Wait before retry number ``attempt`` (0-based) when the server gave no ``Retry-After``."""
        ceiling = min(self.max_delay, self.base_delay * 2**attempt)
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def wait(self, attempt: int, headers: Mapping[str, str] | None = None) -> float | None:
        """Seconds before retry ``attempt``, or None when retrying is pointless (out of attempts,
        or the server asked to wait longer than ``max_retry_after``)."""
        if attempt >= self.max_retries:
            return None
        asked = parse_retry_after((headers or {}).get("Retry-After"))
        if asked is None:
            return self.backoff(attempt)
        if asked > self.max_retry_after:
            return None
        return asked + self._rng.uniform(0, asked * 0.1)
