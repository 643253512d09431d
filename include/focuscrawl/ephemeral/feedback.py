"""The profit signal a source's new pages are credited with, registered by name in :data:`PROFIT_SIGNALS`.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), section 2: ``P_i(Δt)`` is "the profit
of crawling this page with delay Δt", any decreasing function; the paper takes the clicks the page gets
on the result page after the crawl (or, as it says, its shows), approximated per source by
``P·e^(−μ·Δt)`` with P and μ estimated from the pages previously linked from the source. A signal
turns the rows of one landed table into the estimator's observations (:func:`focuscrawl.ephemeral.estimate.fit_profit_decay`:
per crawled page its ``age_s``, ``start_age_s`` and the ``clicks`` counted between them) and says on
which grid μ lives; nothing else of the seed's method changes:

- ``CLICKS`` (the seed's): the ``page_clicks`` rows, the latest count of each page; μ is estimated
  on :data:`~focuscrawl.ephemeral.estimate.MU_GRID`.
- ``RELEVANCE`` (no click log, e.g. a real site): the ``source_pages`` rows. A page's whole profit
  is its relevance ``r`` to the user's topic (the champion page model's calibrated score), and what
  a fetch ``d`` seconds after its publication earns is ``r·e^(−μ·d)`` with ``μ = ln 2 / half_life_s``,
  the stated freshness half-life: the observation counts from age ``d`` to the end (``age_s`` = ∞),
  so the estimator's ``w = e^(−μ·d)`` and P is the source's mean relevance. λ·P is then the
  source's rate of *relevant* new pages, and the seed's optimiser schedules by it. A page the source
  gave no publication time counts from its fetch (``d = 0``), as the click log's rows do. Pages not
  scored yet (no page model: ``relevance`` null) are no observation.

Pure pandas over the rows of one source (or all): the Spark job runs :meth:`ProfitSignal.observations`
per source with ``applyInPandas`` (``focuscrawl.ephemeral.tables``).
"""

from __future__ import annotations

import inspect
from typing import Protocol

import numpy as np
import pandas as pd

from focuscrawl.core.registry import Registry
from focuscrawl.ephemeral.estimate import MU_GRID, ProfitPrior
from focuscrawl.ephemeral.params import DEFAULT

OBSERVATION_COLUMNS = ["source_url", "age_s", "start_age_s", "clicks"]
OBSERVATION_SCHEMA = "source_url string, age_s double, start_age_s double, clicks double"


class ProfitSignal(Protocol):
    """Rows of :attr:`table` -> the profit estimator's observations, on :meth:`mu_grid`, from :meth:`prior`."""

    table: str  # the landed table its rows come from

    def observations(self, rows: pd.DataFrame) -> pd.DataFrame:
        """One row per page: ``source_url, age_s, start_age_s, clicks`` (:data:`OBSERVATION_COLUMNS`)."""

    def forward_split(self, rows: pd.DataFrame, at: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(known, new)``: the rows a fit at ``at`` (epoch microseconds) would have read, and the rows of the
        pages new from ``at`` on, whose profit it predicts (:mod:`focuscrawl.ephemeral.evaluation`)."""

    def mu_grid(self) -> np.ndarray:
        """The decay rates (per second) μ's posterior lives on."""

    def prior(self) -> ProfitPrior:
        """The prior of P and μ before any observation (the pooled data replaces its centre)."""


PROFIT_SIGNALS: Registry[ProfitSignal] = Registry("profit signal")


def epoch_micros(column: pd.Series) -> np.ndarray:
    """Epoch microseconds of a timestamp column (pandas datetimes, as Spark and delta-rs hand them, or integers)."""
    if pd.api.types.is_datetime64_any_dtype(column):
        return (column.dt.tz_localize(None) if column.dt.tz is not None else column).astype("datetime64[us]") \
            .astype(np.int64).to_numpy(float)
    return pd.to_numeric(column).to_numpy(float)


@PROFIT_SIGNALS.register("CLICKS")
class ClicksSignal:
    """The clicks a search engine counted on each crawled page (``page_clicks``; its latest count per page)."""

    name = "CLICKS"
    table = "page_clicks"

    def observations(self, rows: pd.DataFrame) -> pd.DataFrame:
        if rows.empty:
            return pd.DataFrame({c: pd.Series(dtype=object if c == "source_url" else float) for c in OBSERVATION_COLUMNS})
        latest = rows.assign(_at=epoch_micros(rows["observed_at"])).sort_values("_at", kind="stable") \
            .drop_duplicates(["source_url", "page_url"], keep="last")
        created = epoch_micros(latest["created_at"])
        counted = latest["counted_from"].where(latest["counted_from"].notna(), latest["created_at"])
        return pd.DataFrame({"source_url": latest["source_url"].to_numpy(),
                             "age_s": (latest["_at"].to_numpy(float) - created) / 1e6,
                             "start_age_s": (epoch_micros(counted) - created) / 1e6,
                             "clicks": latest["clicks"].to_numpy(float)})

    def forward_split(self, rows: pd.DataFrame, at: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        # the counts read before `at` (of the pages created before it), and the pages created from `at` on
        new = epoch_micros(rows["created_at"]) >= at
        return rows[~new & (epoch_micros(rows["observed_at"]) < at)], rows[new]

    def mu_grid(self) -> np.ndarray:
        return MU_GRID

    def prior(self) -> ProfitPrior:
        return ProfitPrior()


@PROFIT_SIGNALS.register("RELEVANCE")
class RelevanceSignal:
    """Each fetched new page's relevance, discounted by its fetch delay with the freshness half-life ``half_life_s``."""

    name = "RELEVANCE"
    table = "source_pages"

    def __init__(self, *, half_life_s: float = DEFAULT.freshness_half_life_s) -> None:
        self.half_life_s = half_life_s

    def _mu(self) -> float:
        if not self.half_life_s > 0:
            raise ValueError(f"freshness half-life must be > 0 seconds, got {self.half_life_s!r}")
        return float(np.log(2) / self.half_life_s)

    def observations(self, rows: pd.DataFrame) -> pd.DataFrame:
        scored = rows[rows["relevance"].notna()] if len(rows) else rows
        if scored.empty:
            return pd.DataFrame({c: pd.Series(dtype=object if c == "source_url" else float) for c in OBSERVATION_COLUMNS})
        fetched = epoch_micros(scored["fetched_at"])
        published = scored["published_at"].where(scored["published_at"].notna(), scored["fetched_at"])
        delay = np.maximum(fetched - epoch_micros(published), 0.0) / 1e6
        relevance = scored["relevance"].to_numpy(float)
        return pd.DataFrame({"source_url": scored["source_url"].to_numpy(), "age_s": np.full(len(scored), np.inf),
                             "start_age_s": delay, "clicks": relevance * np.exp(-self._mu() * delay)})

    def forward_split(self, rows: pd.DataFrame, at: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        # a page's relevance is known from its fetch: the pages fetched before `at`, and those fetched after
        new = epoch_micros(rows["fetched_at"]) >= at
        return rows[~new], rows[new]

    def mu_grid(self) -> np.ndarray:
        return np.array([self._mu()])

    def prior(self) -> ProfitPrior:
        # P: a page's relevance, in [0, 1]; one pseudo-page at 0.5 before the pooled data centres it.
        return ProfitPrior(P_mean=0.5, P_shape=1.0, mu_median=self._mu())


def profit_signal(name: str, half_life_s: float = DEFAULT.freshness_half_life_s) -> ProfitSignal:
    """The registered signal ``name``, given the stated freshness half-life when it discounts by one."""
    cls = PROFIT_SIGNALS.get(name)
    takes = "half_life_s" in inspect.signature(cls).parameters
    return cls(half_life_s=half_life_s) if takes else cls()
