"""The source crawler: recrawl content sources on the pushed schedule, fetch new pages by expected profit.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), introduction: "a practical algorithm, which periodically
recrawls content sources and crawls newly created pages linked from them". The batch side
(``spark_jobs/source_schedule.py``) fits λ, P, μ per source and solves the budget split; the
schedule reaches the crawler on the compacted topic ``focuscrawl.source_schedule`` and the
crawler follows it without a restart, keeping its last schedule between pushes.

Each slot of the budget (one fetch per ``1/budget`` seconds) goes to :class:`PushedPlan`, the same
:class:`~focuscrawl.ephemeral.schedulers.PlannedPolicy` the simulated experiment runs: the most
overdue recrawl, else the discovered page of highest expected remaining profit ``P·e^(−μ·age)``
(age from the source's publication date when it gives one) if it is worth at least the
schedule's ν, else the next recrawl politeness allows. Before the first push every source is
recrawled every ``default_interval_s`` with the prior's P and μ.

No I/O here: ``fetch(url) -> (body, media_type, final_url)``, ``emit(table, key, row)`` and
``clock() -> seconds`` are given; ``streaming/source_crawler.py`` wires HTTP and Kafka in.
Rows follow the ``source_recrawls``, ``source_pages`` and ``page_clicks`` table specs (timestamps in
epoch µs). Every new page fetched is a ``source_pages`` row: its main text and language
(:mod:`focuscrawl.parse.text`) and, with a ``relevance`` scorer (:class:`focuscrawl.relevance.score.PageScorer`,
the project's champion page model), its relevance, scored here on the live path; pages at or above the
threshold are counted as the loop's harvest (``counts["relevant"]``).

Restart-safe: what the crawler knows of each source (links listed so far, last
read, last recrawl slot, the discovered pages waiting in its frontier batches) is a
:class:`SourceState`, each crawled page a :class:`CrawledPage`, and the click log's position and
running totals likewise; :meth:`SourceCrawler.changes` / :meth:`ClickLog.changes` hand out the
changed records (the stream process writes them to its compacted changelog topic in the same Kafka
transaction as the rows they go with) and ``restore`` rebuilds the crawler from them, so after a
SIGKILL the next recrawl of a source continues its chain (``elapsed_s`` since the last landed
recrawl, new links against the links known then) and the waiting pages are still waiting.

Conditional recrawls: with a :class:`~focuscrawl.fetch.conditional.Revalidator` each recrawl of a
source sends its last ``ETag``/``Last-Modified``; a ``304`` (or a body identical to the last) is a
recrawl that revealed no new link, read without parsing, and the source's validators travel in its
changelog record, so a restarted crawler asks conditionally at once. Discovery's fetch of a source is its
first read (:meth:`SourceCrawler.first_reads`: the links it listed and its validators), so no source is
read twice in full at the start; a source the changelog restored keeps its restored state instead. Pages are keyed by their
canonical URL (``key_of``, the one the sources' listings use): a new page whose fetch ends at another
URL, or that declares another ``rel=canonical``, makes that key known too, so a source listing it
later does not spend a fetch on it again. With ``dust`` (:class:`~focuscrawl.fetch.dust.DustRules`, after
Bar-Yossef, Keidar and Schonfeld, "Do Not Crawl in the DUST", WWW 2007, sections 3-4) each such alias
also teaches the page's site a rewrite rule, and a link a source lists later is taken under the URL
the site's rules give, so a spelling never fetched before is not fetched when its page was
(``counts["dust_skipped"]``); a page fetched with no alias refutes every rule that would rewrite it.

Near-duplicates (the project switch ``[loops.sources] skip_near_duplicates``): with a
:class:`~focuscrawl.core.dedup.NearDuplicateIndex`, a new page whose text near-duplicates a page crawled
before is skipped once fetched: it is not one of the crawled pages (no click rows, so no profit is
credited to its source twice for one story), counted in ``counts["near_duplicates_skipped"]`` and
``on_near_duplicate(url, match)``. A crawled page's MinHash signature travels in its changelog
record, so a restarted crawler's index holds the pages crawled before the restart.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np
import pandas as pd

from focuscrawl.core.dedup import Match, NearDuplicateIndex, decode_signature, encode_signature
from focuscrawl.ephemeral.estimate import ProfitPrior
from focuscrawl.ephemeral.params import DEFAULT
from focuscrawl.ephemeral.schedulers import PlannedPolicy
from focuscrawl.ephemeral.tables import ClickRecord
from focuscrawl.ephemeral.sources import ACCEPT, ContentSource, SourceEntry, read_source
from focuscrawl.fetch.conditional import Revalidator, Validators
from focuscrawl.fetch.errors import refusal_of
from focuscrawl.fetch.warc import warc_columns
from focuscrawl.lake.decision import Decision
from focuscrawl.parse.canon import canonical_url
from focuscrawl.parse.rejection import Rejection
from focuscrawl.core.records import JsonRecord

if TYPE_CHECKING:  # pragma: no cover
    from focuscrawl.fetch.dust import DustRules
    from focuscrawl.fetch.scope import Scope
    from focuscrawl.fetch.soft404 import Soft404Probe

log = logging.getLogger(__name__)

Fetch = Callable[[str], tuple]  # url -> (body, media type, final URL[, WARC record of the response[, headers]])
Emit = Callable[[str, str, dict], None]


def micros(seconds: float) -> int:
    return int(round(seconds * 1e6))


@dataclass(frozen=True)
class SourceState(JsonRecord):
    """One content source as the crawler knows it (changelog key ``source:<url>``).

    ``batches``: the frontier's batches of discovered pages not fetched yet, oldest first, each
    ``(found_at, window_s, [(page url, published or None), ...])`` in pop order reversed.
    """

    url: str
    last_read: float | None
    last_recrawl: float
    last_gap: float | None = None
    known: tuple[str, ...] = ()
    batches: tuple[tuple[float, float, tuple[tuple[str, float | None], ...]], ...] = field(default=())
    validators: Validators | None = None  # of the source's last full fetch (sent on its next recrawl)
    kind: str = ""  # the source's kind (ContentSource.kind), so a restart can watch it without rediscovering it


def remembered_sources(found: list[ContentSource], records: Iterable[tuple[str, bytes]]) -> list[ContentSource]:
    """The sources discovered now, then those the changelog remembers and this discovery missed (a
    candidate whose fetch failed, a listing without a dated link at that moment): a restart never
    watches fewer sources than before it (a fault campaign's restarts watched 20, then 40, then 17).
    Records written before a source's kind was kept cannot be rebuilt and are left to discovery."""
    out, urls = list(found), {s.url for s in found}
    for key, value in records:
        if key.startswith("source:"):
            st = SourceState.from_json(value)
            if st.kind and st.url not in urls:
                out.append(ContentSource(st.url, st.kind))
                urls.add(st.url)
    return out


@dataclass(frozen=True)
class CrawledPage(JsonRecord):
    """A fetched new page (changelog key ``page:<url>``): its source and publication time, for click rows,
    and its MinHash signature (base64, :func:`focuscrawl.core.dedup.encode_signature`) when near-duplicates are skipped."""

    url: str
    source_url: str
    published: float | None
    minhash: str | None = None
    aliases: tuple[str, ...] = ()  # other keys of the page: where its fetch ended, its rel=canonical

    def to_json(self) -> bytes:  # no "minhash"/"aliases" key when there is none, as the rows written before them
        d = {"url": self.url, "source_url": self.source_url, "published": self.published}
        d.update({k: v for k, v in (("minhash", self.minhash), ("aliases", list(self.aliases))) if v})
        return json.dumps(d).encode()


@dataclass(frozen=True)
class ClickPosition(JsonRecord):
    """The click log's position (changelog key ``clicks``): the site's ``until`` of the last poll."""

    since: float


@dataclass(frozen=True)
class ClickTotal(JsonRecord):
    """A page's running click total (changelog key ``clicks:<url>``)."""

    total: float


# What chose a fetch (lake.decision): a recrawl on its source's pushed schedule (the Lagrangian plan), else on the
# default interval before any push; a new page by its expected remaining profit under the source's P and μ.
SCHEDULED, DEFAULT_INTERVAL = "LAGRANGE", Decision("sources", "default_interval")
BY_PROFIT = "expected_profit"


class PushedPlan(PlannedPolicy):
    """The crawler's policy: recrawl rates and ν as pushed (``recrawl_rate``, ``skip_below`` columns)."""

    def plan(self, estimates: pd.DataFrame) -> tuple[np.ndarray, float]:
        return estimates["recrawl_rate"].to_numpy(float), float(estimates["skip_below"].max())


class SourceCrawler:
    """Crawl ``sources`` with ``budget`` fetches per second; thread-safe :meth:`apply` for pushed rows."""

    def __init__(self, sources: list[ContentSource], fetch: Fetch, emit: Emit, clock: Callable[[], float],
                 budget: float, default_interval_s: float = DEFAULT.default_interval_s,
                 min_interval_s: float = DEFAULT.min_interval_s,
                 prior: ProfitPrior = ProfitPrior(), on_rejection: Callable[[Rejection], None] | None = None,
                 near_duplicates: NearDuplicateIndex | None = None,
                 on_near_duplicate: Callable[[str, Match], None] | None = None,
                 revalidator: Revalidator | None = None, key_of: Callable[[str], str] = canonical_url,
                 relevance=None, scope: "Scope | None" = None, soft404: "Soft404Probe | None" = None,
                 dust: "DustRules | None" = None) -> None:
        if budget <= 0:
            raise ValueError(f"budget must be > 0 fetches per second, got {budget}")
        self.sources = list(sources)
        self.index = {s.url: i for i, s in enumerate(self.sources)}
        self.fetch, self.emit, self.clock, self.budget = fetch, emit, clock, budget
        self.on_rejection = on_rejection
        self.scope = scope  # asked before a new page joins the frontier (focuscrawl.fetch.scope); None: every page
        self.near_duplicates, self.on_near_duplicate = near_duplicates, on_near_duplicate
        self.soft404 = soft404  # a new page that is its directory's "not found" answer is refused (fetch/soft404.py)
        self.revalidator, self.key_of = revalidator, key_of
        self.dust = dust  # rewrite rules learned from this crawl's aliases (focuscrawl.fetch.dust), or None
        self.aliases_: dict[str, tuple[str, ...]] = {}  # crawled page -> its other keys
        self.page_of_: dict[str, str] = {}  # such another key -> the crawled page
        self.relevance = relevance  # a focuscrawl.relevance.score.PageScorer, or None
        n = len(self.sources)
        self.policy = PushedPlan(budget=budget, max_rate=np.full(n, 1.0 / min_interval_s))
        self.policy.last_recrawl_[:] = clock() - default_interval_s  # never recrawled: due at once
        # Until a schedule arrives: every source on the default interval, the prior's P and μ, no skipping.
        self.plan_ = pd.DataFrame({"source_url": [s.url for s in self.sources],
                                   "recrawl_rate": np.full(n, 1.0 / default_interval_s), "skip_below": 0.0,
                                   "P": prior.P_mean, "mu": prior.mu_median})
        self.policy.fit(self.plan_)
        self._pending: dict[str, dict | None] = {}
        self.pushed_: dict[str, Decision] = {}  # source url -> the schedule push it follows (model, version, rate, rank)
        self._lock = threading.Lock()
        self.known_: list[set[str]] = [set() for _ in range(n)]  # links each source listed so far
        self.last_read_: list[float | None] = [None] * n
        self.last_gap_: dict[str, float] = {}  # seconds between the two latest recrawls of a source
        self.pages_: list[tuple[str, int, float | None]] = []  # page id -> (url, source, published)
        self.seen_pages_: set[str] = set()
        self.crawled_: dict[str, tuple[str, float | None]] = {}  # page url -> (source url, published)
        self.counts = {"recrawls": 0, "pages": 0, "idle": 0, "errors": 0, "schedule_rows": 0, "schedules_applied": 0,
                       "restored_sources": 0, "restored_pages": 0, "near_duplicates_skipped": 0, "unchanged_recrawls": 0,
                       "relevant": 0, "soft404_refused": 0, "dust_skipped": 0, "malformed": 0}
        self._touched: dict[int, None] = dict.fromkeys(range(n))  # sources changed since changes(): all, at first
        self._fetched: dict[str, None] = {}   # pages crawled since changes()

    # -- the pushed schedule ------------------------------------------------------------------
    def apply(self, source_url: str, row: dict | None) -> None:
        """A record of the schedule topic (None: the source was deleted from it); applied at the next slot."""
        with self._lock:
            self._pending[source_url] = row
            self.counts["schedule_rows"] += 1

    def _apply_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        rows = {url: row for url, row in pending.items() if url in self.index}
        if not rows:
            return
        plan = self.plan_.set_index("source_url")
        for url, row in rows.items():
            if row is None:
                plan.loc[url, "recrawl_rate"] = 0.0
                self.pushed_.pop(url, None)
                continue
            self.pushed_[url] = Decision.of_push("sources", SCHEDULED, row)
            plan.loc[url, "recrawl_rate"] = float(row["score"])
            for column in ("P", "mu"):
                if row.get(column) is not None:
                    plan.loc[url, column] = float(row[column])
        # ν is one number for the whole plan: the latest push's.
        latest = [r["skip_below"] for r in rows.values() if r and r.get("skip_below") is not None]
        if latest:
            plan["skip_below"] = float(latest[-1])
        self.plan_ = plan.reset_index()
        self.policy.fit(self.plan_)
        self.counts["schedules_applied"] += 1
        log.info("schedule applied for %d sources; ν = %.4g", len(rows), self.policy.skip_below_)

    def interval(self, source_url: str) -> float | None:
        """Seconds between recrawls the crawler follows now for ``source_url`` (None: not recrawled)."""
        rate = float(self.policy.rate_[self.index[source_url]])
        return 1.0 / rate if rate > 0 else None

    # -- one slot -----------------------------------------------------------------------------
    def step(self) -> str:
        """Spend one slot of the budget: ``"recrawl"``, ``"page"``, ``"idle"`` or ``"error"``."""
        self._apply_pending()
        now = self.clock()
        action = self.policy.next_action(now)
        if action is None:
            self.counts["idle"] += 1
            return "idle"
        self._touched[action.source] = None  # its recrawl slot or its frontier moved, whatever the fetch does
        try:
            if action.kind == "recrawl":
                self._recrawl(action.source, now)
            else:
                self._fetch_page(action.page, now)
        except Exception as exc:  # noqa: BLE001 - one failed fetch costs its slot, not the crawl
            self.counts["errors"] += 1
            log.warning("%s of %s failed: %s", action.kind, self._url_of(action), exc)
            refused = refusal_of(self._url_of(action), exc)
            if refused is not None and self.on_rejection is not None:
                self.on_rejection(refused)
            return "error"
        return action.kind

    def _url_of(self, action) -> str:
        return self.sources[action.source].url if action.kind == "recrawl" else self.pages_[action.page][0]

    def _recrawl(self, i: int, now: float) -> None:
        source = self.sources[i]
        if self.revalidator is not None:
            revisit = self.revalidator.fetch(source.url, accept=ACCEPT)
            result = revisit.result
            body, media, final, warc = result.body, result.content_type, result.url, [result.warc]
            unchanged = revisit.unchanged
        else:
            body, media, final, *warc = self.fetch(source.url)
            unchanged = False
        if unchanged:  # nothing new since the last read: a 304 has no body to parse, a same body nothing new
            self.counts["unchanged_recrawls"] += 1
            entries = []
        else:
            listing = read_source(body, final, media, self.key_of)
            for rejection in listing.rejections:
                if self.on_rejection is not None:
                    self.on_rejection(rejection)
            entries = listing.entries
        self.counts["recrawls"] += 1
        self._read(i, entries, now, warc[0] if warc else None)

    def first_reads(self) -> int:
        """Take discovery's read of each source (:attr:`ContentSource.read`) as its first read, so the crawler
        does not fetch it again in full: its listed links join the frontier as a first recrawl's would, its
        validators make the next recrawl conditional, and that recrawl is due one interval later. A source
        the changelog restored (read before) keeps its restored state. Call after :meth:`restore`; returns
        how many reads were taken."""
        now, taken = self.clock(), 0
        for i, source in enumerate(self.sources):
            if source.read is None:
                continue
            self.sources[i] = replace(source, read=None)  # the listing is not held twice
            if self.last_read_[i] is not None:
                continue
            if self.revalidator is not None:
                self.revalidator.restore(source.url, source.read.validators)
            self.policy.last_recrawl_[i] = now
            self._touched[i] = None
            self._read(i, source.read.entries, now, None)
            taken += 1
        return taken

    def _read(self, i: int, entries: Iterable[SourceEntry], now: float, warc) -> None:
        """What a read of source ``i`` at ``now`` listed: its new links join the frontier; from the second
        read on, a ``source_recrawls`` row (``warc``: the read's WARC record, or None)."""
        source = self.sources[i]
        new = [e for e in entries if e.url not in self.known_[i]]
        self.known_[i].update(e.url for e in new)
        previous = self.last_read_[i]
        self.last_read_[i] = now
        fresh = []
        for entry in new:
            key = entry.url if self.dust is None else self.dust(entry.url)
            if entry.url in self.seen_pages_ or key in self.seen_pages_:
                self.counts["dust_skipped"] += entry.url not in self.seen_pages_
                continue
            fresh.append(entry if key == entry.url else replace(entry, url=key))
            self.seen_pages_.update((entry.url, key))
        if self.scope is not None:  # a source's links are one link from it; a refusal is reported by the scope
            fresh = [e for e in fresh if self.scope.admit(e.url, 1, source.url) is None]
        ids = []
        for entry in sorted(fresh, key=lambda e: e.published or now):
            self.pages_.append((entry.url, i, entry.published))
            ids.append(len(self.pages_) - 1)
        dated = [p for p in ids if self.pages_[p][2] is not None]
        for p in dated:  # a known publication time: a batch of one, exact expected remaining profit
            self.policy.frontier.add(i, [p], self.pages_[p][2], 0.0)
        if previous is None:  # the first read is the source's archive: no rate to learn from it yet
            self.policy.frontier.add(i, [p for p in ids if p not in dated], now, 0.0)
            return
        self.policy.discovered(i, [p for p in ids if p not in dated], now, now - previous)
        self.last_gap_[source.url] = now - previous
        self.emit("source_recrawls", source.host, {
            "source_url": source.url, "host": source.host, "recrawled_at": micros(now),
            "elapsed_s": now - previous, "new_links": len(new), **(warc_columns(warc) if warc else {}),
            **self.pushed_.get(source.url, DEFAULT_INTERVAL).columns()})

    def _fetch_page(self, page: int, now: float) -> None:
        url, i, published = self.pages_[page]
        # chosen by its expected remaining profit, from the P and μ of the source's schedule push (the prior's before)
        pushed = self.pushed_.get(self.sources[i].url)
        chosen = Decision("sources", BY_PROFIT, pushed and pushed.model, pushed and pushed.model_version,
                          self.policy.frontier.popped_score_)
        fetched = self.fetch(url)
        self.counts["pages"] += 1  # a fetch of the budget, skipped or not
        from focuscrawl.parse.html import parse_links

        parsed = parse_links(fetched[0], fetched[2])  # once: the not-a-page check and the canonical link
        aliases = self._aliases(url, fetched, parsed)
        self.seen_pages_.update(aliases)  # listed later under those keys, the page is not fetched again
        if self._malformed(parsed) or self._soft404(url, fetched) or self._near_duplicate(url, fetched[0]):
            return
        self._teach(url, aliases)
        self.crawled_[url] = (self.sources[i].url, published)
        self._remember_aliases(url, aliases)
        self._fetched[url] = None
        self.emit("source_pages", self.sources[i].host, {**self._page_row(url, i, published, now, fetched),
                                                         **chosen.columns()})

    def _page_row(self, url: str, i: int, published: float | None, now: float, fetched: tuple) -> dict:
        """The ``source_pages`` row of a fetched new page: main text, language, relevance (when a scorer is set)."""
        from focuscrawl.outlinks.revisit import page_content
        from focuscrawl.parse.text import page_text

        body, _, final, *warc = fetched
        text = page_text(body, final, visible_text=page_content(body, final)[0])
        score, model = self.relevance.score(text.main_text, text.language) if self.relevance is not None else (None, None)
        self.counts["relevant"] += self.relevance is not None and self.relevance.relevant(score)
        source = self.sources[i]
        return {"page_url": url, "source_url": source.url, "host": source.host, "fetched_at": micros(now),
                "published_at": None if published is None else micros(published), "main_text": text.main_text,
                "language": text.language, "language_score": text.language_score, "relevance": score,
                "relevance_model": model, **(warc_columns(warc[0]) if warc and warc[0] else {})}

    def _malformed(self, parsed) -> bool:
        """A body that is not a page at all (``focuscrawl.parse.html.unparsable``, found by the page's one
        parse) is dead-lettered with its reason and bytes, not landed as a page with no text."""
        if parsed.unparsable is None:
            return False
        self.counts["malformed"] += 1  # the Rejection logs it
        if self.on_rejection is not None:
            self.on_rejection(parsed.unparsable)
        return True

    def _teach(self, url: str, aliases: tuple[str, ...]) -> None:
        """Every alias is a confirmed pair of one page (the rule that shortens is kept); no alias refutes."""
        if self.dust is None:
            return
        for alias in aliases:
            self.dust.learn(url, alias)
            self.dust.learn(alias, url)
        if not aliases:
            self.dust.refute(url)

    def _remember_aliases(self, url: str, aliases: tuple[str, ...]) -> None:
        self.aliases_[url] = aliases
        self.page_of_.update(dict.fromkeys(aliases, url))

    def _aliases(self, url: str, fetched: tuple, parsed) -> tuple[str, ...]:
        """The page's other keys: where the fetch of ``url`` ended, and an HTML page's ``rel=canonical``
        (``parsed``: the body's ``parse_links``)."""
        media, final = fetched[1:3]
        found = [final]
        if media in ("text/html", "application/xhtml+xml"):
            found.append(parsed.canonical)
        keys = []
        for other in found:
            try:
                key = self.key_of(other) if other else None
            except (ValueError, UnicodeError):
                continue
            if key is not None and key != url and key not in keys:
                keys.append(key)
        return tuple(keys)

    def _soft404(self, url: str, fetched: tuple) -> bool:
        """With a probe: refuse an HTML page that is its directory's "not found" answer (no row, a dead letter)."""
        body, media, final = fetched[:3]
        if self.soft404 is None or media not in ("text/html", "application/xhtml+xml"):
            return False
        from focuscrawl.outlinks.revisit import page_content

        reason = self.soft404.check(url, page_content(body, final)[0])
        if reason is None:
            return False
        self.counts["soft404_refused"] += 1
        if self.on_rejection is not None:
            self.on_rejection(Rejection(reason, url, url, "soft404"))
        return True

    def _near_duplicate(self, url: str, body: bytes) -> bool:
        """With an index: skip the page when its text near-duplicates a page crawled before, else remember it."""
        index = self.near_duplicates
        if index is None:
            return False
        from focuscrawl.outlinks.revisit import page_content

        sig = index.hasher.signature(page_content(body, url)[0])
        match = index.check(sig=sig, exclude=url)
        if match is None:
            if sig is not None:
                index.add(url, sig=sig)
            return False
        self.counts["near_duplicates_skipped"] += 1
        log.info("skipped %s: near-duplicate of %s (estimated Jaccard %.2f)", url, *match)
        if self.on_near_duplicate is not None:
            self.on_near_duplicate(url, match)
        return True

    # -- restart-safe state ---------------------------------------------------------------------
    def source_state(self, i: int) -> SourceState:
        url = self.sources[i].url
        batches = tuple((t, g, tuple((self.pages_[p][0], self.pages_[p][2]) for p in ids))
                        for t, g, ids in self.policy.frontier.batches[i])
        validators = self.revalidator.known.get(url) if self.revalidator is not None else None
        return SourceState(url, self.last_read_[i], float(self.policy.last_recrawl_[i]), self.last_gap_.get(url),
                           tuple(sorted(self.known_[i])), batches, validators, self.sources[i].kind)

    def changes(self) -> list[tuple[str, bytes]]:
        """Changelog records ``(key, value)`` of the sources and pages changed since the last call."""
        out = [(f"source:{self.sources[i].url}", self.source_state(i).to_json()) for i in self._touched]
        for url in self._fetched:
            source_url, published = self.crawled_[url]
            sig = self.near_duplicates.signatures.get(url) if self.near_duplicates is not None else None
            out.append((f"page:{url}", CrawledPage(url, source_url, published,
                                                   None if sig is None else encode_signature(sig),
                                                   self.aliases_.get(url, ())).to_json()))
        self._touched.clear()
        self._fetched.clear()
        return out

    def restore(self, records: Iterable[tuple[str, bytes]]) -> int:
        """Rebuild from changelog records (latest per key); records of sources the site no longer
        lists are ignored. Returns how many records were applied."""
        applied = 0
        for key, value in records:
            if key.startswith("source:"):
                st = SourceState.from_json(value)
                i = self.index.get(st.url)
                if i is None:
                    continue
                self.known_[i] = set(st.known)
                self.seen_pages_.update(st.known)
                self.last_read_[i] = st.last_read
                self.policy.last_recrawl_[i] = st.last_recrawl
                if st.last_gap is not None:
                    self.last_gap_[st.url] = st.last_gap
                if self.revalidator is not None:
                    self.revalidator.restore(st.url, st.validators)
                self.policy.frontier.batches[i] = []
                for t, g, pages in st.batches:
                    ids = []
                    for page_url, published in pages:
                        self.pages_.append((page_url, i, published))
                        ids.append(len(self.pages_) - 1)
                    self.policy.frontier.batches[i].append((t, g, ids))
                self.counts["restored_sources"] += 1
            elif key.startswith("page:"):
                page = CrawledPage.from_json(value)
                self.crawled_[page.url] = (page.source_url, page.published)
                self._remember_aliases(page.url, page.aliases)
                self.seen_pages_.update((page.url, *page.aliases))
                self._teach(page.url, page.aliases)  # the rules come back with the pages that taught them
                if self.near_duplicates is not None and page.minhash:
                    self.near_duplicates.add(page.url, sig=decode_signature(page.minhash))
                self.counts["restored_pages"] += 1
            else:
                continue
            applied += 1
        return applied

    # -- click feedback -----------------------------------------------------------------------
    def click_rows(self, feedback: dict) -> list[dict]:
        """``page_clicks`` rows (:class:`~focuscrawl.ephemeral.tables.ClickRecord`) from :meth:`ClickLog.poll`:
        ``{"until": t, "clicks": [{"url", "crawled_at", "clicks"}, ...]}``, clicks counted since the crawl; pages
        not ours are ignored."""
        rows = []
        for item in feedback.get("clicks", []):
            url = self.key_of(item["url"])
            url = self.page_of_.get(url, url)  # clicks on where the page's fetch ended are the page's
            if url not in self.crawled_:
                continue
            source_url, published = self.crawled_[url]
            crawled = float(item["crawled_at"])
            rows.append(asdict(ClickRecord(
                source_url=source_url, page_url=url, created_at=micros(published if published is not None else crawled),
                observed_at=micros(float(feedback["until"])), counted_from=micros(crawled),
                clicks=int(round(float(item["clicks"]))))))
        return rows

    def status(self) -> dict:
        return {
            **self.counts, "sources": len(self.sources), "frontier": sum(len(b[2]) for q in self.policy.frontier.batches for b in q),
            "skip_below": self.policy.skip_below_,
            "intervals": {s.url: self.interval(s.url) for s in self.sources},
            "last_gaps": dict(self.last_gap_), "kinds": {s.url: s.kind for s in self.sources},
            "clock": self.clock(), "updated_at_ms": int(time.time() * 1000),
            **({"scope": self.scope.status()} if self.scope is not None else {}),
            **({"rewrite_rules": self.dust.status()} if self.dust is not None else {}),
        }


# Where a search engine's click log on its own result pages is read, under the site's origin by
# default (the world serves it on its crawl surface: focuscrawl.world.clicks).
CLICKS_PATH = "/search/clicks.json"


@dataclass(frozen=True)
class PageClicks(JsonRecord):
    """One page of a click log's answer: the clicks ``path`` got since the asked time (or since its crawl)."""

    path: str
    crawled_at: float
    clicks: float


@dataclass(frozen=True)
class ClickAnswer(JsonRecord):
    """A click log's answer (``focuscrawl.world.clicks``): ``{"until": t, "clicks": [PageClicks, ...]}``;
    no ``until`` keeps the asked time."""

    until: float | None = None
    clicks: tuple[PageClicks, ...] = ()


class ClickLog:
    """Clicks crawled pages received, read from a search engine's click log (on the world, its crawl
    surface's :data:`CLICKS_PATH`: clicks on the pages this crawler fetched, from its first fetch):
    each poll asks for what arrived since the previous one and keeps the running total per page, so
    a row always counts from the crawl. ``get_json(since)`` answers a :class:`ClickAnswer` (its JSON body,
    or the body decoded); paths are made URLs on ``base_url`` (the crawled site)."""

    def __init__(self, get_json: Callable[[float], bytes | dict], base_url: str) -> None:
        self.get_json, self.base_url = get_json, base_url.rstrip("/")
        self.since_ = 0.0
        self.totals_: dict[str, float] = {}
        self._changed: dict[str, None] = {}

    def poll(self) -> dict:
        answer = ClickAnswer.from_json(self.get_json(self.since_))
        items = []
        for item in answer.clicks:
            url = self.base_url + item.path
            self.totals_[url] = self.totals_.get(url, 0.0) + item.clicks
            items.append({"url": url, "crawled_at": item.crawled_at, "clicks": self.totals_[url]})
        self.since_ = self.since_ if answer.until is None else answer.until
        self._changed.update(dict.fromkeys(item["url"] for item in items))
        return {"until": self.since_, "clicks": items}

    def changes(self) -> list[tuple[str, bytes]]:
        """Changelog records: the position (``clicks``) and each changed page total (``clicks:<url>``)."""
        out = [("clicks", ClickPosition(self.since_).to_json())]
        out += [(f"clicks:{url}", ClickTotal(self.totals_[url]).to_json()) for url in self._changed]
        self._changed.clear()
        return out

    def restore(self, records: Iterable[tuple[str, bytes]]) -> None:
        for key, value in records:
            if key == "clicks":
                self.since_ = ClickPosition.from_json(value).since
            elif key.startswith("clicks:"):
                self.totals_[key.removeprefix("clicks:")] = ClickTotal.from_json(value).total
