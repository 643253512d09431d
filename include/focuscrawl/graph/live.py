"""The live graph loop's stream half: sampling rounds on a site, as rows of ``graph_sample``.

Seed 003, *Fast crawling methods of exploring content distributed over large graphs* (abstract, appendix): a crawl is a sampler (UNI, RW, MHRW, FS,
by registered name in :data:`~focuscrawl.graph.samplers.SAMPLERS`) spending a vertex-query budget
on the site, and the estimators (MLE, SCE, WCE) work per crawl. The live sampler makes a fresh
crawl every round (round ``r`` is crawl ``{name}-r{r:05d}``), so ``graph_estimation`` always has a
recent crawl to estimate and successive crawls show how the estimates move.

Restart safety: each round goes to Kafka in ONE transaction holding every row of the crawl plus
the round's record on the compacted state topic (:data:`GRAPH_SAMPLER_STATE_TOPIC`). A sampler
killed mid-round leaves an aborted transaction that ``read_committed`` consumers (the Delta sink)
never see; on start it reads its last committed round from the state topic and samples the next
one. So a crawl in ``graph_sample`` is always whole, and never there twice.

Relevance: with a page scorer (the project's page focus, :class:`PageRelevance`), every distinct vertex
of a round whose document names its page has that page fetched once through the fetch layer, its main
text scored by the champion page relevance model, and its rows carry ``relevance``, ``relevance_model``
and ``relevant``: the graph loop's harvest, and the label of the ``relevant`` estimation target (the
share of the site's pages about the focus, :func:`focuscrawl.graph.estimators.page_sample`). Page
fetches are not vertex queries: they do not spend the round's budget.

The process (``streaming/graph_sampler.py``) only wires Kafka and the fetch layer to this module.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol

import numpy as np

from focuscrawl.fetch.warc import warc_columns
from focuscrawl.graph.access import GraphAccess
from focuscrawl.graph.samplers import SAMPLERS, Sample
from focuscrawl.core.records import JsonRecord

GRAPH_SAMPLE_TOPIC = "focuscrawl.graph.sample"
GRAPH_SAMPLER_STATE_TOPIC = "focuscrawl.graph.sampler.state"


def crawl_id(name: str, round_: int) -> str:
    return f"{name}-r{round_:05d}"


def _plain(value: Any) -> Any:
    """A JSON-ready Python value (numpy scalars and pandas' missing values made plain)."""
    if value is None:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    try:
        import pandas as pd

        if value is pd.NA:
            return None
    except ImportError:  # pragma: no cover - pandas is a pinned dependency
        pass
    return value


def sample_rows(sample: Sample, crawl: str, sampler: str) -> list[dict]:
    """The ``graph_sample`` rows of one crawl (:func:`focuscrawl.graph.tables.sample_to_frame`), JSON-ready."""
    from focuscrawl.graph.tables import sample_to_frame

    frame = sample_to_frame(sample, crawl, sampler)
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def graph_sample_row(record) -> dict:
    """Sink conversion (``focuscrawl.stream.sinks``): one Kafka record of :data:`GRAPH_SAMPLE_TOPIC` -> one row."""
    from focuscrawl.lake.delta_sink import json_row
    from focuscrawl.graph.tables import GRAPH_SAMPLE

    row = json_row(record)
    missing = [c.name for c in GRAPH_SAMPLE.columns if not c.nullable and row.get(c.name) is None]
    if missing:
        raise ValueError(f"graph sample record without {missing}: not written by graph/live.py")
    return {name: row.get(name) for name in GRAPH_SAMPLE.column_names}


class PageScore(Protocol):
    """``score(url) -> (relevance or None, "MODEL/vN" or None, relevant or None)`` of one vertex's page."""

    def __call__(self, url: str) -> tuple[float | None, str | None, bool | None]: ...


class PageRelevance:
    """A vertex page's relevance: fetched with ``fetcher`` (a :class:`focuscrawl.fetch.Fetcher`), main text
    and language by :func:`focuscrawl.parse.text.page_text`, scored by ``scorer`` (a
    :class:`focuscrawl.relevance.score.PageScorer`, whose ``on_scored`` counts the harvest). A page that
    cannot be fetched is not scored (None), nor is any page before a model was trained."""

    def __init__(self, fetcher, scorer) -> None:
        self.fetcher, self.scorer = fetcher, scorer

    def __call__(self, url: str) -> tuple[float | None, str | None, bool | None]:
        from focuscrawl.fetch import FetchError
        from focuscrawl.parse.text import page_text

        try:
            result = self.fetcher.fetch(url, accept=["text/html", "text/plain"])
        except FetchError:
            return None, None, None
        text = page_text(result.body, url)
        score, model = self.scorer.score(text.main_text, text.language)
        if score is None:
            return None, None, None
        return score, model, self.scorer.relevant(score)


def score_rows(rows: list[dict], pages: dict[str, str], score: PageScore) -> int:
    """Fill ``relevance``, ``relevance_model`` and ``relevant`` of ``rows`` (one crawl) from ``score`` of each
    distinct vertex's page (``pages``: vertex id -> URL; a vertex without one stays unscored); returns the
    pages scored."""
    found: dict[str, tuple[float | None, str | None, bool | None]] = {}
    for row in rows:
        vertex = row["vertex_id"]
        if vertex not in found:
            found[vertex] = score(pages[vertex]) if vertex in pages else (None, None, None)
        row["relevance"], row["relevance_model"], row["relevant"] = found[vertex]
    return sum(s is not None for s, _, _ in found.values())


@dataclass(frozen=True)
class RoundRecord(JsonRecord):
    """What the state topic keeps of a committed round (the sampler's changelog)."""

    round: int
    crawl_id: str
    sampler: str
    rows: int
    draws: int
    queries: int
    finished_at: float  # wall clock (Unix seconds): the next round is due ``every`` seconds later
    pages_scored: int = 0  # distinct vertices whose page was scored for relevance
    relevant: int = 0  # of those, at or above the page focus's threshold


class SamplingRounds:
    """Round ``r``: a fresh crawl of ``budget`` vertex queries with the sampler named ``sampler``.

    ``make_access(budget)`` gives a budgeted :class:`~focuscrawl.graph.access.GraphAccess` (over HTTP
    through the fetch layer in the process); the walk's random choices come from a generator
    seeded by ``(seed, r)``, so a round re-run after a crash walks the same way on the same answers.
    """

    def __init__(self, name: str, sampler: str, budget: int, every: float, seed: int = 0,
                 sampler_params: dict | None = None, rounds: int | None = None) -> None:
        if budget < 1:
            raise ValueError(f"the query budget must be at least 1 vertex query per round (got {budget})")
        if every < 0:
            raise ValueError(f"--every-s must be >= 0 seconds between rounds (got {every})")
        SAMPLERS.get(sampler)  # an unknown name fails here, listing the known ones
        self.sampler_name = sampler.upper()
        self.name, self.budget, self.every, self.seed = name, budget, every, seed
        self.sampler_params = dict(sampler_params or {})
        self.rounds = rounds
        self.last: RoundRecord | None = None

    def restore(self, last: RoundRecord | None) -> None:
        """Resume after the last committed round (from the state topic)."""
        self.last = last

    @property
    def next_round(self) -> int:
        return 0 if self.last is None else self.last.round + 1

    def finished(self) -> bool:
        return self.rounds is not None and self.next_round >= self.rounds

    def due_in(self, now: float | None = None) -> float:
        """Wall seconds until the next round is due (0: now)."""
        if self.last is None:
            return 0.0
        return max(0.0, self.last.finished_at + self.every - (time.time() if now is None else now))

    def sample(self, make_access: Callable[[int], GraphAccess],
               score: PageScore | None = None) -> tuple[RoundRecord, list[dict]]:
        """Run the next round; returns its record and rows (not yet committed: see :meth:`committed`).
        With ``score`` every distinct vertex's page is scored (:func:`score_rows`)."""
        r = self.next_round
        started = time.time()
        access = make_access(self.budget)
        sampler = SAMPLERS.create(self.sampler_name, **self.sampler_params)
        sample = sampler.sample(access, np.random.default_rng([self.seed, r]))
        crawl = crawl_id(self.name, r)
        rows = sample_rows(sample, crawl, self.sampler_name)
        for row in rows:
            row["sampled_at"] = int(started * 1_000_000)  # microseconds: the sink's timestamp unit
        refs = getattr(access, "warc", None)  # an archived crawl: each row names its vertex query's response
        if refs:
            for row in rows:
                row.update(warc_columns(refs.get(row["vertex_id"])))
        scored = relevant = 0
        if score is not None:
            scored = score_rows(rows, getattr(access, "pages", {}), score)
            relevant = len({row["vertex_id"] for row in rows if row["relevant"]})
        return RoundRecord(r, crawl, self.sampler_name, len(rows), len(sample), access.queries, time.time(),
                           scored, relevant), rows

    def committed(self, record: RoundRecord) -> None:
        self.last = record

    def status(self) -> dict:
        last = self.last
        return {"sampler": self.sampler_name, "budget": self.budget, "every": self.every,
                "pages_scored": None if last is None else last.pages_scored,
                "relevant": None if last is None else last.relevant,
                "rounds_done": self.next_round, "last_round": None if last is None else asdict(last),
                "next_round_in": round(self.due_in(), 1)}
