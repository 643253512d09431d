"""Crawl scope and trap rules: which URLs a crawler may enqueue, and why it refuses the others.

Every crawler asks :meth:`Scope.admit` before a URL joins its frontier. A URL is refused, with
one :class:`Refusal` naming the rule (``reason``) and the numbers that broke it, when:

- it matches none of the site's ``allow`` patterns (when there are any) or one of its ``deny``
  patterns (regular expressions searched in the canonical URL);
- it lies more than ``max_depth`` links from a seed, or its host already holds
  ``max_pages_per_host`` admitted pages;
- it is longer than ``max_url_length`` characters or has more than ``max_query_params`` query
  parameters;
- its directory (the path up to its last ``/``) already had ``max_directory_loops`` URLs end in a
  redirect loop and none that was a page (:meth:`Scope.fetched` tells both; a looping directory is a
  misconfigured part of the site, and each of its links costs two requests to find out);
- it looks like a crawler trap: one path segment repeated more than ``max_segment_repeats``
  times (``/a/b/a/b/a/b``), a date-like value (``2024-05``, ``20240517``, ``/2024/05/``) stepping
  from link to link on one URL pattern more than ``max_date_steps`` times in a row (a calendar's
  "next month" without end; an archive listing its months on one page is no step), or a query
  string that keeps growing from link to link (the link's query extends its parent's) more than
  ``max_query_growth`` times.

The rules are Heritrix's decide rules (``MatchesRegexDecideRule``, ``TooManyHopsDecideRule``,
``PathologicalPathDecideRule``, ``TooManyPathSegmentsDecideRule``; see
https://heritrix.readthedocs.io/en/latest/configuring-jobs.html#decide-rules) and the trap
classes of "Crawler traps" in Olston and Najork, "Web Crawling", Foundations and Trends in
Information Retrieval 4(3), 2010, section 6 (calendars, session ids, repeated path segments).
After the fetch, ``detect_soft404`` refuses a page that is its site's "not found" page answered
``200 OK`` (:class:`focuscrawl.fetch.soft404.Soft404Probe`), which the crawler then forgets.

Every default is neutral (off), except the two limits no real page needs: ``max_url_length``
(sitemaps.org: URLs "must be less than 2,048 characters") and ``max_segment_repeats`` (Heritrix's
``PathologicalPathDecideRule`` refuses a segment repeated more than twice; three here).

Nothing is dropped silently: each refusal goes to ``on_refusal`` (the process counts it in
``focuscrawl_scope_refused_total{reason}`` and sends it to the dead-letter topic, see
:meth:`Refusal.rejection`).

Across a restart the dead-letter rows are the durable count of refusals; the counter is not. A
Prometheus counter counts what one process did since it started and starts at zero again in the next
(https://prometheus.io/docs/concepts/metric_types/#counter: it "can only increase or be reset to zero
on restart"); ``rate()`` and ``increase()`` take a drop as a reset and add across it, so a counter that
resumed from a stored value would be read as no reset at all and its restored part never counted. What
a restart must not do is decide a URL again and report it twice: a restarted crawler rebuilds this
state by deciding again the URLs it had met (:meth:`Scope.replaying`), and those decisions are neither
counted nor sent, since the process before the restart counted and sent them.
"""

from __future__ import annotations

import contextlib
import re
import threading
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from focuscrawl.parse.rejection import Rejection

PARSER = "scope"
REASONS = ("not_allowed", "denied", "too_deep", "host_budget", "url_too_long", "too_many_params",
           "trap_repeated_segment", "trap_date_steps", "trap_growing_query", "trap_redirect_loops")

# Date-like tokens: 2024-05-17, 2024/05, 2024-05, 20240517, 202405 (years 1900-2099, months 01-12).
_DATE = re.compile(r"(?<!\d)(19|20)\d\d([-/_.]?)(0[1-9]|1[0-2])(?:\2(0[1-9]|[12]\d|3[01]))?(?!\d)")
_YEAR = re.compile(r"^(19|20)\d\d$")
_MONTH_OR_DAY = re.compile(r"^(0?[1-9]|[12]\d|3[01])$")
_DATE_KEYS = re.compile(r"^(year|yr|y|month|mon|m|day|d|date|week|w|from|to|start|end|period)$", re.I)


class ScopeRules(BaseModel):
    """A site's scope: the ``[sites.scope]`` table of a project file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: tuple[str, ...] = Field((), description="regexes; when given, a URL must match one")
    deny: tuple[str, ...] = Field((), description="regexes; a URL matching one is refused")
    max_depth: Optional[int] = Field(None, ge=0, description="links from a seed at most (seeds are depth 0)")
    max_pages_per_host: Optional[int] = Field(None, gt=0, description="pages admitted per host at most")
    max_url_length: Optional[int] = Field(2048, gt=0, description="characters at most (sitemaps.org's limit)")
    max_query_params: Optional[int] = Field(None, ge=0, description="query parameters at most")
    max_segment_repeats: Optional[int] = Field(3, gt=0, description="times one path segment may occur")
    max_date_steps: Optional[int] = Field(None, ge=0, description="links in a row from a date page to the same page "
                                                                   "at another date")
    max_query_growth: Optional[int] = Field(None, gt=0, description="links in a row whose query extends the parent's")
    max_directory_loops: Optional[int] = Field(None, gt=0, description="URLs of one directory that may end in a "
                                                                       "redirect loop while none of it is a page")
    detect_soft404: bool = Field(False, description="after the fetch, refuse a page that is its directory's "
                                                    "\"not found\" answer (focuscrawl.fetch.soft404)")

    @field_validator("allow", "deny", mode="before")
    @classmethod
    def _patterns(cls, v):
        if isinstance(v, str):
            raise ValueError(f"{v!r} is one pattern, not a list; write [\"{v}\"]")
        for p in v if isinstance(v, (list, tuple)) else ():
            if not isinstance(p, str):
                raise ValueError(f"{p!r} is not a pattern; write regular expressions in quotes, e.g. \"/wiki/\"")
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"{p!r} is not a regular expression ({exc}); e.g. \"/calendar\\\\?\"") from None
        return v

    @classmethod
    def off(cls) -> "ScopeRules":
        """No rule at all (the bench's "before")."""
        return cls(max_url_length=None, max_segment_repeats=None)


@dataclass(frozen=True)
class Refusal:
    """Why a URL was not enqueued: ``reason`` is one of :data:`REASONS`, ``detail`` the numbers and the fix."""

    reason: str
    url: str
    detail: str

    def rejection(self) -> Rejection:
        """The parse layer's rejection of this URL, for the dead-letter topic (``parser`` = ``scope``)."""
        return Rejection(f"{self.reason}: {self.detail}", self.url, self.url, PARSER)


def _host(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts.netloc.lower()


def date_pattern(url: str) -> tuple[str, tuple[str, ...]] | None:
    """``(pattern, dates)`` of a URL with date-like values, else None: the URL with every date value
    replaced by ``{date}`` (the calendar page), and the date values in order (the step)."""
    parts = urllib.parse.urlsplit(url)
    dates: list[str] = []

    def sub(text: str) -> str:
        def one(m: re.Match) -> str:
            dates.append(m.group(0))
            return "{date}"

        return _DATE.sub(one, text)

    segments = parts.path.split("/")
    path_out = []
    for i, seg in enumerate(segments):  # /2024/05/17/ as separate segments
        if _YEAR.match(seg) or (i and _YEAR.match(segments[i - 1] or "") and _MONTH_OR_DAY.match(seg)) or (
                i > 1 and _YEAR.match(segments[i - 2] or "") and _MONTH_OR_DAY.match(segments[i - 1] or "")
                and _MONTH_OR_DAY.match(seg)):
            dates.append(seg)
            path_out.append("{date}")
        else:
            path_out.append(sub(seg))
    query_out = []
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if _DATE_KEYS.match(name) and value.isdigit():
            dates.append(f"{name}={value}")
            query_out.append(f"{name}={{date}}")
        else:
            query_out.append(f"{name}={sub(value)}")
    if not dates:
        return None
    return f"{parts.netloc.lower()}{'/'.join(path_out)}?{'&'.join(sorted(query_out))}", tuple(dates)


class Scope:
    """``Scope(rules, on_refusal=...).admit(url, depth=1, parent=page)`` -> None (enqueue it) or a :class:`Refusal`.

    Stateful (per-host counts, date steps, query growth), thread-safe. A URL admitted once is
    admitted again without counting twice; ``host_of`` names a URL's host (the world serves its
    sites as ``/site/<host>/`` of one origin: ``focuscrawl.outlinks.urls.virtual_host_domain``).
    """

    def __init__(self, rules: ScopeRules | None = None, on_refusal: Callable[[Refusal], None] | None = None,
                 host_of: Callable[[str], str] = _host) -> None:
        self.rules = rules or ScopeRules()
        self.on_refusal = on_refusal
        self.host_of = host_of
        self._allow = [re.compile(p) for p in self.rules.allow]
        self._deny = [re.compile(p) for p in self.rules.deny]
        self._lock = threading.Lock()
        self._admitted: set[str] = set()
        self._per_host: dict[str, int] = defaultdict(int)
        self._steps: dict[str, int] = {}
        self._growth: dict[str, int] = {}
        self.refused: dict[str, int] = defaultdict(int)
        self._replaying = False
        self._loops: dict[str, int] = defaultdict(int)  # directory -> its URLs that ended in a redirect loop
        self._pages: set[str] = set()  # directories with a URL that was a page

    @contextlib.contextmanager
    def replaying(self):
        """Rebuild the state (admitted pages, per-host counts, date steps, query growth) by deciding again the
        URLs a crawler met before its restart: refusals are decided as before but neither counted in
        :attr:`refused` nor sent to ``on_refusal`` (they were, before the restart)."""
        with self._lock:
            self._replaying = True
        try:
            yield self
        finally:
            with self._lock:
                self._replaying = False

    def fetched(self, url: str, looped: bool) -> None:
        """After the fetch of ``url`` (admitted before): whether it ended in a redirect loop or was a page."""
        directory = url.rsplit("/", 1)[0]
        with self._lock:
            if looped:
                self._loops[directory] += 1
            else:
                self._pages.add(directory)

    def _looping(self, url: str) -> Refusal | None:
        limit = self.rules.max_directory_loops
        directory = url.rsplit("/", 1)[0]
        if limit is None or self._loops.get(directory, 0) < limit or directory in self._pages:
            return None
        return Refusal("trap_redirect_loops", url, f"{self._loops[directory]} URLs of {directory}/ ended in a redirect "
                                                   f"loop and none was a page (max_directory_loops {limit})")

    def recheck(self, url: str) -> Refusal | None:
        """Before the fetch of ``url``, admitted earlier: refused now if what was learned since (a looping
        directory) refuses it; the refusal is counted and reported as :meth:`admit`'s are."""
        with self._lock:
            refusal = self._looping(url)
        return None if refusal is None else self.revoke(refusal)

    def revoke(self, refusal: Refusal) -> Refusal:
        """Refuse a URL admitted before (what the crawl learned since refuses it): counted and reported as
        :meth:`admit`'s refusals are, except while :meth:`replaying`."""
        with self._lock:
            self._admitted.discard(refusal.url)
        return self._refuse(refusal)

    def admit(self, url: str, depth: int = 0, parent: str | None = None) -> Refusal | None:
        """Decide on ``url`` (a canonical key), ``depth`` links from a seed, found on ``parent``."""
        with self._lock:
            if url in self._admitted:
                return None
            refusal = self._check(url, depth, parent)
            if refusal is None:
                self._admitted.add(url)
                self._per_host[self.host_of(url)] += 1
                return None
        return self._refuse(refusal)

    def _refuse(self, refusal: Refusal) -> Refusal:
        """Count ``refusal`` and hand it to ``on_refusal``, except while :meth:`replaying` (a restart's
        replay refuses again what was counted and reported before it)."""
        with self._lock:
            if self._replaying:
                return refusal
            self.refused[refusal.reason] += 1
        if self.on_refusal is not None:
            self.on_refusal(refusal)
        return refusal

    def _check(self, url: str, depth: int, parent: str | None) -> Refusal | None:
        r = self.rules
        if self._allow and not any(p.search(url) for p in self._allow):
            return Refusal("not_allowed", url, f"matches none of allow {list(r.allow)}; add a pattern to allow it")
        for p in self._deny:
            if p.search(url):
                return Refusal("denied", url, f"matches deny pattern {p.pattern!r}")
        if r.max_url_length is not None and len(url) > r.max_url_length:
            return Refusal("url_too_long", url, f"{len(url)} characters > max_url_length {r.max_url_length}")
        parts = urllib.parse.urlsplit(url)
        params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        if r.max_query_params is not None and len(params) > r.max_query_params:
            return Refusal("too_many_params", url, f"{len(params)} query parameters > max_query_params {r.max_query_params}")
        if r.max_segment_repeats is not None:
            counts: dict[str, int] = defaultdict(int)
            for seg in (s for s in parts.path.split("/") if s):
                counts[seg] += 1
            seg, n = max(counts.items(), key=lambda kv: kv[1], default=("", 0))
            if n > r.max_segment_repeats:
                return Refusal("trap_repeated_segment", url,
                               f"path segment {seg!r} occurs {n} times > max_segment_repeats {r.max_segment_repeats}")
        refusal = self._looping(url)
        if refusal is not None:
            return refusal
        if r.max_depth is not None and depth > r.max_depth:
            return Refusal("too_deep", url, f"{depth} links from a seed > max_depth {r.max_depth}")
        host = self.host_of(url)
        if r.max_pages_per_host is not None and self._per_host[host] >= r.max_pages_per_host:
            return Refusal("host_budget", url, f"host {host} already has max_pages_per_host {r.max_pages_per_host} pages")
        if r.max_query_growth is not None and parent is not None:
            growth = self._query_growth(url, parts, parent)
            if growth > r.max_query_growth:
                return Refusal("trap_growing_query", url,
                               f"its query grew from its parent's {growth} links in a row > max_query_growth "
                               f"{r.max_query_growth}")
            self._growth[url] = growth
        if r.max_date_steps is not None:
            steps = self._date_steps(url, parent)
            if steps > r.max_date_steps:
                return Refusal("trap_date_steps", url,
                               f"{steps} links in a row from a date page to the same page at another date > "
                               f"max_date_steps {r.max_date_steps} (a calendar without end?)")
            self._steps[url] = steps
        return None

    def _date_steps(self, url: str, parent: str | None) -> int:
        """Links in a row (ending at ``url``) from a page with date values to the same page with others."""
        if parent is None:
            return 0
        mine, theirs = date_pattern(url), date_pattern(parent)
        if mine is None or theirs is None or mine[0] != theirs[0] or mine[1] == theirs[1]:
            return 0
        return self._steps.get(parent, 0) + 1

    def _query_growth(self, url: str, parts, parent: str) -> int:
        """Links in a row (ending at ``url``) on one host and path whose query extends the previous one's."""
        up = urllib.parse.urlsplit(parent)
        if (up.netloc, up.path) != (parts.netloc, parts.path) or len(parts.query) <= len(up.query):
            return 0
        mine = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        theirs = urllib.parse.parse_qsl(up.query, keep_blank_values=True)
        remaining = list(mine)
        for pair in theirs:
            if pair not in remaining:
                return 0
            remaining.remove(pair)
        return self._growth.get(parent, 0) + 1

    def status(self) -> dict:
        with self._lock:
            return {"admitted": len(self._admitted), "refused": dict(self.refused)}


__all__ = ["PARSER", "REASONS", "Refusal", "Scope", "ScopeRules", "date_pattern"]
