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

The process (``streaming/graph_sampler.py``) only wires Kafka and the fetch layer to this module.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

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
            raise ValueError(f"--every must be >= 0 seconds between rounds (got {every})")
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

    def sample(self, make_access: Callable[[int], GraphAccess]) -> tuple[RoundRecord, list[dict]]:
        """Run the next round; returns its record and rows (not yet committed: see :meth:`committed`)."""
        r = self.next_round
        access = make_access(self.budget)
        sampler = SAMPLERS.create(self.sampler_name, **self.sampler_params)
        sample = sampler.sample(access, np.random.default_rng([self.seed, r]))
        crawl = crawl_id(self.name, r)
        rows = sample_rows(sample, crawl, self.sampler_name)
        refs = getattr(access, "warc", None)  # an archived crawl: each row names its vertex query's response
        if refs:
            for row in rows:
                row.update(warc_columns(refs.get(row["vertex_id"])))
        return RoundRecord(r, crawl, self.sampler_name, len(rows), len(sample), access.queries, time.time()), rows

    def committed(self, record: RoundRecord) -> None:
        self.last = record

    def status(self) -> dict:
        last = self.last
        return {"sampler": self.sampler_name, "budget": self.budget, "every": self.every,
                "rounds_done": self.next_round, "last_round": None if last is None else asdict(last),
                "next_round_in": round(self.due_in(), 1)}
