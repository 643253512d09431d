"""A discrete-event world of content sources, to compare crawl policies on the same ground.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), sections 2–3: sources produce new pages (the seed's daily trends
as a daily cycle), each page gathers clicks over its life, and a crawler with a budget of N
fetches per second spends each slot on a source recrawl or on a discovered page. The profit of
crawling a page Δt after its creation is the clicks it still gets after that (section 2,
``P_i(Δt)``). Deterministic for a seed: the world is drawn once and every policy runs on the same
pages; click feedback noise comes from a generator seeded the same for every policy.

Two kinds of world (:class:`WorldSpec`):

- ``decay="exponential"``, ``arrivals="poisson"``, ``rate_drift=0``: the optimiser's own model
  (section 4): Poisson pages at rates λ_i with a daily cycle, clicks decaying as ``P·e^(−μ_i·Δt)``.
- :meth:`WorldSpec.second`: a world the optimiser does not assume: click
  times log-normal (heavier tail than exponential, same median), arrivals bursty (a two-state
  Markov-modulated Poisson process per source) and source rates drifting (a random walk of log λ).

The policies only learn what a crawler could: the new links each recrawl reveals (→ λ) and the
profit signal of the pages *it crawled* (:mod:`focuscrawl.ephemeral.feedback`), refitted every
``refit_every_s`` with :func:`focuscrawl.ephemeral.estimate.estimate_sources`: with ``CLICKS``, the clicks
counted from each page's crawl (a search engine sees clicks on its result pages only once it has
indexed the page); with ``RELEVANCE``, each crawled page's relevance score, as the live path's page
model gives it, at the delay it was fetched. The oracle is told every page at its creation and the
true P and μ (on the log-normal world: the μ of the exponential with the same median, the oracle's
frontier ranking by the model's form); with ``RELEVANCE``, each source's true share of relevant pages
and the freshness μ.

**A page focus the evaluation can judge.** Every page carries a hidden topic label, relevant to the
user's focus or not, which only the evaluation reads, and the score a page model would give it, which
the crawler reads. A source's share of relevant pages is drawn from a Beta of mean
``relevant_share_mean`` and concentration ``relevant_share_concentration``; the label is drawn per page
from its source's share, independently of the page's clicks (no link between popularity and topic: the
neutral choice). The score is the calibrated posterior of a binormal model (scores of relevant and other
pages normal with unit variance, their means ``√2·Φ⁻¹(AUC)`` apart) with the AUC ``relevance_auc``.
Defaults from data: 0.11 is the page focus's share of the world's pages (History, 508 of the 4,598
Wikipedia articles of ``../shared/data/wikispeedia`` that ``projects/world.toml``'s focus is about),
0.86 the held-out AUC of the product's baseline page model (TF-IDF + logistic) on those pages
(``bench/results/page-relevance``, mean of 5 seeds); the concentration 1 (a source's share Beta(m, 1 − m),
so most sources are nearly all on or all off the topic, as the world's hosts are, and some mixed) is a
stated neutral choice. These draws come from their own generator, so a world's sources, pages and
clicks are the same as without them.

Where the defaults come from (none from a paper's verdict): rates, profits and half-lives are
log-normal with a log-sd of 1 around medians of one page per 30 min, 5 clicks and 6 hours, a
neutral spread of about an order of magnitude between sources; politeness one recrawl per minute;
the second world's log-sd of click times 1.0, bursts 5x the base rate for 20% of the time in
bursts of an hour on average, and a log-rate drift of 0.5 per sqrt(day) are stated neutral choices
(moderate departures, not fitted to data), each its own ``WorldSpec`` field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from focuscrawl.ephemeral.estimate import estimate_sources
from focuscrawl.ephemeral.feedback import ProfitSignal, profit_signal
from focuscrawl.ephemeral.schedulers import CrawlPolicy

DAY = 86400.0
CLICKS = profit_signal("CLICKS")
DECAYS = ("exponential", "lognormal")
ARRIVALS = ("poisson", "bursty")


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
    decay: str = "exponential"  # or "lognormal": click times log-normal, median = the half-life
    decay_log_sd: float = 1.0  # sd of log click time (lognormal decay)
    arrivals: str = "poisson"  # or "bursty": two-state Markov-modulated Poisson process
    burst_factor: float = 5.0  # rate in a burst / rate outside it (bursty)
    burst_share: float = 0.2  # share of the time a source is in a burst (bursty)
    burst_mean_s: float = 3600.0  # mean length of a burst (bursty)
    rate_drift: float = 0.0  # sd of log λ per sqrt(day): a random walk of each source's rate
    relevant_share_mean: float = 0.11  # the page focus's share of pages (data: see the module docstring)
    relevant_share_concentration: float = 1.0  # a + b of each source's Beta share of relevant pages
    relevance_auc: float = 0.86  # AUC of the score a page model gives (data: see the module docstring)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.decay not in DECAYS:
            raise ValueError(f"decay must be one of {DECAYS} (got {self.decay!r})")
        if self.arrivals not in ARRIVALS:
            raise ValueError(f"arrivals must be one of {ARRIVALS} (got {self.arrivals!r})")
        if not 0 < self.burst_share < 1 or self.burst_factor < 1:
            raise ValueError("burst_share must be in (0, 1) and burst_factor >= 1")
        if not 0 < self.relevant_share_mean < 1 or not self.relevant_share_concentration > 0:
            raise ValueError("relevant_share_mean must be in (0, 1) and relevant_share_concentration > 0")
        if not 0.5 <= self.relevance_auc < 1:
            raise ValueError(f"relevance_auc must be in [0.5, 1) (got {self.relevance_auc!r})")

    @classmethod
    def second(cls, **changes) -> "WorldSpec":
        """The world the optimiser does not assume: log-normal decay, bursty arrivals, drifting rates."""
        return cls(**{"decay": "lognormal", "arrivals": "bursty", "rate_drift": 0.5, **changes})

    @property
    def is_model_world(self) -> bool:
        return self.decay == "exponential" and self.arrivals == "poisson" and self.rate_drift == 0

    def with_seed(self, seed: int) -> "WorldSpec":
        return dataclasses.replace(self, seed=seed)


WORLDS = {"model": WorldSpec, "second": WorldSpec.second}


@dataclass(frozen=True)
class World:
    """Ground truth: per-source parameters and every page (source, creation time, total profit, hidden
    topic label); ``page_relevance`` is what a crawler's page model says of each page."""

    spec: WorldSpec
    lam: np.ndarray  # mean rate over the horizon
    P: np.ndarray
    mu: np.ndarray  # exponential rate with the source's half-life (= the log-normal median)
    max_rate: np.ndarray
    page_source: np.ndarray
    page_created: np.ndarray  # sorted ascending
    page_profit: np.ndarray
    relevant_share: np.ndarray  # per source: the share of its pages about the focus (hidden)
    page_relevant: np.ndarray  # per page: the hidden topic label (evaluation only)
    page_relevance: np.ndarray  # per page: the calibrated score in [0, 1] a page model gives it

    @property
    def horizon_s(self) -> float:
        return self.spec.days * DAY

    @property
    def source_urls(self) -> list[str]:
        return [f"http://source-{i}.world/" for i in range(self.spec.n_sources)]

    def survival(self, sources: np.ndarray, ages: np.ndarray) -> np.ndarray:
        """Share of a page's total clicks that come after ``ages`` seconds of life."""
        ages = np.maximum(np.asarray(ages, dtype=float), 0.0)
        mu = self.mu[np.asarray(sources, dtype=np.int64)]
        if self.spec.decay == "exponential":
            return np.exp(-mu * ages)
        median = np.log(2) / mu
        with np.errstate(divide="ignore"):
            z = (np.log(ages) - np.log(median)) / self.spec.decay_log_sd
        return 1.0 - ndtr(z)

    def truth(self, sources: np.ndarray | None = None, signal: ProfitSignal = CLICKS) -> pd.DataFrame:
        """The true parameters in the estimates' layout (what the oracle is told), for ``sources``: under
        a relevance signal, P is the source's true share of relevant pages and μ the signal's."""
        idx = np.arange(len(self.lam)) if sources is None else np.asarray(sources)
        zeros = np.zeros(len(idx))
        P, mu = (self.P[idx], self.mu[idx]) if signal.table == CLICKS.table else \
            (self.relevant_share[idx], np.full(len(idx), float(signal.mu_grid()[0])))
        return pd.DataFrame({"source_url": np.array(self.source_urls)[idx], "lam": self.lam[idx], "lam_sd": zeros,
                             "P": P, "P_sd": zeros, "mu": mu, "mu_sd": zeros})


def _modulated_arrivals(spec: WorldSpec, lam: np.ndarray, horizon: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Page times per source from a rate piecewise constant on 10-minute cells: daily cycle x burst
    state x drift, each source's mean rate kept at ``lam`` (bursts and drift move rate around it)."""
    dt = 600.0
    cells = int(np.ceil(horizon / dt))
    t0 = np.arange(cells) * dt
    cycle = 1 + spec.diurnal * np.sin(2 * np.pi * (t0 + dt / 2) / DAY)
    out = []
    for i in range(len(lam)):
        shape = np.ones(cells)
        if spec.arrivals == "bursty":
            leave = dt / spec.burst_mean_s  # P(burst ends in a cell); enter so that the share is burst_share
            enter = leave * spec.burst_share / (1 - spec.burst_share)
            state = np.empty(cells, dtype=bool)
            state[0] = rng.random() < spec.burst_share
            u = rng.random(cells)
            for c in range(1, cells):
                state[c] = (u[c] >= leave) if state[c - 1] else (u[c] < enter)
            shape *= np.where(state, spec.burst_factor, 1.0)
        if spec.rate_drift > 0:
            steps = rng.standard_normal(cells) * spec.rate_drift * np.sqrt(dt / DAY)
            shape *= np.exp(np.cumsum(steps))
        shape /= shape.mean()
        counts = rng.poisson(lam[i] * cycle * shape * dt)
        times = np.repeat(t0, counts) + rng.uniform(0, dt, counts.sum())
        out.append(np.sort(times[times < horizon]))
    return out


def make_world(spec: WorldSpec = WorldSpec()) -> World:
    rng = np.random.default_rng(spec.seed)
    k = spec.n_sources
    lam = spec.lam_median_s * np.exp(spec.lam_log_sd * rng.standard_normal(k))
    P = spec.P_median * np.exp(spec.P_log_sd * rng.standard_normal(k))
    mu = np.log(2) / (spec.half_life_median_s * np.exp(spec.half_life_log_sd * rng.standard_normal(k)))
    horizon = spec.days * DAY
    if spec.arrivals == "poisson" and spec.rate_drift == 0:
        peak = lam * (1 + spec.diurnal)
        created = []
        for i in range(k):  # thinning: draw at the peak rate, keep with the daily cycle's share
            times = np.sort(rng.uniform(0, horizon, rng.poisson(peak[i] * horizon)))
            keep = rng.uniform(size=len(times)) * (1 + spec.diurnal) < 1 + spec.diurnal * np.sin(2 * np.pi * times / DAY)
            created.append(times[keep])
    else:
        created = _modulated_arrivals(spec, lam, horizon, rng)
    sources = [np.full(len(c), i) for i, c in enumerate(created)]
    page_created = np.concatenate(created)
    page_source = np.concatenate(sources)
    order = np.argsort(page_created, kind="stable")
    page_profit = P[page_source] * rng.gamma(spec.page_profit_shape, 1 / spec.page_profit_shape, len(order))
    share, relevant, score = _page_focus(spec, page_source[order])
    return World(spec, lam, P, mu, np.full(k, 1.0 / spec.min_recrawl_interval_s),
                 page_source[order], page_created[order], page_profit[order], share, relevant, score)


def _page_focus(spec: WorldSpec, page_source: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each source's share of relevant pages, each page's hidden label and its page-model score (the
    module docstring), from a generator of their own."""
    rng = np.random.default_rng([spec.seed, 30])
    m, c = spec.relevant_share_mean, spec.relevant_share_concentration
    share = rng.beta(m * c, (1 - m) * c, spec.n_sources)
    relevant = rng.random(len(page_source)) < share[page_source]
    d = np.sqrt(2) * ndtri(spec.relevance_auc)  # binormal: AUC = Φ(d / √2)
    z = rng.standard_normal(len(page_source)) + d * relevant
    # P(relevant | z) with the base rate as the prior: the likelihood ratio of N(d, 1) to N(0, 1) is e^(d·z − d²/2)
    score = 1.0 / (1.0 + (1 - m) / m * np.exp(-(d * z - d * d / 2)))
    return share, relevant, score


@dataclass(frozen=True)
class Run:
    """What one policy did: each page crawl (time, profit gained, page) and the fetch counts;
    ``discoveries`` (world source, page, time) of every link a recrawl revealed."""

    crawl_times: np.ndarray
    profits: np.ndarray
    recrawls: int
    page_fetches: int
    idle: int
    pages: np.ndarray
    discoveries: np.ndarray


def click_feedback(world: World, pages: np.ndarray, crawled_at: np.ndarray, now: float, rng: np.random.Generator) -> pd.DataFrame:
    """What a search engine's click log says at ``now`` of the pages it crawled: clicks counted from
    each page's crawl (``start_age_s``) to ``now`` (``age_s``), Poisson around the page's true share."""
    pages = np.asarray(pages, dtype=np.int64)
    src = world.page_source[pages]
    start = np.asarray(crawled_at, dtype=float) - world.page_created[pages]
    ages = now - world.page_created[pages]
    share = np.maximum(world.survival(src, start) - world.survival(src, ages), 0.0)
    return pd.DataFrame({"source": src, "age_s": ages, "start_age_s": start, "clicks": rng.poisson(world.page_profit[pages] * share)})


def scored_pages(world: World, pages: np.ndarray, crawled_at: np.ndarray) -> pd.DataFrame:
    """The ``source_pages`` rows the crawler landed for the pages it crawled: when each was published and
    fetched (epoch microseconds from the world's start) and its page-model score."""
    pages = np.asarray(pages, dtype=np.int64)
    return pd.DataFrame({"source_url": np.array(world.source_urls)[world.page_source[pages]],
                         "published_at": np.round(world.page_created[pages] * 1e6),
                         "fetched_at": np.round(np.asarray(crawled_at, dtype=float) * 1e6),
                         "relevance": world.page_relevance[pages]})


def observations(world: World, signal: ProfitSignal, pages: np.ndarray, crawled_at: np.ndarray, now: float,
                 rng: np.random.Generator) -> pd.DataFrame:
    """The estimator's observations at ``now`` under ``signal``, from what the crawler could know of the
    pages it crawled: the click log (:func:`click_feedback`) or its own scored pages (:func:`scored_pages`
    through the signal's :meth:`~focuscrawl.ephemeral.feedback.ProfitSignal.observations`)."""
    if signal.table == CLICKS.table:
        feedback = click_feedback(world, pages, crawled_at, now, rng)
        feedback["source_url"] = np.array(world.source_urls)[feedback["source"].to_numpy(dtype=int)]
        return feedback
    return signal.observations(scored_pages(world, pages, crawled_at))


def simulate(world: World, policy: CrawlPolicy, budget: float, refit_every_s: float = 6 * 3600.0,
             seed: int = 0, progress=None, sources=None, start_s: float = 0.0, end_s: float | None = None,
             signal: ProfitSignal = CLICKS) -> Run:
    """Run ``policy`` with ``budget`` fetches per second from ``start_s`` to ``end_s`` (default: the
    world's horizon), watching ``sources`` only (world source indices; default all): the policy's
    source i is ``sources[i]``, and pages of other sources are never found. ``signal``: the profit
    signal the policy's estimates are fitted from (the seed's clicks by default)."""
    rng = np.random.default_rng(seed)
    chosen = np.arange(world.spec.n_sources) if sources is None else np.asarray(sources, dtype=np.int64)
    k = len(chosen)
    end_s = world.horizon_s if end_s is None else end_s
    urls = np.array(world.source_urls)[chosen]
    local = {int(s): i for i, s in enumerate(chosen)}
    per_source = [np.flatnonzero(world.page_source == s) for s in chosen]
    seen = np.array([int(np.searchsorted(world.page_created[ids], start_s, side="right")) for ids in per_source], dtype=np.int64)
    last_seen_at = np.full(k, start_s)
    recrawl_log: list[tuple[int, int, float]] = []
    discoveries: list[tuple[int, int, float]] = []
    crawled: list[int] = []
    crawl_times: list[float] = []
    profits: list[float] = []
    mask = np.isin(world.page_source, chosen) & (world.page_created > start_s)
    created_pages = np.flatnonzero(mask)
    created_ptr = 0
    counts = {"recrawl": 0, "page": 0, "idle": 0}

    def refit(now: float) -> None:
        if policy.knows_creation:
            policy.fit(world.truth(chosen, signal))
            return
        recrawls = pd.DataFrame(recrawl_log, columns=["source", "new_links", "elapsed_s"])
        recrawls["source_url"] = urls[recrawls["source"].to_numpy(dtype=int)]
        feedback = observations(world, signal, np.asarray(crawled, dtype=np.int64), np.asarray(crawl_times), now, rng)
        policy.fit(estimate_sources(urls, recrawls, feedback, mu_grid=signal.mu_grid(), base_prior=signal.prior()))

    refit(start_s)
    next_refit = start_s + refit_every_s
    first, last = int(np.floor(start_s * budget)) + 1, int(end_s * budget)
    for slot in range(first, last + 1):
        now = slot / budget
        if now >= next_refit:
            refit(now)
            next_refit += refit_every_s
        if policy.knows_creation:
            while created_ptr < len(created_pages) and world.page_created[created_pages[created_ptr]] <= now:
                page = int(created_pages[created_ptr])
                policy.created(local[int(world.page_source[page])], page, float(world.page_created[page]))
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
            discoveries.extend((int(chosen[i]), p, now) for p in found)
            policy.discovered(i, found, now, now - last_seen_at[i])
            seen[i], last_seen_at[i] = upto, now
            counts["recrawl"] += 1
        else:
            page = action.page
            crawled.append(page)
            crawl_times.append(now)
            src = world.page_source[page]
            profits.append(float(world.page_profit[page] * world.survival(np.array([src]), np.array([now - world.page_created[page]]))[0]))
            counts["page"] += 1
        if progress is not None:
            progress.update(1)
    return Run(np.asarray(crawl_times), np.asarray(profits), counts["recrawl"], counts["page"], counts["idle"],
               np.asarray(crawled, dtype=np.int64), np.asarray(discoveries, dtype=float).reshape(-1, 3))


def discover_sources(world: World, budget: float, history_end_s: float, coverage: float = 0.9, seed: int = 0) -> pd.DataFrame:
    """Section 3 in the simulation: a breadth-first crawl of every candidate source up to
    ``history_end_s`` is the crawl history; its new links and the clicks its pages got after their
    crawl (the click log at ``history_end_s``) give each page's profit, and greedy maximum coverage
    (:func:`focuscrawl.ephemeral.discovery.choose_sources`) picks the sources covering ``coverage``
    of it. Returns the chosen sources (``source``: world index) in the order chosen."""
    from focuscrawl.ephemeral.discovery import choose_sources, new_page_links
    from focuscrawl.ephemeral.schedulers import SCHEDULERS

    bfs = SCHEDULERS.create("BFS", budget=budget, max_rate=world.max_rate)
    run = simulate(world, bfs, budget, refit_every_s=history_end_s + 1, seed=seed, end_s=history_end_s)
    urls = np.array(world.source_urls)
    d = run.discoveries
    history = pd.DataFrame({"source_url": urls[d[:, 0].astype(int)], "discovered_page_url": d[:, 1].astype(int).astype(str),
                            "discovered_at": d[:, 2]})
    # Each source's first crawl, even if it found nothing, marks where its archive ends.
    firsts = pd.DataFrame({"source_url": urls, "discovered_page_url": "", "discovered_at": 0.0})
    links = new_page_links(pd.concat([firsts, history], ignore_index=True))
    links = links[links.discovered_page_url != ""]
    clicks = click_feedback(world, run.pages, run.crawl_times, history_end_s, np.random.default_rng([seed, 7]))
    profit = pd.DataFrame({"page_url": run.pages.astype(str), "profit": clicks["clicks"].to_numpy(dtype=float)})
    chosen = choose_sources(links, profit, coverage=coverage)
    return chosen.assign(source=chosen.source_url.map({u: i for i, u in enumerate(urls)}).astype(int))
