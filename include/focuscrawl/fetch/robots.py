"""robots.txt per host: fetched once, cached with expiry, and the RFC 9309 fetch outcomes.

RFC 9309 2.3.1: a 2xx robots.txt is parsed; 4xx ("unavailable") means no rules apply; 5xx
or an unreachable server ("unreachable") means complete disallow, retried after
``unreachable_ttl``; redirects are followed up to five hops, beyond which the file counts as
unavailable; a cached copy is used for at most ``ttl`` (24 h, 2.4). 429 is treated as
unreachable, as Google does, since it says "slow down", not "no file". A ``Crawl-delay`` above
``max_crawl_delay`` is treated as disallow-all, as crawler-commons does, instead of waiting hours.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable

from focuscrawl.fetch.errors import FetchError, TooManyRedirectsError
from focuscrawl.parse import Rejection
from focuscrawl.parse.robots import ALLOW_ALL, DISALLOW_ALL, AgentRules, parse_robots

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RobotsResponse:
    status: int
    body: bytes


def host_key(url: str) -> str:
    """``scheme://host:port``: the scope of one robots.txt and one politeness slot."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def robots_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))


class RobotsCache:
    """The :class:`AgentRules` for each host, fetched through ``fetch`` and kept for ``ttl`` seconds."""

    def __init__(
        self,
        fetch: Callable[[str], RobotsResponse],
        user_agent: str,
        ttl: float = 24 * 3600,
        unreachable_ttl: float = 600,
        max_crawl_delay: float = 60,
        on_rejection: Callable[[Rejection], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fetch = fetch
        self.clock = clock  # the fetcher's politeness clock: one time for its waits and its cache
        self.user_agent = user_agent
        self.ttl = ttl
        self.unreachable_ttl = unreachable_ttl
        self.max_crawl_delay = max_crawl_delay
        self.on_rejection = on_rejection
        self._cache: dict[str, tuple[float, AgentRules]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def rules(self, url: str) -> AgentRules:
        key = host_key(url)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one robots.txt fetch per host even with many threads waiting on it
            cached = self._cache.get(key)
            if cached is not None and cached[0] > self.clock():
                return cached[1]
            rules, ttl = self._load(robots_url(url))
            self._cache[key] = (self.clock() + ttl, rules)
            return rules

    def _load(self, url: str) -> tuple[AgentRules, float]:
        try:
            response = self.fetch(url)
        except TooManyRedirectsError:
            log.info("robots.txt %s redirects more than 5 times: treated as unavailable, no rules apply", url)
            return ALLOW_ALL, self.ttl
        except FetchError as exc:  # 5xx after retries, unreachable, SSRF-blocked redirect
            log.warning("robots.txt %s unreachable (%s): host disallowed for %.0f s", url, exc, self.unreachable_ttl)
            return DISALLOW_ALL, self.unreachable_ttl
        if 200 <= response.status < 300:
            parsed = parse_robots(response.body, url)
            for rejection in parsed.rejections:
                if self.on_rejection is not None:
                    self.on_rejection(rejection)
            rules = parsed.robots.for_agent(self.user_agent)
            if rules.crawl_delay is not None and rules.crawl_delay > self.max_crawl_delay:
                log.warning("robots.txt %s asks Crawl-delay %s s > max_crawl_delay %s s: host disallowed",
                            url, rules.crawl_delay, self.max_crawl_delay)
                return DISALLOW_ALL, self.ttl
            return rules, self.ttl
        if 400 <= response.status < 500 and response.status != 429:
            return ALLOW_ALL, self.ttl
        log.warning("robots.txt %s answered %d: host disallowed for %.0f s", url, response.status, self.unreachable_ttl)
        return DISALLOW_ALL, self.unreachable_ttl
