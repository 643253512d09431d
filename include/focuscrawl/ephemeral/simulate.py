"""A discrete-event world of content sources, to compare crawl policies on the same ground.

Seed ``001_c276720796c36144.txt``, sections 2–3: sources produce new pages at Poisson rates λ_i
(here modulated by a daily cycle, the seed's daily trends), each page's future clicks decay as
``p·e^(−μ_i·Δt)`` from its creation, and a crawler with a budget of N fetches per second spends
each slot on a source recrawl or on a discovered page. Deterministic for a seed: the world is
drawn once and every policy runs on the same pages; click feedback noise comes from a generator
seeded the same for every policy.

The policies only learn what a crawler could: the new links each recrawl reveals (→ λ) and the
cumulative clicks of pages they crawled (→ P, μ), refitted every ``refit_every_s`` with
:func:`focuscrawl.ephemeral.estimate.estimate_sources`. The oracle is given the true parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from focuscrawl.ephemeral.estimate import estimate_sources
from focuscrawl.ephemeral.schedulers import CrawlPolicy

DAY = 86400.0


@dataclass(frozen=True)
class WorldSpec:
    """The default world: a few dozen sources whose rates, profits and half-lives vary widely."""

    n_sources: int = 40
    days: float = 7.0
    lam_median_s: float = 1 / 1800.0  # new pages per second of the median source
    lam_log_sd: float = 1.0
    P_median: float = 5.0  # total clicks of a median source's page
    P_log_sd: float = 1.0
    half_life_median_s: float = 6 * 3600.0
    half_life_log_sd: float = 1.0
    page_profit_shape: float = 2.0  # pages of one source vary around P (Gamma, mean P)
    diurnal: float = 0.5  # amplitude of the daily cycle of new pages
    min_recrawl_interval_s: float = 60.0  # politeness: one recrawl per minute per source at most
    seed: int = 0


@dataclass(frozen=True)
class World:
    """Ground truth: per-source parameters and every page (source, creation time, total profit)."""

    spec: WorldSpec
    lam: np.ndarray
    P: np.ndarray
    mu: np.ndarray
    max_rate: np.ndarray
    page_source: np.ndarray
    page_created: np.ndarray  # sorted ascending
    page_profit: np.ndarray

    @property
    def horizon_s(self) -> float:
        return self.spec.days * DAY

    @property
    def source_urls(self) -> list[str]:
        return [f"http://source-{i}.world/" for i in range(self.spec.n_sources)]

    def truth(self) -> pd.DataFrame:
        """The true parameters in the estimates' layout (what the oracle is told)."""
        zeros = np.zeros(len(self.lam))
        return pd.DataFrame({"source_url": self.source_urls, "lam": self.lam, "lam_sd": zeros, "P": self.P,
                             "P_sd": zeros, "mu": self.mu, "mu_sd": zeros})


def make_world(spec: WorldSpec = WorldSpec()) -> World:
    rng = np.random.default_rng(spec.seed)
    k = spec.n_sources
    lam = spec.lam_median_s * np.exp(spec.lam_log_sd * rng.standard_normal(k))
    P = spec.P_median * np.exp(spec.P_log_sd * rng.standard_normal(k))
    mu = np.log(2) / (spec.half_life_median_s * np.exp(spec.half_life_log_sd * rng.standard_normal(k)))
    horizon = spec.days * DAY
    peak = lam * (1 + spec.diurnal)
    sources, created = [], []
    for i in range(k):  # thinning: draw at the peak rate, keep with the daily cycle's share
        times = np.sort(rng.uniform(0, horizon, rng.poisson(peak[i] * horizon)))
        keep = rng.uniform(size=len(times)) * (1 + spec.diurnal) < 1 + spec.diurnal * np.sin(2 * np.pi * times / DAY)
        created.append(times[keep])
        sources.append(np.full(int(keep.sum()), i))
    page_created = np.concatenate(created)
    page_source = np.concatenate(sources)
    order = np.argsort(page_created, kind="stable")
    page_profit = P[page_source] * rng.gamma(spec.page_profit_shape, 1 / spec.page_profit_shape, len(order))
    return World(spec, lam, P, mu, np.full(k, 1.0 / spec.min_recrawl_interval_s),
                 page_source[order], page_created[order], page_profit[order])


@dataclass(frozen=True)
class Run:
    """What one policy did: each page crawl (time, profit gained) and the fetch counts."""

    crawl_times: np.ndarray
    profits: np.ndarray
    recrawls: int
    page_fetches: int
    idle: int


def simulate(world: World, policy: CrawlPolicy, budget: float, refit_every_s: float = 6 * 3600.0,
             seed: int = 0, progress=None) -> Run:
    """Run ``policy`` with ``budget`` fetches per second over the world's horizon."""
    rng = np.random.default_rng(seed)
    k = world.spec.n_sources
    urls = np.array(world.source_urls)
    per_source = [np.flatnonzero(world.page_source == i) for i in range(k)]
    seen = np.zeros(k, dtype=np.int64)  # pages of each source revealed by recrawls so far
    last_seen_at = np.zeros(k)
    recrawl_log: list[tuple[int, int, float]] = []
    crawled: list[int] = []
    crawl_times: list[float] = []
    profits: list[float] = []
    created_ptr = 0
    counts = {"recrawl": 0, "page": 0, "idle": 0}

    def refit(now: float) -> None:
        if policy.knows_creation:
            policy.fit(world.truth())
            return
        recrawls = pd.DataFrame(recrawl_log, columns=["source", "new_links", "elapsed_s"])
        recrawls["source_url"] = urls[recrawls["source"].to_numpy(dtype=int)]
        pages = np.asarray(crawled, dtype=np.int64)
        ages = now - world.page_created[pages]
        share = -np.expm1(-world.mu[world.page_source[pages]] * ages)
        feedback = pd.DataFrame({"source_url": urls[world.page_source[pages]], "age_s": ages,
                                 "clicks": rng.poisson(world.page_profit[pages] * share)})
        policy.fit(estimate_sources(urls, recrawls, feedback))

    refit(0.0)
    next_refit = refit_every_s
    slots = int(world.horizon_s * budget)
    for slot in range(1, slots + 1):
        now = slot / budget
        if now >= next_refit:
            refit(now)
            next_refit += refit_every_s
        if policy.knows_creation:
            while created_ptr < len(world.page_created) and world.page_created[created_ptr] <= now:
                policy.created(int(world.page_source[created_ptr]), created_ptr, float(world.page_created[created_ptr]))
                created_ptr += 1
        action = policy.next_action(now)
        if action is None:
            counts["idle"] += 1
        elif action.kind == "recrawl":
            i = action.source
            ids = per_source[i]
            upto = int(np.searchsorted(world.page_created[ids], now, side="right"))
            found = ids[seen[i]:upto].tolist()
            recrawl_log.append((i, len(found), now - last_seen_at[i]))
            policy.discovered(i, found, now, now - last_seen_at[i])
            seen[i], last_seen_at[i] = upto, now
            counts["recrawl"] += 1
        else:
            page = action.page
            crawled.append(page)
            crawl_times.append(now)
            profits.append(world.page_profit[page] * np.exp(-world.mu[world.page_source[page]] * (now - world.page_created[page])))
            counts["page"] += 1
        if progress is not None:
            progress.update(1)
    return Run(np.asarray(crawl_times), np.asarray(profits), counts["recrawl"], counts["page"], counts["idle"])
