"""The page revisitor: refetch known pages once per period, snapshot their outlinks, best pages first
(seed 002, Sections 1 and 5.1).

The seed's crawler revisits known pages to find new outlinks and must choose which to revisit first:
every period (a week by default, on whatever clock it is given) each known page is fetched once,
in the order of the latest page priorities pushed by the batch side (the champion model's score of
each page; pages without a score come last, in the order they became known). Each fetch becomes
one row of ``page_snapshots``: the outlinks split internal/external by domain, a digest of the
page content *without* its outlinks (so that a changed link list is not a content change, which
would make the CCR baseline a disguised link-change rate), and the visible text from which the
static page features (words, URL depth, link counts) and the content embedding are derived.

Pages are keyed by their canonical URL (:func:`focuscrawl.parse.canon.canonical_url`, or a site's
``key_of``): seeds, discovered outlinks, pushed priorities and the table all use the one key. A page
whose fetch ends elsewhere (a redirect) or that declares another ``rel=canonical`` URL on its own site
is recorded under that URL's key, with the URL requested in ``fetched_url``; the requested key becomes
an alias of it and is not fetched again (a restart rebuilds the aliases from ``fetched_url``).

With a :class:`~focuscrawl.fetch.conditional.Revalidator` each revisit is a conditional GET with the
page's last ``ETag``/``Last-Modified``: a ``304`` (or a full body identical to the last) is a snapshot
marked ``unchanged`` that repeats the previous snapshot's text, main text, language, relevance, digest and
outlinks, so the look-back targets (:mod:`focuscrawl.outlinks.targets`) see what it is: no new outlink, no
content change. The
validators travel in the snapshot rows, so a restarted revisitor asks conditionally at once.

No I/O of its own: the revisitor gets a ``source`` (``get(url) -> bytes``, the fetch layer in
production, whose ``fetch`` also names the WARC record a snapshot row then points to), a ``clock`` (seconds) and an ``emit(row)``; :class:`SnapshotWriter` appends rows to
the Delta table; ``streaming/revisitor.py`` wires the fetch layer, the clock and the score topic.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from focuscrawl.core.dedup import Match, NearDuplicateIndex
from focuscrawl.fetch.conditional import NOT_MODIFIED, REDIRECTED, UNCHANGED, Revalidator, Validators
from focuscrawl.fetch.errors import RedirectLoopError, refusal_of
from focuscrawl.fetch.warc import warc_columns
from focuscrawl.core.frontier import PriorityFrontier
from focuscrawl.lake.decision import Decision
from focuscrawl.outlinks.params import WEEK
from focuscrawl.outlinks.urls import registered_domain, split_outlinks
from focuscrawl.parse.canon import canonical_url
from focuscrawl.parse.rejection import Rejection

if TYPE_CHECKING:  # pragma: no cover
    from focuscrawl.fetch.dust import DustRules
    from focuscrawl.fetch.scope import Scope
    from focuscrawl.fetch.soft404 import Soft404Probe

log = logging.getLogger(__name__)

class PageSource(Protocol):
    def get(self, url: str) -> bytes: ...


def page_parts(body: bytes, url: str, parsed=None) -> tuple[str, list[str], str | None]:
    """``(text, outlinks, canonical)`` of an HTML page: the visible text without anchors, scripts and
    styles, whitespace-normalised, the absolute http(s) outlinks in page order (canonical keys), and
    the page's declared ``rel=canonical`` key (None without one). ``parsed``: the page's
    :func:`~focuscrawl.parse.html.parse_links` when the caller has it already."""
    from lxml import etree, html

    from focuscrawl.parse.html import parse_links

    parsed = parsed if parsed is not None else parse_links(body, url)
    links = [link.url for link in parsed.links]
    try:
        doc = html.document_fromstring(body, parser=html.HTMLParser(recover=True, no_network=True,
                                                                    remove_comments=True))
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return "", links, parsed.canonical
    for element in doc.xpath("//a | //script | //style | //noscript"):
        element.drop_tree()  # keeps the element's tail text, which is not part of the link
    # Text nodes joined with spaces: adjacent blocks (<h1>Title</h1><p>Body) are separate words.
    return " ".join(" ".join(doc.itertext()).split()), links, parsed.canonical


def page_content(body: bytes, url: str) -> tuple[str, list[str]]:
    """``(text, outlinks)`` of :func:`page_parts`."""
    return page_parts(body, url)[:2]


def content_digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


# The columns a snapshot of an unchanged page repeats from the page's previous snapshot.
CONTENT_COLUMNS = ("content_digest", "text", "main_text", "language", "language_score", "relevance", "relevance_model",
                   "internal_outlinks", "external_outlinks")
VALIDATOR_COLUMNS = ("etag", "last_modified", "body_digest", "body_length")
# What chose a page no push has scored yet: the baseline order, pages as they became known (seeds first).
DISCOVERY_ORDER = Decision("revisits", "discovery_order")


def snapshot(url: str, body: bytes, period: int, fetched_at: float, status: int = 200,
             domain_of: Callable[[str], str] = registered_domain) -> dict:
    """One ``page_snapshots`` row (focuscrawl.outlinks.tables.SNAPSHOTS) of a fetched page: beside the
    visible text, its main text and language (:func:`focuscrawl.parse.text.page_text`)."""
    text, links, _ = page_parts(body, url)
    return _row(url, body, text, links, period, fetched_at, status, domain_of)


def _row(url: str, body: bytes, text: str, links: list[str], period: int, fetched_at: float, status: int,
         domain_of: Callable[[str], str]) -> dict:
    from focuscrawl.parse.text import page_text

    internal, external = split_outlinks(url, links, domain_of)
    clean = page_text(body, url, visible_text=text)
    return {"url": url, "period": int(period), "fetched_at": datetime.fromtimestamp(fetched_at, timezone.utc),
            "status": int(status), "content_digest": content_digest(text), "text": text,
            "main_text": clean.main_text, "language": clean.language, "language_score": clean.language_score,
            "internal_outlinks": internal, "external_outlinks": external}


def validator_columns(v: Validators | None) -> dict:
    """The snapshot columns that keep a page's validators (nulls without them)."""
    if v is None:
        return dict.fromkeys(VALIDATOR_COLUMNS)
    return {"etag": v.etag, "last_modified": v.last_modified, "body_digest": v.digest, "body_length": v.length}


def validators_of(row: dict) -> Validators | None:
    """The :class:`Validators` a snapshot row kept (None when it kept none); its WARC record is the one referred to."""
    if not row.get("body_digest"):
        return None
    return Validators(row.get("etag"), row.get("last_modified"), row["body_digest"], int(row.get("body_length") or 0),
                      row.get("warc_record_id") if row.get("status") != 304 else None)


class PageRevisitor:
    """Revisit every known page once per period, highest pushed priority first.

    ``ranking`` holds every known page at its current score (pushed priorities are 0-1; a page
    without one has ``unscored``, below any); at each new period the period's queue starts as a
    copy of it, and a pushed priority moves the page in both. Discovered outlinks matching
    ``discover`` (a regex) become known pages, queued in the current period too, up to ``max_pages``.
    Thread-safe between the revisit loop and the thread applying pushed priorities.

    With ``relevance`` (a :class:`focuscrawl.relevance.score.PageScorer`) every snapshot is scored in
    this process, the champion page relevance model's calibrated score of its main text landing in the
    row (``relevance``, ``relevance_model``); snapshots at or above the threshold are the loop's harvest
    (``relevant`` in :meth:`status`).

    With a ``near_duplicates`` index (the project switch ``[loops.revisits] skip_near_duplicates``),
    a page fetched for the first time whose text near-duplicates a page fetched before
    (:class:`focuscrawl.core.dedup.NearDuplicateIndex`) is skipped: no snapshot, its outlinks not
    followed, and it is no longer a known page, so no later period spends a fetch on it; each skip
    goes to ``on_near_duplicate(url, match)`` (the process counts it in its metrics).

    ``key_of`` makes a URL its key (default :func:`~focuscrawl.parse.canon.canonical_url`; a project
    site's :meth:`~focuscrawl.project.model.Site.canonical` adds its own tracking parameters); with ``dust``
    (:class:`~focuscrawl.fetch.dust.DustRules`) every alias this revisitor records teaches its site a rewrite
    rule, and a key is rewritten by the rules its site has learned before it is known, so the next page
    spelled the same way is not fetched under that spelling; ``revalidator``
    (over the same fetch layer as ``source``) makes revisits conditional (see the module docstring).

    With ``soft404`` (a :class:`~focuscrawl.fetch.soft404.Soft404Probe`) a page that is its directory's "not
    found" answer is refused for good: forgotten and sent to ``on_rejection``. Every revisit is checked, against
    the answers learned since and, for a page kept before, its own directory's (probed then, once), so a soft-404
    taken for content at its first fetch, before any twin showed it up, is refused at its next revisit.
    """

    def __init__(self, source: PageSource, emit: Callable[[dict], None], clock: Callable[[], float],
                 origin: float = 0.0, interval: float = WEEK, domain_of: Callable[[str], str] = registered_domain,
                 discover: str | None = None, max_pages: int = 100_000, unscored: float = -1.0,
                 near_duplicates: NearDuplicateIndex | None = None,
                 on_near_duplicate: Callable[[str, Match], None] | None = None,
                 key_of: Callable[[str], str] = canonical_url, revalidator: Revalidator | None = None,
                 relevance=None, scope: "Scope | None" = None,
                 on_rejection: Callable[[Rejection], None] | None = None,
                 soft404: "Soft404Probe | None" = None, dust: "DustRules | None" = None) -> None:
        self.source = source
        self.key_of = key_of
        self.dust = dust  # rewrite rules learned from this crawl's aliases (focuscrawl.fetch.dust), or None
        self.revalidator = revalidator
        self.aliases: dict[str, str] = {}  # a requested key -> the key its page is recorded under
        self.last: dict[str, dict] = {}    # key -> its latest snapshot's content columns (what a 304 repeats)
        self.on_rejection = on_rejection  # a page refused for good (a redirect loop, a 4xx, a soft-404)
        self.soft404 = soft404
        self.refused: set[str] = set()  # pages refused for good: never known again (this process)
        self.scope = scope  # asked before a page becomes known (focuscrawl.fetch.scope); None: every page
        self.depth: dict[str, int] = {}  # links from a seed, of every known page
        self.emit = emit
        self.clock = clock
        self.origin = origin
        self.interval = interval
        self.domain_of = domain_of
        self.discover = re.compile(discover) if discover else None
        self.max_pages = max_pages
        self.unscored = unscored
        self.ranking = PriorityFrontier()
        self.queue = PriorityFrontier()
        self.current_period: int | None = None
        self.done: set[str] = set()  # pages already snapshotted in the current period
        self.revisits = 0
        self.failures = 0
        self.malformed = 0  # fetched bodies that were not a page (dead-lettered, revisited next period)
        self.priorities_applied = 0
        self.pushed: dict[str, Decision] = {}  # key -> what its latest pushed priority said (model, version, score, rank)
        self.near_duplicates = near_duplicates
        self.on_near_duplicate = on_near_duplicate
        self.skipped: set[str] = set()  # pages skipped as near-duplicates: never known again (this process)
        self.relevance = relevance  # a focuscrawl.relevance.score.PageScorer, or None
        self.relevant = 0  # snapshots scored at or above the relevance threshold: the loop's harvest
        self._lock = threading.Lock()

    def period(self, now: float | None = None) -> int:
        """Index of the period ``now`` falls in (period 0 starts at ``origin``)."""
        return int(((self.clock() if now is None else now) - self.origin) // self.interval)

    def key(self, url: str) -> str | None:
        """The key ``url`` is known by: its canonical key, or what that key is an alias of; None if unparseable."""
        try:
            key = self.key_of(url)
        except (ValueError, UnicodeError):
            return None
        if self.dust is not None:
            key = self.dust(key)
        return self.aliases.get(key, key)

    def add(self, urls: Iterable[str], parent: str | None = None) -> int:
        """Make pages known (queued in the current period unless already done); returns how many were new.
        Each URL is known by its canonical key (:meth:`key`); with a ``scope``, each new key (``parent``'s
        outlink, or a seed when None) must be admitted first."""
        added = 0
        depth = 0 if parent is None else self.depth.get(parent, 0) + 1
        with self._lock:
            new = [u for u in dict.fromkeys(self.key(u) for u in urls) if u is not None and u not in self.ranking
                   and u not in self.skipped and u not in self.refused]
        if self.scope is not None:  # outside the lock: a refusal is reported (metrics, dead-letter topic)
            refusals = {u: self.scope.admit(u, depth, parent) for u in new}
            new = [u for u, refusal in refusals.items() if refusal is None]
            if parent is not None and any(r is not None and r.reason == "trap_date_steps" for r in refusals.values()):
                self._forget_date_page(parent)
        with self._lock:
            for url in new:
                if url in self.ranking or len(self.ranking) >= self.max_pages:
                    continue
                self.depth[url] = depth
                self.ranking.update(url, self.unscored)
                if self.current_period is not None and url not in self.done:
                    self.queue.update(url, self.unscored)
                added += 1
        return added

    def restore(self, seen: Iterable[tuple], seeds: Iterable[str] = (), latest: dict[str, dict] | None = None) -> None:
        """Resume from the snapshot table (the frontier is rebuilt from the Delta
        table the revisitor lands, so a SIGKILL loses no page and doubles no row).

        ``seen`` holds ``(url, period)``, ``(url, period, outlinks)`` or ``(url, period, outlinks,
        fetched_url)`` in fetch order (:meth:`SnapshotWriter.history`). Pages become known as a live run
        made them known: the ``seeds`` first, then each snapshotted page and the outlinks of it matching
        ``discover``, so ties in the ranking break the same way. Pages snapshotted in the current period
        are not fetched again; the rows a killed process had not flushed yet are fetched again. A
        ``fetched_url`` makes its key an alias again; ``latest`` (:meth:`SnapshotWriter.latest`) gives each
        page's last content and validators back, so the next revisit is conditional.
        """
        seen = list(seen)
        for item in seen:
            if len(item) > 3 and item[3]:
                alias = self.key(item[3])
                if alias is not None and alias != item[0]:
                    self.aliases[alias] = item[0]
                    if self.dust is not None:
                        self.dust.learn(alias, item[0])
        for url, row in (latest or {}).items():
            self.last[url] = {c: row.get(c) for c in CONTENT_COLUMNS}
            if self.revalidator is not None:
                self.revalidator.restore(url, validators_of(row))
        # the scope decides again what it decided before the restart, reporting nothing twice
        with self.scope.replaying() if self.scope is not None else contextlib.nullcontext():
            self.add(seeds)
            for item in seen:
                self.add([item[0]])
                if self.discover is not None and len(item) > 2:
                    self.add((u for u in item[2] if self.discover.search(u)), parent=item[0])
        now = self.period()
        with self._lock:
            self._start_period(now)
            for url, period, *_ in seen:
                if period == now:
                    self.done.add(url)
                    self.queue.discard(url)

    def apply_priority(self, url: str, score: float | None) -> None:
        """A pushed priority (``None``: the page's record was deleted from the compacted topic)."""
        value = self.unscored if score is None else float(score)
        url = self.key(url)
        with self._lock:
            if url in self.ranking:
                self.ranking.update(url, value)
            if url in self.queue:
                self.queue.update(url, value)
            self.priorities_applied += 1

    def apply_pushed(self, url: str, row: dict | None) -> None:
        """A pushed row (``score`` with the ``model``, ``model_version`` and ``rank`` of its push; None: deleted):
        :meth:`apply_priority`, and what chose the page kept for its next snapshot (``chosen_*`` columns)."""
        self.apply_priority(url, None if row is None else row["score"])
        key = self.key(url)
        with self._lock:
            if row is None:
                self.pushed.pop(key, None)
            else:  # the model's registered name: the spec before its scope (NNL-ET_LBLA/int)
                self.pushed[key] = Decision.of_push("revisits", str(row.get("model") or "pushed").split("/")[0], row)

    def _start_period(self, period: int) -> None:
        if period != self.current_period:
            self.current_period = period
            self.done = set()
            self.queue = PriorityFrontier(self.ranking.top(len(self.ranking)))

    def revisit_next(self) -> dict | None:
        """Fetch the best page due in the current period and emit its snapshot; None when none is due
        or the fetch failed (``source`` raised: logged and counted; the page waits for the next period).
        """
        now = self.clock()
        with self._lock:
            self._start_period(self.period(now))
            if not self.queue:
                return None
            url, _ = self.queue.pop()
            self.done.add(url)
            period = self.current_period
            chosen = self.pushed.get(url, DISCOVERY_ORDER)
        if self.scope is not None and self.scope.recheck(url) is not None:  # a trap learned since (reported)
            with self._lock:
                self.refused.add(url)
                self.ranking.discard(url)
            return None
        if self.dust is not None:  # a rule learned since the page became known: fetched as what it rewrites to
            rewritten = self.key(url)
            if rewritten is not None and rewritten != url:
                if not self._alias(url, rewritten, keep_validators=True):
                    return None  # that page was snapshotted this period already
                url = rewritten
        try:
            row = self._fetch(url, period, now)
        except Exception as exc:  # noqa: BLE001 - one bad page must not stop the revisits; the source's error says why
            self.failures += 1
            log.warning("revisit of %s failed: %s", url, exc)
            if self.scope is not None and isinstance(exc, RedirectLoopError):
                self.scope.fetched(url, looped=True)
            refused = refusal_of(url, exc)
            if refused is not None:
                self._refuse(refused)
            return None
        if row is None:
            return None
        row.update(chosen.columns())  # what chose this revisit, as it stood when the page was popped
        key = row["url"]  # the key the page is recorded under (``url`` or what it turned out to be an alias of)
        if self.scope is not None:
            self.scope.fetched(key, looped=False)
        if self.dust is not None and key == url and row["status"] == 200:
            self.dust.refute(url)  # its own page: no rule may rewrite it
        reason = None
        if self.soft404 is not None:  # a 304's text is its last snapshot's: checked against what is known now
            reason = self.soft404.check(key, row["text"], again=key in self.last)  # kept before: probe its directory
        if reason is not None:
            self._refuse(Rejection(reason, key, key, "soft404"))
            return None
        if self._near_duplicate(key, row["text"]):
            return None
        if self.relevance is not None:
            if row.get("relevance") is None:  # a 304 repeats its previous snapshot's score, when it had one
                row["relevance"], row["relevance_model"] = self.relevance.score(row["main_text"], row["language"])
            self.relevant += self.relevance.relevant(row["relevance"])
        self.last[row["url"]] = {c: row.get(c) for c in CONTENT_COLUMNS}
        self.emit(row)
        self.revisits += 1
        if self.discover is not None:
            self.add((u for u in row["internal_outlinks"] + row["external_outlinks"] if self.discover.search(u)),
                     parent=key)
        return row

    def _fetch(self, url: str, period: int, now: float) -> dict | None:
        """The snapshot row of a revisit of ``url`` (a key), under the key its page is recorded by; None
        when that key was already snapshotted this period."""
        revisit = None
        if self.revalidator is not None:  # a redirect to a page already snapshotted this period is not followed
            revisit = self.revalidator.fetch(url, stop_at=self._done_now)
            result = revisit.result
            if revisit.outcome == REDIRECTED:
                self._alias(url, self.key(result.url) or result.url, keep_validators=False)
                return None
        elif hasattr(self.source, "fetch"):
            result = self.source.fetch(url)
        else:  # a source with only get (a replay, a test double): no final URL, no WARC record
            result = None
        body = result.body if result is not None else self.source.get(url)
        final = self.key(result.url) if result is not None else url
        if revisit is not None and revisit.outcome == NOT_MODIFIED:  # only the recorded key had validators to send
            key, row = url, {**self.last[url], "url": url, "period": int(period), "status": 304,
                             "fetched_at": datetime.fromtimestamp(now, timezone.utc)}
        else:
            from focuscrawl.parse.html import parse_links

            base = result.url if result is not None else url
            parsed = parse_links(body, base)  # one parse: the not-a-page check and the links
            if parsed.unparsable is not None:  # no snapshot of a page with no text and no links: no row this period
                self.malformed += 1  # the Rejection logs it
                if self.on_rejection is not None:
                    self.on_rejection(parsed.unparsable)
                return None
            text, links, declared = page_parts(body, base, parsed)
            key = self._recorded_as(url, final, self.key(declared) if declared else None)
            row = _row(key, body, text, links, period, now, result.status if result is not None else 200,
                       self.domain_of)
        if key != url and not self._alias(url, key, keep_validators=key == final):
            return None
        return {**row, **warc_columns(result.warc if result is not None else None),
                "fetched_url": None if key == url else url,
                "unchanged": None if revisit is None else revisit.outcome in UNCHANGED,
                "revisit_outcome": None if revisit is None else revisit.outcome,
                **validator_columns(None if revisit is None else revisit.validators)}

    def _done_now(self, target: str) -> bool:
        """Whether ``target``'s page was snapshotted in the current period (its redirect need not be followed)."""
        key = self.key(target)
        with self._lock:
            return key is not None and key in self.done

    def _recorded_as(self, url: str, final: str | None, declared: str | None) -> str:
        """The key a page fetched as ``url`` is recorded under: its declared ``rel=canonical`` when that is on
        the same site (one pointing at another site is not trusted: RFC 6596's security considerations warn
        that a compromised page could hand its standing elsewhere), else where its redirects ended, else ``url``."""
        if declared is not None and self.domain_of(declared) == self.domain_of(final or url):
            return declared
        return final or url

    def _alias(self, url: str, key: str, keep_validators: bool) -> bool:
        """``url`` turned out to be ``key``'s page: never fetch ``url`` again, know ``key`` in its place (with
        the validators of this fetch when they are ``key``'s own response's). False when ``key`` was already
        snapshotted this period (the fetch was the duplicate)."""
        if self.dust is not None:
            self.dust.learn(url, key)
        with self._lock:
            self.aliases[url] = key
            score = self.ranking.score_of(url) if url in self.ranking else self.unscored
            self.ranking.discard(url)
            self.queue.discard(url)
            if key in self.done:
                return False
            self.done.add(key)
            self.queue.discard(key)
            if key not in self.ranking and key not in self.skipped:
                self.ranking.update(key, score)
                self.depth.setdefault(key, self.depth.get(url, 0))
        if self.revalidator is not None:
            self.revalidator.move(url, key if keep_validators else None)
        log.info("%s is recorded as %s (redirect or rel=canonical); not fetched again", url, key)
        return True

    def _forget_date_page(self, page: str) -> None:
        """``page`` links to itself at another date one step too many (a calendar): it is the trap's last
        page, snapshotted once and not revisited; the scope counts and reports it (not on a restart's replay)."""
        from focuscrawl.fetch.scope import Refusal

        with self._lock:
            if page in self.refused or page not in self.ranking:
                return
            self.refused.add(page)
            self.ranking.discard(page)
            self.queue.discard(page)
        self.scope.revoke(Refusal("trap_date_steps", page, "links to itself at another date past max_date_steps: "
                                                           "a calendar page, snapshotted once and not revisited"))

    def _refuse(self, rejection: Rejection) -> None:
        """Forget a page refused for good, so no later period spends a fetch on it; report why."""
        with self._lock:
            self.refused.add(rejection.url)
            self.ranking.discard(rejection.url)
            self.queue.discard(rejection.url)
        if self.on_rejection is not None:
            self.on_rejection(rejection)

    def _near_duplicate(self, url: str, text: str) -> bool:
        """Skip a page fetched for the first time that near-duplicates one fetched before (see the class)."""
        index = self.near_duplicates
        if index is None or url in index:
            return False
        sig = index.hasher.signature(text)
        match = index.check(sig=sig)
        if match is None:
            if sig is not None:
                index.add(url, sig=sig)
            return False
        with self._lock:
            self.skipped.add(url)
            self.ranking.discard(url)
            self.queue.discard(url)
        log.info("skipped %s: near-duplicate of %s (estimated Jaccard %.2f)", url, *match)
        if self.on_near_duplicate is not None:
            self.on_near_duplicate(url, match)
        return True

    def due(self) -> int:
        """Pages still to revisit in the current period."""
        with self._lock:
            return len(self.queue)

    def order(self, n: int = 5) -> list[tuple[str, float]]:
        """The next ``n`` revisits: the rest of this period's queue, or, when it is done, the next period's start."""
        with self._lock:
            return (self.queue if self.queue else self.ranking).top(n)

    def status(self) -> dict:
        head = self.order(5)
        with self._lock:
            best = self.ranking.top(1)
            return {
                "period": self.current_period,
                "next_pick": head[0][0] if head else None,
                "next_pick_score": head[0][1] if head else None,
                "order": [[url, score] for url, score in head],
                # the next period's first pick: within a period the best page goes first, so the
                # queue's head is the best page only until then
                "best_known": [best[0][0], best[0][1]] if best else None,
                "known": len(self.ranking),
                "due": len(self.queue),
                "done_this_period": len(self.done),
                "revisits": self.revisits,
                "failures": self.failures,
                "malformed": self.malformed,
                "priorities_applied": self.priorities_applied,
                "near_duplicates_skipped": len(self.skipped),
                "aliases": len(self.aliases),
                "relevant": self.relevant,
                "harvest": self.relevant / self.revisits if self.revisits and self.relevance is not None else None,
                "refused": len(self.refused),
                **({"rewrite_rules": self.dust.status()} if self.dust is not None else {}),
                **({"scope": self.scope.status()} if self.scope is not None else {}),
            }


class SnapshotWriter:
    """Buffer snapshot rows and add them to the Delta ``page_snapshots`` table (delta-rs) in one commit
    per :meth:`flush`; :meth:`seen` reads back the ``(url, period)`` pairs for a restart.

    ``(url, period)`` is the table's key: a flush inserts only the pairs the table lacks (a merge), so
    a replay never doubles a row. A world restarted with its clock rewound once made the revisitor
    revisit past periods: 1,051 pairs were written twice, and the quality gate failed
    ``outlinks_features`` on every run after. The first snapshot of a pair is the one kept."""

    def __init__(self, table_path: str, storage_options: dict[str, str] | None = None) -> None:
        self.table_path = table_path
        self.storage_options = storage_options
        self.rows: list[dict] = []
        self.written = 0
        self._first_buffered: float | None = None  # monotonic time of the oldest row not yet committed

    def __call__(self, row: dict) -> None:
        if not self.rows:
            self._first_buffered = time.monotonic()
        self.rows.append(row)

    def due(self, max_rows: int, max_seconds: float) -> bool:
        """Whether the buffer should be committed now: ``max_rows`` rows, or its oldest row waiting
        ``max_seconds``. The revisits loop starts at the commit (its asset event triggers
        ``outlinks_features``): by rows alone, the first commit of bench/results/freshness/freshness-load0.json
        came 94 s after every process was up (200 rows at the world's pace)."""
        return bool(self.rows) and (len(self.rows) >= max_rows
                                    or time.monotonic() - self._first_buffered >= max_seconds)

    def flush(self) -> int:
        import pyarrow as pa
        from deltalake import write_deltalake

        from focuscrawl.outlinks.tables import SNAPSHOTS

        if not self.rows:
            return 0
        first = {}
        for row in self.rows:  # one row per key within the batch as well: the first
            first.setdefault((row["url"], row["period"]), row)
        batch = pa.Table.from_pylist(list(first.values()), schema=SNAPSHOTS.arrow_schema())
        self.rows = []
        table = self._dataset()
        if table is None:
            write_deltalake(self.table_path, batch, mode="append", partition_by=list(SNAPSHOTS.partition_by),
                            storage_options=self.storage_options, description=SNAPSHOTS.comment)
            n = batch.num_rows
        else:
            # merge_schema: a table written before the spec grew (the WARC columns) takes the new columns.
            metrics = table.merge(batch, predicate="t.url = s.url AND t.period = s.period", source_alias="s",
                                  target_alias="t", merge_schema=True).when_not_matched_insert_all().execute()
            n = int(metrics["num_target_rows_inserted"])
        self.written += n
        return n

    def seen(self) -> list[tuple[str, int]]:
        return [(url, period) for url, period, *_ in self.history()]

    def _dataset(self):
        """The table's pyarrow dataset, or None when there is no table yet."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.table_path, storage_options=self.storage_options)
        except TableNotFoundError:
            return None

    def latest(self) -> dict[str, dict]:
        """``{url: row}`` of every landed page's latest snapshot: its content columns and validators, what a
        restarted revisitor repeats on a 304 and sends as its next conditional request. A table written
        before the validator columns existed gives nulls for them."""
        table = self._dataset()
        if table is None:
            return {}
        dataset = table.to_pyarrow_dataset()
        wanted = ["url", "period", "status", "warc_record_id", *CONTENT_COLUMNS, *VALIDATOR_COLUMNS]
        cols = dataset.to_table(columns=[c for c in wanted if c in dataset.schema.names]).to_pylist()
        latest: dict[str, dict] = {}
        for row in cols:
            if row["url"] not in latest or row["period"] >= latest[row["url"]]["period"]:
                latest[row["url"]] = row
        return latest

    def latest_texts(self) -> dict[str, str]:
        """``{url: text}`` of every landed page's latest snapshot: what a restarted revisitor's
        near-duplicate index is rebuilt from."""
        return {url: row.get("text") or "" for url, row in self.latest().items()}

    def history(self) -> list[tuple[str, int, list[str], str | None]]:
        """``(url, period, outlinks, fetched_url)`` of every landed snapshot, in fetch order (what
        :meth:`PageRevisitor.restore` reads).

        Fetch order = append order: the commit time of the row's file, then its place in the file.
        Not ``fetched_at``: a site clock ticks in whole seconds and a restarted process's clock may
        start behind its predecessor's. (A compaction rewrites files: its rows then come first, in
        the compaction's order; only the order of equal-priority pages can change by it.)
        """
        import pyarrow as pa

        table = self._dataset()
        if table is None:
            return []
        written = pa.table(table.get_add_actions(flatten=True)).select(["path", "modification_time"]).to_pydict()
        committed_at = dict(zip(written["path"], written["modification_time"]))
        dataset = table.to_pyarrow_dataset()
        cols = dataset.to_table(columns=["url", "period", "internal_outlinks", "external_outlinks", "__filename",
                                         *(["fetched_url"] if "fetched_url" in dataset.schema.names else [])]).to_pydict()
        fetched = cols.get("fetched_url") or [None] * len(cols["url"])
        rows = sorted(zip((committed_at.get(f, 0) for f in cols["__filename"]), range(len(cols["url"])),
                          cols["url"], cols["period"], cols["internal_outlinks"], cols["external_outlinks"], fetched),
                      key=lambda r: (r[0], r[1]))
        return [(url, period, list(internal or []) + list(external or []), alias)
                for _, _, url, period, internal, external, alias in rows]
