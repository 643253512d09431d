"""Crawl policies for ephemeral new content, one protocol, registered by name in :data:`SCHEDULERS`.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), introduction and section 2: the crawler divides one budget of
fetches between recrawling content sources (to discover new pages) and fetching the new pages
(whose profit decays from the moment they appear). ``LAGRANGE`` is the optimiser of
:mod:`focuscrawl.ephemeral.optimiser`; the others are the comparisons the seed argues against:
breadth-first recrawl with FIFO pages, fixed quotas (the seed: "far from being optimal"),
recrawl frequency proportional to λ, and an ``ORACLE`` upper bound that is told of every page at
its creation, so it spends nothing on recrawls and never waits for discovery.

Protocol (Frontera-style: reacts to events, does no I/O)::

    policy = SCHEDULERS.create("LAGRANGE", budget=0.05, max_rate=caps)   # keyword arguments only
    policy.fit(estimates)                      # per-source λ, P, μ (rows in source order)
    action = policy.next_action(now)           # Action("recrawl", i) | Action("page", i, page) | None
    policy.discovered(i, page_ids, now, window_s)   # after a recrawl of i found page_ids
    policy.created(i, page_id, now)            # only for policies with knows_creation (the oracle)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from focuscrawl.ephemeral.estimate import optimistic
from focuscrawl.ephemeral.optimiser import allocate
from focuscrawl.ephemeral.params import DEFAULT
from focuscrawl.core.registry import Registry


@dataclass(frozen=True)
class Action:
    kind: str  # "recrawl" or "page"
    source: int
    page: int = -1


class CrawlPolicy(Protocol):
    """One way of spending ``budget`` fetches/s; ``max_rate``: politeness cap on recrawls/s per source.

    ``last_recrawl_`` is the state a crawler restores (when each source was last recrawled)."""

    knows_creation: bool
    budget: float
    max_rate: np.ndarray
    last_recrawl_: np.ndarray

    def fit(self, estimates: pd.DataFrame) -> "CrawlPolicy":
        """Re-plan from per-source estimates (columns lam, P, mu, ...; one row per source, in order)."""
        ...

    def next_action(self, now: float) -> Action | None:
        """What to fetch in the slot starting at ``now`` (None: nothing worth a fetch)."""
        ...

    def discovered(self, source: int, pages: list[int], now: float, window_s: float) -> None:
        """A recrawl of ``source`` at ``now`` found ``pages``, created in the last ``window_s`` seconds."""
        ...

    def created(self, source: int, page: int, now: float) -> None:
        """Told when a page appears (only policies with ``knows_creation``)."""
        ...


class _Policy(ABC):
    """What every policy here shares: the constructor, the recrawl clock, politeness."""

    knows_creation = False

    def __init__(self, *, budget: float, max_rate) -> None:
        self.budget = budget
        self.max_rate = np.asarray(max_rate, dtype=float)
        self.last_recrawl_ = np.zeros(len(self.max_rate))

    @abstractmethod
    def fit(self, estimates: pd.DataFrame) -> "_Policy": ...

    @abstractmethod
    def next_action(self, now: float) -> Action | None: ...

    @abstractmethod
    def discovered(self, source: int, pages: list[int], now: float, window_s: float) -> None: ...

    def created(self, source: int, page: int, now: float) -> None:
        pass

    def polite(self, source: int, now: float) -> bool:
        return now - self.last_recrawl_[source] >= 1.0 / self.max_rate[source] - 1e-9


SCHEDULERS: Registry[CrawlPolicy] = Registry("scheduler")


class ProfitFrontier:
    """Discovered pages in batches per source, served by expected remaining profit, highest first.

    A page found by a recrawl at t whose previous recrawl was g seconds earlier was created
    uniformly in (t − g, t], so its expected remaining profit at ``now`` is
    ``P·e^(−μ(now − t))·(1 − e^(−μg))/(μg)``: equal within a batch, larger for newer batches of the
    same source, so each source's newest batch is its best and only those are compared.
    """

    def __init__(self, n_sources: int) -> None:
        self.batches: list[list[tuple[float, float, list[int]]]] = [[] for _ in range(n_sources)]
        self.popped_score_: float | None = None
        self.P = np.zeros(n_sources)
        self.mu = np.ones(n_sources)

    def add(self, source: int, pages: list[int], now: float, window_s: float) -> None:
        if pages:
            self.batches[source].append((now, window_s, list(pages)))

    def score(self, source: int, now: float) -> float:
        t, g, _ = self.batches[source][-1]
        mu = self.mu[source]
        spread = 1.0 if g * mu < 1e-12 else -math.expm1(-mu * g) / (mu * g)
        return self.P[source] * math.exp(-mu * (now - t)) * spread

    def pop_best(self, now: float, skip_below: float = 0.0) -> tuple[int, int] | None:
        best, best_score = -1, skip_below
        for source, queue in enumerate(self.batches):
            if queue:
                s = self.score(source, now)
                if s >= best_score:
                    best, best_score = source, s
        if best < 0:
            return None
        self.popped_score_ = best_score  # the popped page's expected remaining profit: what put it first
        queue = self.batches[best]
        page = queue[-1][2].pop()
        if not queue[-1][2]:
            queue.pop()
        return best, page


class PlannedPolicy(_Policy):
    """Recrawl each source every 1/rate seconds, fetch discovered pages by expected remaining profit.

    A slot goes to the most overdue recrawl, else to the best page worth at least ``skip_below_``,
    else (nothing worth fetching) to the next recrawl that politeness allows, so no slot idles
    while a source could be checked. Variants override :meth:`plan` only.
    """

    def __init__(self, *, budget: float, max_rate) -> None:
        super().__init__(budget=budget, max_rate=max_rate)
        self.frontier_ = ProfitFrontier(len(self.max_rate))
        self.rate_ = np.zeros(len(self.max_rate))
        self.skip_below_ = 0.0

    @property
    def frontier(self) -> ProfitFrontier:
        """The discovered pages waiting (state, hence ``frontier_``; the source crawler restores it by this name)."""
        return self.frontier_

    @abstractmethod
    def plan(self, estimates: pd.DataFrame) -> tuple[np.ndarray, float]:
        """Recrawl rates per source and the skip threshold for pages."""

    def fit(self, estimates: pd.DataFrame) -> "PlannedPolicy":
        self.rate_, self.skip_below_ = self.plan(estimates)
        self.frontier_.P = estimates["P"].to_numpy(dtype=float)
        self.frontier_.mu = estimates["mu"].to_numpy(dtype=float)
        return self

    def next_action(self, now: float) -> Action | None:
        with np.errstate(divide="ignore"):
            due = self.last_recrawl_ + np.where(self.rate_ > 0, 1.0 / self.rate_, np.inf)
        allowed = now - self.last_recrawl_ >= 1.0 / self.max_rate - 1e-9
        overdue = np.where(allowed & (due <= now), due, np.inf)
        if np.isfinite(overdue).any():
            return self._recrawl(int(np.argmin(overdue)), now)
        page = self.frontier_.pop_best(now, self.skip_below_)
        if page is not None:
            return Action("page", *page)
        early = np.where(allowed, due, np.inf)
        if np.isfinite(early).any():
            return self._recrawl(int(np.argmin(early)), now)
        return None

    def _recrawl(self, source: int, now: float) -> Action:
        self.last_recrawl_[source] = now
        return Action("recrawl", source)

    def discovered(self, source: int, pages: list[int], now: float, window_s: float) -> None:
        self.frontier_.add(source, pages, now, window_s)


@SCHEDULERS.register("LAGRANGE")
class LagrangeScheduler(PlannedPolicy):
    """Ours: recrawl intervals from the Lagrangian optimum, skip pages worth less than ν.

    ``optimism`` adds that many posterior standard deviations to λ and P, so sources seen little
    keep being recrawled until their estimates firm up (they would otherwise never be re-examined).
    """

    def __init__(self, *, budget: float, max_rate, optimism: float = DEFAULT.optimism) -> None:
        super().__init__(budget=budget, max_rate=max_rate)
        self.optimism = optimism

    def fit(self, estimates):
        # Optimistic values plan the intervals *and* score pages, so ν and page scores agree.
        return super().fit(optimistic(estimates, self.optimism))

    def plan(self, estimates):
        columns = (estimates[c].to_numpy(float) for c in ("lam", "P", "mu"))
        allocation = allocate(*columns, self.max_rate, self.budget)
        return allocation.rate, allocation.multiplier


@SCHEDULERS.register("FIXED_QUOTA")
class FixedQuotaScheduler(PlannedPolicy):
    """A fixed share of the budget for recrawls, spread evenly over sources (seed: "fixed quota")."""

    def __init__(self, *, budget: float, max_rate, recrawl_share: float = 0.5) -> None:
        super().__init__(budget=budget, max_rate=max_rate)
        self.recrawl_share = recrawl_share

    def plan(self, estimates):
        even = self.recrawl_share * self.budget / max(len(self.max_rate), 1)
        return np.minimum(even, self.max_rate), 0.0


@SCHEDULERS.register("LAMBDA")
class LinkRateScheduler(PlannedPolicy):
    """Recrawl frequency proportional to λ, with what is left once every new page is fetched.

    ``min_recrawl_share`` keeps some recrawls when the pages alone would take the whole budget.
    """

    def __init__(self, *, budget: float, max_rate, min_recrawl_share: float = 0.1) -> None:
        super().__init__(budget=budget, max_rate=max_rate)
        self.min_recrawl_share = min_recrawl_share

    def plan(self, estimates):
        lam = estimates["lam"].to_numpy(float)
        recrawl_budget = max(self.budget - lam.sum(), self.min_recrawl_share * self.budget)
        if np.minimum(1e12 * lam, self.max_rate).sum() <= recrawl_budget:
            return np.where(lam > 0, self.max_rate, 0.0), 0.0
        lo, hi = 0.0, 1e12
        for _ in range(200):  # the scale c of r_i = min(c·λ_i, cap_i) that spends the recrawl budget
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.minimum(mid * lam, self.max_rate).sum() < recrawl_budget else (lo, mid)
        return np.minimum(lo * lam, self.max_rate), 0.0


@SCHEDULERS.register("ORACLE")
class OracleScheduler(PlannedPolicy):
    """Upper bound: told of each page at creation (no recrawls), pages by true remaining profit."""

    knows_creation = True

    def plan(self, estimates):
        return np.zeros(len(self.max_rate)), 0.0

    def created(self, source: int, page: int, now: float) -> None:
        self.frontier_.add(source, [page], now, 0.0)


@SCHEDULERS.register("BFS")
class BreadthFirstScheduler(_Policy):
    """Breadth-first: one FIFO queue of source recrawls and discovered pages, sources round-robin.

    A recrawl puts the pages it found, then the source itself, at the back of the queue; a source
    that politeness does not yet allow is passed over until it is.
    """

    def __init__(self, *, budget: float, max_rate) -> None:
        super().__init__(budget=budget, max_rate=max_rate)
        self._queue: deque[Action] = deque(Action("recrawl", i) for i in range(len(self.max_rate)))

    def fit(self, estimates):
        return self

    def next_action(self, now: float) -> Action | None:
        for _ in range(len(self._queue)):
            item = self._queue.popleft()
            if item.kind == "page":
                return item
            if self.polite(item.source, now):
                self.last_recrawl_[item.source] = now
                return item
            self._queue.append(item)
        return None

    def discovered(self, source: int, pages: list[int], now: float, window_s: float) -> None:
        self._queue.extend(Action("page", source, p) for p in pages)
        self._queue.append(Action("recrawl", source))
