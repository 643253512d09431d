"""The one fetch layer every crawler uses, built on ``requests``.

Small pieces composed the way Scrapy composes middlewares, each usable and testable alone:
:class:`~focuscrawl.fetch.guard.AddressGuard` (SSRF), :class:`~focuscrawl.fetch.robots.RobotsCache`,
:class:`~focuscrawl.fetch.politeness.HostPoliteness` and :class:`~focuscrawl.fetch.retry.RetryPolicy`.
Redirects are followed here, hop by hop, so every hop passes the SSRF guard and robots.txt
before a byte is sent to it; the body is streamed under a size limit and a total deadline. With an
``archive`` (:class:`~focuscrawl.fetch.warc.WarcArchive`) every response received, robots.txt and
redirect hops included, is written as WARC request/response records and the result names its record.
A fetch given the :class:`~focuscrawl.fetch.conditional.Validators` of an earlier one asks
conditionally (``If-None-Match``/``If-Modified-Since``) and returns a ``304 Not Modified`` as a result
with no body, archived as a WARC ``revisit`` record (:mod:`focuscrawl.fetch.conditional`).
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import requests

from focuscrawl.fetch.errors import (
    FetchConnectionError,
    FetchError,
    FetchTimeoutError,
    HTTPStatusError,
    RedirectLoopError,
    ResponseTooLargeError,
    RetriesExhaustedError,
    RobotsDisallowedError,
    TooManyRedirectsError,
    UnexpectedContentTypeError,
)
from focuscrawl.fetch.guard import AddressGuard, GuardedAdapter
from focuscrawl.fetch.observer import FetchObserver
from focuscrawl.fetch.politeness import HostPoliteness
from focuscrawl.fetch.retry import RetryPolicy, parse_retry_after
from focuscrawl.fetch.robots import RobotsCache, RobotsResponse, host_key
from focuscrawl.parse import Rejection
from focuscrawl.parse.robots import MAX_ROBOTS_BYTES

if TYPE_CHECKING:  # pragma: no cover
    from focuscrawl.fetch.conditional import Validators
    from focuscrawl.fetch.warc import WarcArchive, WarcRef

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class FetchResult:
    url: str  # final URL, after redirects
    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str  # media type, lower-case, without parameters
    redirects: tuple[str, ...] = field(default_factory=tuple)  # URLs that redirected, in order
    elapsed: float = 0.0
    warc: "WarcRef | None" = None  # the response's WARC record (focuscrawl.fetch.warc), when archived


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _accepted(media: str, accept: Sequence[str]) -> bool:
    for wanted in accept:
        wanted = wanted.lower()
        if media == wanted or (wanted.endswith("/*") and media.startswith(wanted[:-1])):
            return True
    return False


class Fetcher:
    """``Fetcher(user_agent=...).fetch(url, accept=["application/json"])`` -> :class:`FetchResult`.

    Raises a :class:`~focuscrawl.fetch.errors.FetchError` subclass that names the fault and the fix.
    """

    def __init__(
        self,
        user_agent: str,
        guard: AddressGuard | None = None,
        politeness: HostPoliteness | None = None,
        retry: RetryPolicy | None = None,
        obey_robots: bool = True,
        robots_ttl: float = 24 * 3600,
        robots_unreachable_ttl: float = 600,
        max_crawl_delay: float = 60,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        total_timeout: float = 120.0,
        max_bytes: int = 10 * 1024 * 1024,
        max_redirects: int = 5,
        on_rejection: Callable[[Rejection], None] | None = None,
        observer: FetchObserver | None = None,
        archive: "WarcArchive | None" = None,
    ) -> None:
        self.user_agent = user_agent
        self.archive = archive  # WARC records of every response (closed by its owner, not by the fetcher)
        self.observer = observer or FetchObserver()  # metrics hook (focuscrawl.stream.metrics.FetchMetrics)
        self.guard = guard or AddressGuard()
        self.politeness = politeness or HostPoliteness()
        self.retry = retry or RetryPolicy()
        self.timeout = (connect_timeout, read_timeout)
        self.total_timeout = total_timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.robots = (
            RobotsCache(self._fetch_robots, user_agent, robots_ttl, robots_unreachable_ttl, max_crawl_delay, on_rejection,
                        clock=self.politeness.clock)
            if obey_robots
            else None
        )
        self.session = requests.Session()
        self.session.trust_env = False  # a proxy from the environment would bypass the SSRF guard
        self.session.headers["User-Agent"] = user_agent
        adapter = GuardedAdapter(self.guard)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        log.info(
            "fetcher on: ssrf guard (allow %s), politeness (min delay %.2f s, %d in flight per host), robots %s, "
            "retry (%d on %s), timeouts %s + %.0f s total, max %d bytes, %d redirects, WARC %s",
            list(self.guard.allow) or "nothing", self.politeness.min_delay, self.politeness.max_in_flight,
            "obeyed" if obey_robots else "OFF", self.retry.max_retries, self.retry.statuses, self.timeout,
            total_timeout, max_bytes, max_redirects, archive.folder if archive is not None else "off",
        )

    @classmethod
    def from_settings(cls, cfg=None, **kwargs) -> "Fetcher":
        """A fetcher with the user agent and SSRF allow-list of ``settings()``; ``kwargs`` override.
        A project site's fetcher (:func:`focuscrawl.fetch.site.fetcher_for_site`) also shares the
        site's politeness with every other instance."""
        from focuscrawl.config import settings

        cfg = cfg or settings()
        kwargs.setdefault("guard", AddressGuard(cfg.allow_private_hosts))
        return cls(user_agent=cfg.user_agent, **kwargs)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "Fetcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def fetch(self, url: str, accept: Sequence[str] | None = None,
              validators: "Validators | None" = None, stop_at: Callable[[str], bool] | None = None) -> FetchResult:
        """GET ``url`` politely; ``accept`` lists media types (``text/*`` allowed) the caller can parse.

        With ``validators`` (of an earlier fetch of the page) the request is conditional and a
        ``304 Not Modified`` is a result (status 304, empty body), not an error. With ``stop_at``, a
        redirect to a URL it is true of (a page the caller already has) is not followed: the result is that
        redirect (its 3xx status, empty body) with the URL it points to as ``url``, as a crawler that
        queues redirect targets instead of following them (Heritrix) finds the target already seen."""
        result = self._follow(url, accept=accept, check_robots=self.robots is not None, max_bytes=self.max_bytes,
                              validators=validators, stop_at=stop_at)
        if result.status in REDIRECT_STATUSES and stop_at is not None:
            return result
        if not (200 <= result.status < 300 or (result.status == 304 and validators is not None)):
            raise HTTPStatusError(
                result.url, result.status,
                f"{result.url} answered HTTP {result.status}; the page is not there or not served to us",
            )
        return result

    def get(self, url: str, accept: Sequence[str] | None = None) -> bytes:
        """The body of :meth:`fetch`: what a crawler's ``source.get(url)`` needs."""
        return self.fetch(url, accept).body

    def _fetch_robots(self, url: str) -> RobotsResponse:
        result = self._follow(url, accept=None, check_robots=False, max_bytes=MAX_ROBOTS_BYTES, truncate=True)
        return RobotsResponse(result.status, result.body)

    def _follow(self, url: str, accept, check_robots: bool, max_bytes: int, truncate: bool = False,
                validators: "Validators | None" = None, stop_at: Callable[[str], bool] | None = None) -> FetchResult:
        started = time.monotonic()
        hops: list[str] = []
        current = url
        for _ in range(self.max_redirects + 1):
            self.guard.check_url(current)  # before robots.txt or the page gets a single packet
            delay = None
            if check_robots:
                rules = self.robots.rules(current)
                if not rules.allowed(current):
                    self.observer.robots_denied(host_key(current))
                    raise RobotsDisallowedError(
                        current,
                        f"robots.txt of {host_key(current)} disallows {current} for {self.user_agent!r}; "
                        "drop it from the frontier (retrying will not help)",
                    )
                delay = rules.crawl_delay
            result = self._get(current, delay, accept, max_bytes, truncate, started, validators)
            location = result.headers.get("Location")
            if result.status not in REDIRECT_STATUSES or not location:
                return FetchResult(result.url, result.status, result.headers, result.body, result.content_type,
                                   tuple(hops), time.monotonic() - started, result.warc)
            hops.append(current)
            current = urllib.parse.urljoin(current, location.strip())
            if current in hops or current == url:
                raise RedirectLoopError(url, f"{url} redirects in a loop ({' -> '.join(hops + [current])}); the site is misconfigured, skip it")
            if stop_at is not None and stop_at(current):
                return FetchResult(current, result.status, result.headers, b"", result.content_type, tuple(hops),
                                   time.monotonic() - started, result.warc)
        raise TooManyRedirectsError(
            url, f"{url} redirected more than {self.max_redirects} times ({' -> '.join(hops)}); raise max_redirects if that is expected"
        )

    def _get(self, url, delay, accept, max_bytes, truncate, started, validators=None) -> FetchResult:
        """One hop with politeness and retries; the body is read only for a final, accepted response."""
        host = host_key(url)
        conditional = validators.request_headers() if validators is not None else {}
        attempt = 0
        while True:
            failure: FetchError | None = None
            status = 0
            headers: dict[str, str] = {}
            with self.politeness.slot(host, delay):
                sent = time.monotonic()
                try:
                    response = self.session.get(url, allow_redirects=False, stream=True, timeout=self.timeout,
                                                headers=conditional or None)
                except requests.Timeout as exc:
                    failure = FetchTimeoutError(url, f"{url} timed out ({exc}); the host is slow: retry later or raise read_timeout")
                    self.observer.failure(host, "timeout")
                except requests.ConnectionError as exc:
                    failure = FetchConnectionError(url, f"cannot connect to {url} ({exc}); the host is down or the URL is wrong")
                    self.observer.failure(host, "connection")
                else:
                    with response:
                        status, headers = response.status_code, dict(response.headers)
                        self.observer.response(host, status, time.monotonic() - sent)
                        if status not in self.retry.statuses:
                            body = b""
                            media = media_type(headers.get("Content-Type"))
                            if status not in REDIRECT_STATUSES and 200 <= status < 300:
                                if accept is not None and not _accepted(media, accept):
                                    raise UnexpectedContentTypeError(
                                        url, f"{url} is {media or 'untyped'}, not one of {list(accept)}; it is not a page this crawler parses"
                                    )
                                body = self._read(response, url, max_bytes, truncate, started)
                                cut = "length" if truncate and len(body) >= max_bytes else None
                            elif status == 304 and validators is not None:
                                return FetchResult(url, status, headers, b"", media,
                                                   warc=self._archive(response, b"", None, validators))
                            else:
                                cut = "unspecified"  # a redirect's or an error's body is not read
                            return FetchResult(url, status, headers, body, media,
                                               warc=self._archive(response, body, cut))
                        self._archive(response, b"", "unspecified")  # a 429/503 before its retry
            wait = self.retry.wait(attempt, headers if status else None)
            if wait is None:
                if failure is not None:
                    raise failure
                asked = headers.get("Retry-After")
                raise RetriesExhaustedError(
                    url, status,
                    f"{url} answered HTTP {status} {attempt + 1} times"
                    + (f" (Retry-After: {asked}, above max_retry_after {self.retry.max_retry_after:.0f} s)" if asked else "")
                    + "; the host is overloaded or rate-limiting us: retry later, slower",
                )
            log.info("retrying %s in %.2f s (attempt %d, %s)", url, wait, attempt + 1, failure or f"HTTP {status}")
            self.observer.retry(host, wait, parse_retry_after(headers.get("Retry-After")) if status else None)
            self.politeness.defer(host, wait)
            attempt += 1

    def _archive(self, response: requests.Response, body: bytes, truncated: str | None,
                 not_modified: "Validators | None" = None) -> "WarcRef | None":
        """The response's WARC record (a 304's ``revisit`` record refers to the fetch ``not_modified`` came
        from), if archiving; a failing archive (a full disk) costs the record, not the fetch."""
        if self.archive is None:
            return None
        try:
            if not_modified is not None:
                return self.archive.revisit(response, not_modified.record_id)
            return self.archive.record(response, body, truncated)
        except OSError as exc:
            log.error("WARC record of %s not written (%s); free space under %s or set [warc] enabled = false",
                      response.url, exc, self.archive.folder)
            return None

    def _read(self, response: requests.Response, url: str, max_bytes: int, truncate: bool, started: float) -> bytes:
        declared = response.headers.get("Content-Length")
        if not truncate and declared and declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLargeError(url, f"{url} declares {declared} bytes, above max_bytes={max_bytes}; raise max_bytes to fetch it")
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(64 * 1024):
                size += len(chunk)
                chunks.append(chunk)
                if size > max_bytes:
                    if truncate:
                        break
                    raise ResponseTooLargeError(url, f"{url} sent more than max_bytes={max_bytes} bytes; raise max_bytes to fetch it")
                if time.monotonic() - started > self.total_timeout:
                    raise FetchTimeoutError(url, f"{url} took over total_timeout={self.total_timeout:.0f} s; the host is too slow")
        except requests.RequestException as exc:
            raise FetchConnectionError(url, f"{url} broke off mid-body ({exc}); retry later") from None
        return b"".join(chunks)[:max_bytes]
