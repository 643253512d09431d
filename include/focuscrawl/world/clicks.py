"""The crawl-side click log: the clicks a search engine sees on the pages it crawled (seed 001).

Seed 001 (*Timely crawling of high-quality ephemeral new content*), section 3) learns a source's profit and profit decay from
the clicks its new pages receive. A real search engine does not read a site's analytics: it knows
the clicks on *its own* result pages, so only for pages it has crawled (an uncrawled page is not in
its index and gets no clicks from it), and only from the moment it crawled them. The world emulates
that log on its crawl surface::

    GET /search/clicks.json?since=T -> {"since": T, "until": now,
                                        "clicks": [{"path": "/site/h/n/3-7", "crawled_at": t, "clicks": x}, ...]}

``clicks`` is what page ``path`` collected between ``max(since, crawled_at)`` and ``now`` (simulated
seconds), where ``crawled_at`` is when *this client* (``X-Client-Id``, else address and User-Agent,
the rate limiter's identity) first fetched the page whole. A client that never fetched a page never
hears of it; clicks before its first fetch are never reported.

Why this is not ground truth: the evaluation side's figures (``/truth/pages`` on the evaluation port)
hold every page a source published, crawled or not, its profit ``P_i`` (the clicks it collects in the
end), its decay ``μ`` and its publication time. None of those appear here: a crawler that learns
profit from this log sees the truncated, crawl-dependent slice a search engine sees, and a page it
reached late shows it less of its profit, which is the very effect the seed's scheduler must learn.
"""

from __future__ import annotations

import json
import re
import threading

from focuscrawl.ephemeral.crawler import CLICKS_PATH  # the contract is the crawler's, as graph/access.py's is

__all__ = ["CLICKS_PATH", "CrawlClickLog"]
_NEW_PAGE = re.compile(r"^/site/([^/]+)/n/(\d+)-(\d+)$")


class CrawlClickLog:
    """Per client, the first fetch time of every new page it was served whole."""

    def __init__(self) -> None:
        self._first: dict[str, dict[str, float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _page(web, path: str, now: float):
        """``(source, k, published)`` of a new page that exists at ``now``, else None."""
        m = _NEW_PAGE.match(path)
        if web is None or m is None:
            return None
        host, s, k = m.group(1), int(m.group(2)), int(m.group(3))
        if s >= len(web.sources) or web.sources[s].host != host:
            return None
        times = web.published(s, now)
        return (web.sources[s], k, times[k]) if k < len(times) else None

    def crawled(self, client: str, path: str, now: float, web) -> None:
        """``client`` was just served ``path`` whole at simulated ``now``."""
        if self._page(web, path, now) is None:
            return
        with self._lock:
            self._first.setdefault(client, {}).setdefault(path, now)

    def clicks(self, client: str, since: float, now: float, web) -> dict:
        """The answer of :data:`CLICKS_PATH` for ``client``."""
        with self._lock:
            first = sorted(self._first.get(client, {}).items())
        rows = []
        for path, crawled_at in first:
            src, k, published = self._page(web, path, now)
            start = max(since, crawled_at)
            if now > start:
                rows.append({"path": path, "crawled_at": crawled_at,
                             "clicks": round(web.clicks(src, k, published, now) - web.clicks(src, k, published, start), 6)})
        return {"since": since, "until": now, "clicks": rows}

    def answer(self, client: str, q: dict[str, str], now: float, web) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` of a :data:`CLICKS_PATH` request."""
        ctype = "application/json; charset=UTF-8"
        try:
            since = float(q.get("since", "0"))
        except ValueError:
            return 400, ctype, json.dumps({"error": 400, "message": "since must be a number of seconds"}).encode()
        if web is None:
            return 404, ctype, json.dumps({"error": 404, "message": "this world has no web part"}).encode()
        return 200, ctype, json.dumps(self.clicks(client, since, now, web), sort_keys=True).encode()
