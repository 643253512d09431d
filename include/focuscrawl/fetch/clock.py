"""The site clock: what time it is on the site, read from the crawl surface only.

Every HTTP response carries a ``Date`` header (RFC 9110 6.6.1: the origin's clock when the
response was generated, whole seconds). A crawler that times its decisions by the site (recrawl
intervals, revisit periods, the moment a verdict was made) reads that, never a side channel:
a real site runs on UTC, and the world sends its simulated time there, so the same code runs
on both. Between responses the clock extrapolates at the rate it measured over the recent
responses (a world sped up 60x moves 60 site seconds per wall second; a real site 1), so a
crawler idle for a while does not freeze its own time. When no response arrived for
``refresh_s`` wall seconds and a ``probe`` is given (a fetch of the site's robots.txt through
the fetch layer), the clock asks again. Record timestamps (a post's ``created_utc``) can only
raise it: the site cannot have served something dated after its own now.

:meth:`SiteClock.attach` hooks the clock onto a :class:`~focuscrawl.fetch.Fetcher`'s session
(``requests`` response hooks), so every response of that fetcher, robots.txt and retries
included, is observed without a line in the fetch path.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from collections import deque
from typing import Callable

log = logging.getLogger(__name__)


class SiteClockUnknown(RuntimeError):
    """No response from the site yet, so there is no site time to read."""


def parse_http_date(value: str | None) -> float | None:
    """Unix seconds of an HTTP ``Date`` value, or None when absent or unreadable."""
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


class SiteClock:
    """``clock()`` -> the site's now (Unix seconds), from the ``Date`` of its responses.

    ``window_s``: wall seconds of observations the rate is fitted over (least squares, so the
    one-second resolution of ``Date`` averages out); ``min_span_s``: the span needed before the
    fit is trusted (rate 1, a real site's, until then); ``jump_s``: an observation further than
    this from the extrapolation is a jump of the site's clock (a paused world moved on): the fit
    restarts from it (before the fit, anything faster than ``max_rate`` site seconds per wall second
    is a jump). The value returned never goes backwards.
    """

    def __init__(self, probe: Callable[[], object] | None = None, refresh_s: float = 30.0, window_s: float = 300.0,
                 min_span_s: float = 3.0, jump_s: float = 120.0, max_rate: float = 3600.0,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self.probe, self.refresh_s = probe, refresh_s
        self.window_s, self.min_span_s, self.jump_s, self.max_rate = window_s, min_span_s, jump_s, max_rate
        self._wall = wall
        self._lock = threading.Lock()
        self._obs: deque[tuple[float, float]] = deque(maxlen=512)  # (wall, site)
        # The rate fitted to _obs as it stands, None once it changed: a crawler reads the clock far more often than a
        # response arrives, and the fit over 512 observations cost its process most of its CPU (the source crawler
        # of the e2e at ea55829: 55% of its samples).
        self._rate: float | None = None
        self._floor = float("-inf")
        self._returned = float("-inf")
        self.observed = 0
        self.jumps = 0

    # -- feeding ----------------------------------------------------------------------------
    def attach(self, fetcher) -> "SiteClock":
        """Observe every response of ``fetcher`` (its ``requests`` session's response hook)."""
        fetcher.session.hooks.setdefault("response", []).append(self._on_response)
        fetcher.site_clock = self
        return self

    def _on_response(self, response, *args, **kwargs):
        self.observe(response.headers.get("Date"))
        return response

    def observe(self, date: str | float | None) -> None:
        """One response's ``Date`` (the header value or Unix seconds); unreadable values are ignored."""
        site = parse_http_date(date) if isinstance(date, str) or date is None else float(date)
        if site is None:
            return
        wall = self._wall()
        with self._lock:
            if self._obs:
                # With a trusted fit the tolerance grows with the distance extrapolated; before it, any
                # rate up to max_rate is believable (a world sped up 60x must not look like a jump).
                predicted = self._extrapolate_locked(wall)
                since = max(0.0, wall - self._obs[-1][0])
                slack = 0.2 * abs(predicted - self._obs[-1][1]) if self._fitted_locked() else self.max_rate * since
                if abs(site - predicted) > self.jump_s + slack:
                    self._obs.clear()
                    self.jumps += 1
            self._obs.append((wall, site))
            self._rate = None
            self.observed += 1

    def at_least(self, site_time: float) -> None:
        """A record stamped ``site_time`` was served: the site's now is no earlier."""
        with self._lock:
            self._floor = max(self._floor, float(site_time))

    # -- reading ----------------------------------------------------------------------------
    def rate(self) -> float:
        """Site seconds per wall second over the window (1.0 until the span is long enough)."""
        with self._lock:
            return self._rate_locked()

    def _fitted_locked(self) -> bool:
        return len(self._obs) >= 2 and self._obs[-1][0] - self._obs[0][0] >= self.min_span_s

    def _rate_locked(self) -> float:
        if not self._fitted_locked():
            return 1.0
        if self._rate is None:
            self._rate = self._fit(self._obs)
        return self._rate

    @staticmethod
    def _fit(obs: deque[tuple[float, float]]) -> float:
        """The least-squares slope of site time on wall time (never negative)."""
        n = len(obs)
        mw = sum(w for w, _ in obs) / n
        ms = sum(s for _, s in obs) / n
        var = sum((w - mw) ** 2 for w, _ in obs)
        return max(0.0, sum((w - mw) * (s - ms) for w, s in obs) / var)

    def _extrapolate_locked(self, wall: float) -> float:
        while len(self._obs) > 2 and wall - self._obs[0][0] > self.window_s:
            self._obs.popleft()
            self._rate = None
        last_wall, last_site = self._obs[-1]
        return last_site + self._rate_locked() * (wall - last_wall)

    def __call__(self) -> float:
        wall = self._wall()
        stale = not self._obs or wall - self._obs[-1][0] > self.refresh_s
        if stale and self.probe is not None:
            try:
                self.probe()
            except Exception as exc:  # noqa: BLE001 - any fetch error: the extrapolation stands
                if not self._obs:
                    raise SiteClockUnknown(f"the site's clock probe failed ({exc}); is the site up?") from exc
                log.warning("site clock probe failed (%s); extrapolating from the last response", exc)
        with self._lock:
            if not self._obs:
                if self._floor > float("-inf"):
                    return self._floor
                raise SiteClockUnknown("no response from the site yet: fetch a page (or give the clock a probe) first")
            now = max(self._extrapolate_locked(self._wall()), self._floor, self._returned)
            self._returned = now
            return now

    def wall_until(self, site_time: float) -> float:
        """Wall seconds until ``self()`` reads ``site_time`` if no response arrives meanwhile (0 when it
        already does; the extrapolation at the measured rate), at most until the clock goes stale and
        its next call probes the site (then it reads the site again): how long a loop timed by this
        clock may sleep without acting later than polling it would."""
        wall = self._wall()
        with self._lock:
            if not self._obs:
                return 0.0
            until = 0.0
            if max(self._floor, self._returned) < site_time:
                ahead = site_time - self._extrapolate_locked(wall)
                rate = self._rate_locked()
                until = 0.0 if ahead <= 0 else ahead / rate if rate > 0 else float("inf")
            if self.probe is not None:  # stale once strictly more than refresh_s passed: a millisecond after
                until = min(until, max(0.0, self._obs[-1][0] + self.refresh_s + 0.001 - wall))
            return until

    def state(self) -> dict:
        """For status files: the last site time read, the measured rate, observations and jumps."""
        with self._lock:
            return {"site_now": None if self._returned == float("-inf") else self._returned,
                    "rate": round(self._rate_locked(), 4), "observed": self.observed, "jumps": self.jumps}


def robots_url(url: str) -> str:
    """``scheme://host/robots.txt`` of ``url``: the cheapest page every polite site serves."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"
