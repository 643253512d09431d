"""What the fetch layer tells an observer about each request: the hook metrics are counted through.

The :class:`~focuscrawl.fetch.fetcher.Fetcher` calls one :class:`FetchObserver` (``observer=``) at
each outcome: a response (any status, 429 included), a transport failure, a retry and the wait
before it (the part a server's ``Retry-After`` asked for, RFC 9110 10.2.3), and a robots.txt denial
(RFC 9309 2.2). The base class does nothing, so a fetcher without metrics pays one method call;
:class:`focuscrawl.stream.metrics.FetchMetrics` turns the calls into Prometheus counters. Observers must
not raise: they run inside the fetch.
"""

from __future__ import annotations


class FetchObserver:
    """No-op base: override the outcomes you count. ``host`` is ``scheme://host:port``."""

    def response(self, host: str, status: int, seconds: float) -> None:
        """A response arrived (before redirects are followed or retries decided)."""

    def failure(self, host: str, kind: str) -> None:
        """No response: ``kind`` is ``"timeout"`` or ``"connection"``."""

    def retry(self, host: str, wait: float, retry_after: float | None) -> None:
        """The fetch waits ``wait`` seconds and tries again; ``retry_after``: what the server asked, if it did."""

    def robots_denied(self, host: str) -> None:
        """robots.txt disallows the URL for our user agent; it is not fetched."""
