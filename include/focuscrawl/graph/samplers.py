"""Graph samplers under a vertex-query budget: UNI, RW, MHRW and FS.

Seed 003, *Fast crawling methods of exploring content distributed over large graphs* (abstract; the appendix names the four methods): content is
estimated from the vertices a sampler visits, so every draw is reported with its *sampling weight*,
its stationary probability up to a constant, which the SCE and WCE estimators divide by:

====  ==========================================================  =============
name  method                                                      weight π(v) ∝
====  ==========================================================  =============
UNI   uniform vertex sampling with replacement (site must allow)  1
RW    simple random walk                                          deg(v)
MHRW  Metropolis-Hastings random walk targeting uniform           1
FS    frontier sampling: m dependent walkers, the one to move     deg(v)
      chosen with probability ∝ its degree (Ribeiro & Towsley,
      "Estimating and sampling graphs with multidimensional
      random walks", IMC 2010)
====  ==========================================================  =============

Every query of a vertex costs one unit of the access's budget; a sampler draws until the budget is
spent. ``burn_in`` draws are dropped from the start (walks begin away from stationarity) and
``thinning`` keeps every k-th draw after it (fewer, less correlated draws).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from focuscrawl.graph.access import BudgetExhausted, ContentCopies, GraphAccess, VertexRecord
from focuscrawl.core.registry import Registry


@dataclass(frozen=True)
class Sample:
    """Draws of a sampler: vertex, weight and the content copies it holds (``copy_ptr`` indexes them by draw)."""

    vertices: np.ndarray
    weights: np.ndarray
    copy_ptr: np.ndarray
    copies: ContentCopies
    uniform: bool
    num_vertices: int | None = None
    # Index of the crawl draw each draw copies (None: draw i is crawl draw i). A bootstrap replicate
    # repeats draws; estimators that count repeats of a vertex (|V| by collisions) must tell a vertex
    # the crawl met twice from one draw the resample repeated.
    origin: np.ndarray | None = None
    # Per draw: 1.0 when the vertex's page scored at or above the page focus's threshold, 0.0 below it,
    # NaN when it was not scored (no focus, no page, a failed fetch). None: no draw was scored.
    relevant: np.ndarray | None = None

    @property
    def draw_origin(self) -> np.ndarray:
        return np.arange(len(self)) if self.origin is None else self.origin

    @classmethod
    def from_records(cls, records: list[VertexRecord], weights: list[float], uniform: bool, num_vertices: int | None) -> "Sample":
        return cls(
            vertices=np.array([r.id for r in records]),
            weights=np.asarray(weights, dtype=float),
            copy_ptr=np.concatenate([[0], np.cumsum([len(r.content) for r in records], dtype=np.int64)]).astype(np.int64),
            copies=ContentCopies.concat([r.content for r in records]),
            uniform=uniform,
            num_vertices=num_vertices,
        )

    def __len__(self) -> int:
        return len(self.weights)

    @property
    def copy_draw(self) -> np.ndarray:
        """Index of the draw holding each copy."""
        return np.repeat(np.arange(len(self)), np.diff(self.copy_ptr))

    def take(self, draws: np.ndarray) -> "Sample":
        """The sample made of ``draws`` (repeats allowed): bootstrap replicates, burn-in, thinning."""
        draws = np.asarray(draws, dtype=np.int64)
        lengths = self.copy_ptr[draws + 1] - self.copy_ptr[draws]
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        idx = np.repeat(self.copy_ptr[draws] - ptr[:-1], lengths) + np.arange(ptr[-1])
        return Sample(self.vertices[draws], self.weights[draws], ptr, self.copies.take(idx), self.uniform, self.num_vertices,
                      self.draw_origin[draws], None if self.relevant is None else self.relevant[draws])


class GraphSampler(Protocol):
    def sample(self, access: GraphAccess, rng: np.random.Generator) -> Sample: ...


SAMPLERS: Registry[GraphSampler] = Registry("graph sampler")


class _Sampler:
    """Draw until the budget is spent, then apply burn-in and thinning."""

    uniform = False

    def __init__(self, *, burn_in: int = 0, thinning: int = 1, start: Any = None) -> None:
        if burn_in < 0 or thinning < 1:
            raise ValueError(f"burn_in must be >= 0 and thinning >= 1 (got {burn_in}, {thinning})")
        self.burn_in = burn_in
        self.thinning = thinning
        self.start = start

    def _draws(self, access: GraphAccess, rng: np.random.Generator) -> Iterator[tuple[VertexRecord, float]]:
        raise NotImplementedError

    def _start(self, access: GraphAccess) -> VertexRecord:
        """A walk's first vertex: ``start``, else a uniform vertex that has neighbours. A site's graph has isolated
        vertices (the world's has: a live round failed on one), and a walk cannot leave one: a uniform draw of such
        a vertex is charged to the budget and drawn again. RW's and FS's stationary weight deg(v) is 0 there, so
        their targets are unchanged; MHRW's uniform target becomes the vertices with neighbours, which is all any
        walk reaches."""
        if self.start is not None:
            record = access.vertex(self.start)
            if record.degree == 0:
                raise ValueError(f"start vertex {self.start!r} has no neighbours: a walk cannot leave it; give one "
                                 "that has (or no start, for a uniform one)")
            return record
        if not access.supports_uniform:
            raise ValueError("the site offers no uniform vertex sampling: give the sampler a start vertex (start=...)")
        while (record := access.random_vertex()).degree == 0:
            pass
        return record

    def sample(self, access: GraphAccess, rng: np.random.Generator) -> Sample:
        records, weights = [], []
        try:
            for record, weight in self._draws(access, rng):
                records.append(record)
                weights.append(weight)
        except BudgetExhausted:
            pass
        records, weights = records[self.burn_in :: self.thinning], weights[self.burn_in :: self.thinning]
        return Sample.from_records(records, weights, self.uniform, access.num_vertices())


def _step(record: VertexRecord, access: GraphAccess, rng: np.random.Generator) -> VertexRecord:
    if record.degree == 0:
        raise ValueError(f"vertex {record.id!r} has no neighbours: a walk cannot leave it (sample a connected graph)")
    # rng.random() is several times cheaper per call than rng.integers(); walks make one call per query.
    return access.vertex(record.neighbors[int(rng.random() * record.degree)])


@SAMPLERS.register("UNI")
class UniformSampler(_Sampler):
    """Uniform vertex sampling with replacement: each draw a fresh uniform vertex, weight 1."""

    uniform = True

    def _draws(self, access, rng):
        while True:
            yield access.random_vertex(), 1.0


@SAMPLERS.register("RW")
class RandomWalkSampler(_Sampler):
    """Simple random walk: move to a uniform neighbour; stationary probability deg(v)/2|E|."""

    def _draws(self, access, rng):
        current = self._start(access)
        while True:
            yield current, float(current.degree)
            current = _step(current, access, rng)


@SAMPLERS.register("MHRW")
class MetropolisHastingsSampler(_Sampler):
    """Metropolis-Hastings walk to the uniform distribution: accept a proposed neighbour w of u
    with probability min(1, deg(u)/deg(w)), else stay (and draw u again). Each proposal costs a query."""

    def _draws(self, access, rng):
        current = self._start(access)
        while True:
            yield current, 1.0
            proposal = _step(current, access, rng)
            if rng.random() * proposal.degree <= current.degree:
                current = proposal


@SAMPLERS.register("FS")
class FrontierSampler(_Sampler):
    """Frontier sampling with ``walkers`` dependent walkers: pick walker i with probability
    deg(u_i)/Σ deg(u_j), move it to a uniform neighbour and draw the vertex it reaches. The walk on
    G^m has the same degree-proportional vertex marginal as RW but mixes from m starting points,
    which helps on loosely connected graphs. Start vertices are uniform (or ``start`` for all)."""

    def __init__(self, *, walkers: int = 10, burn_in: int = 0, thinning: int = 1, start: Any = None) -> None:
        super().__init__(burn_in=burn_in, thinning=thinning, start=start)
        if walkers < 1:
            raise ValueError(f"walkers must be >= 1 (got {walkers})")
        self.walkers = walkers

    def _draws(self, access, rng):
        frontier = [self._start(access) for _ in range(self.walkers)]
        degrees = np.array([r.degree for r in frontier], dtype=float)
        while True:
            i = min(int(np.searchsorted(np.cumsum(degrees), rng.random() * degrees.sum(), side="right")), self.walkers - 1)
            frontier[i] = _step(frontier[i], access, rng)
            degrees[i] = frontier[i].degree
            yield frontier[i], degrees[i]
