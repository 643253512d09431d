"""Conditional revisits: keep each page's validators, ask "changed since?", tell what came back.

HTTP's conditional requests (RFC 9110, section 13.1: ``If-None-Match`` against the ``ETag`` a
server gave, ``If-Modified-Since`` against its ``Last-Modified``) let a server answer ``304 Not
Modified`` with no body when a page has not changed: a revisit crawl of mostly unchanged pages then
costs headers, not bodies. StormCrawler and Nutch revisit this way. Servers that ignore validators
(no ``ETag``, or a full ``200`` to every conditional request) are caught by a digest of the body:
a full body identical to the one fetched before is as unchanged as a 304, only dearer, and is
counted apart.

:class:`Validators` is what is kept per canonical URL (small, JSON, restart-safe in whatever state
a crawler keeps); :class:`Revalidator` wraps a :class:`~focuscrawl.fetch.Fetcher`, sends the
validators it holds and classifies each answer as :data:`NEW`, :data:`CHANGED`,
:data:`NOT_MODIFIED` (a 304) or :data:`SAME_BODY` (a full body with the digest of the last one).
The fetcher writes a 304 to the WARC archive as a ``revisit`` record (WARC 1.1, section 6.7.2,
profile "server-not-modified").
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

from focuscrawl.core.records import JsonRecord
from focuscrawl.fetch.fetcher import REDIRECT_STATUSES

NEW, CHANGED, NOT_MODIFIED, SAME_BODY = "new", "changed", "not_modified", "same_body"
OUTCOMES = (NEW, CHANGED, NOT_MODIFIED, SAME_BODY)
REDIRECTED = "redirected"  # a redirect not followed (``stop_at``): no answer about the page, nothing counted
UNCHANGED = frozenset({NOT_MODIFIED, SAME_BODY})


def body_digest(body: bytes) -> str:
    """``sha1:<hex>`` of a response body as read (what tells a full but unchanged body)."""
    return "sha1:" + hashlib.sha1(body).hexdigest()


@dataclass(frozen=True)
class Validators(JsonRecord):
    """What a revisit needs of the last full fetch of a page: the server's validators (``etag``,
    ``last_modified``, verbatim), the body's :func:`body_digest` and size, and the WARC record of that
    fetch (``record_id``, which a revisit record refers to)."""

    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    length: int = 0
    record_id: str | None = None

    @classmethod
    def of(cls, headers: dict[str, str], body: bytes, record_id: str | None = None) -> "Validators":
        folded = {k.lower(): v for k, v in headers.items()}
        return cls(folded.get("etag"), folded.get("last-modified"), body_digest(body), len(body), record_id)

    def request_headers(self) -> dict[str, str]:
        """The conditional request headers these validators allow (none when the server gave none)."""
        out = {}
        if self.etag:
            out["If-None-Match"] = self.etag
        if self.last_modified:
            out["If-Modified-Since"] = self.last_modified
        return out


@dataclass(frozen=True)
class Revisit:
    """One conditional fetch: ``result`` (a 304's has an empty body), its ``outcome`` and the
    validators now held for the page (the previous ones after a 304)."""

    result: object
    outcome: str
    validators: Validators

    @property
    def unchanged(self) -> bool:
        return self.outcome in UNCHANGED


class Revalidator:
    """Fetch pages conditionally through ``fetcher`` (a :class:`~focuscrawl.fetch.Fetcher`), keyed by the
    caller's canonical key; ``on_outcome(outcome, bytes_saved)`` is told every answer (a process's
    Prometheus counters). Thread-safe. ``counts`` and ``bytes_saved`` go into a process's status."""

    def __init__(self, fetcher, on_outcome: Callable[[str, int], None] | None = None) -> None:
        self.fetcher = fetcher
        self.on_outcome = on_outcome
        self.known: dict[str, Validators] = {}
        self.counts = dict.fromkeys(OUTCOMES, 0)
        self.bytes_saved = 0
        self._lock = threading.Lock()

    def restore(self, key: str, validators: Validators | None) -> None:
        """Remember ``key``'s validators (from a restarted process's state)."""
        if validators is not None:
            with self._lock:
                self.known[key] = validators

    def move(self, key: str, to: str | None) -> None:
        """``key``'s validators are ``to``'s (a redirect's target): kept under ``to``; dropped when ``to`` is None."""
        with self._lock:
            validators = self.known.pop(key, None)
            if to is not None and validators is not None:
                self.known[to] = validators

    def fetch(self, url: str, key: str | None = None, accept: Sequence[str] | None = None,
              stop_at: Callable[[str], bool] | None = None) -> Revisit:
        """GET ``url`` with the validators held for ``key`` (default: ``url``); raises what the fetcher raises.
        ``stop_at`` goes to the fetcher: a redirect it stopped at is :data:`REDIRECTED`, the validators untouched."""
        key = url if key is None else key
        with self._lock:
            before = self.known.get(key)
        if stop_at is None:
            result = self.fetcher.fetch(url, accept=accept, validators=before)
        else:
            result = self.fetcher.fetch(url, accept=accept, validators=before, stop_at=stop_at)
        if result.status in REDIRECT_STATUSES and stop_at is not None:
            return Revisit(result, REDIRECTED, before)
        if result.status == 304 and before is not None:
            outcome, now, saved = NOT_MODIFIED, before, before.length
        else:
            now = Validators.of(result.headers, result.body, result.warc.record_id if result.warc else None)
            if before is None:
                outcome, saved = NEW, 0
            elif now.digest == before.digest:
                outcome, saved = SAME_BODY, 0
            else:
                outcome, saved = CHANGED, 0
        with self._lock:
            self.known[key] = now
            self.counts[outcome] += 1
            self.bytes_saved += saved
        if self.on_outcome is not None:
            self.on_outcome(outcome, saved)
        return Revisit(result, outcome, now)

    def status(self) -> dict:
        with self._lock:
            return {"revisit_outcomes": dict(self.counts), "bytes_saved": self.bytes_saved}


__all__ = ["CHANGED", "NEW", "NOT_MODIFIED", "OUTCOMES", "REDIRECTED", "Revalidator", "Revisit", "SAME_BODY", "UNCHANGED",
           "Validators", "body_digest"]
