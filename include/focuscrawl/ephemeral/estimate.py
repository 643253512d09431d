"""Per-source estimates of λ (new-link rate), P (total profit of a new page) and μ (profit decay).

Seed 001 (*Timely crawling of high-quality ephemeral new content*), section 2: the cumulative clicks of a page of age Δt are well
described by ``P·(1−e^(−μ·Δt))`` with P and μ specific to the content source, estimated from the
pages previously linked from it ("predict the quality of newly created pages by using the quality
of pages previously linked from each content source", introduction).

- λ: each recrawl of a source reports the new links found and the seconds since the previous one;
  with a Gamma(α₀, β₀) prior the posterior is Gamma(α₀ + Σ links, β₀ + Σ seconds) (Poisson counts),
  so sources recrawled rarely keep a wide posterior around the prior mean.
- P, μ: a crawled page whose clicks were counted from age a₀ to age a gives c ~ Poisson(P·w),
  w = e^(−μa₀) − e^(−μa) (a₀ = 0: counted since creation; a₀ = the crawl delay: the clicks a
  search engine sees after indexing it, the seed's profit ``P_i(Δt)``). For fixed μ, a
  Gamma(α, β) prior on P integrates out in closed form (Gamma–Poisson), so μ gets an exact
  marginal likelihood on a log grid, times a log-normal prior; P's posterior is a Gamma mixture
  over that grid. Means and standard deviations are reported, so a source seen little stays near
  the pooled (empirical Bayes) prior with a large spread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import gammaln

ESTIMATE_COLUMNS = ["source_url", "lam", "lam_sd", "P", "P_sd", "mu", "mu_sd", "n_pages", "n_recrawls"]


@dataclass(frozen=True)
class LinkRatePrior:
    """Gamma prior on λ in links per second: mean ``shape/rate``, ``shape`` pseudo-links."""

    shape: float = 0.5
    rate: float = 0.5 * 3600.0  # a prior mean of one new link per hour

    @classmethod
    def with_mean(cls, mean: float, shape: float = 0.5) -> "LinkRatePrior":
        return cls(shape, shape / max(mean, 1e-12))


def link_rate_posterior(new_links, elapsed_s, prior: LinkRatePrior = LinkRatePrior()) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of λ from summed new links and summed seconds between recrawls."""
    a = prior.shape + np.asarray(new_links, dtype=float)
    b = prior.rate + np.asarray(elapsed_s, dtype=float)
    return a / b, np.sqrt(a) / b


class LinkRateEstimator:
    """λ kept up to date from the stream: one :meth:`update` per recrawl of a source."""

    def __init__(self, prior: LinkRatePrior = LinkRatePrior()) -> None:
        self.prior = prior
        self.links_: dict[str, float] = {}
        self.seconds_: dict[str, float] = {}

    def update(self, source: str, new_links: int, elapsed_s: float) -> None:
        self.links_[source] = self.links_.get(source, 0.0) + new_links
        self.seconds_[source] = self.seconds_.get(source, 0.0) + elapsed_s

    def estimate(self, source: str) -> tuple[float, float]:
        mean, sd = link_rate_posterior(self.links_.get(source, 0.0), self.seconds_.get(source, 0.0), self.prior)
        return float(mean), float(sd)


@dataclass(frozen=True)
class ProfitPrior:
    """Gamma prior on P (mean ``P_mean``, ``P_shape`` pseudo-pages) and log-normal prior on μ."""

    P_mean: float = 5.0
    P_shape: float = 1.0
    mu_median: float = np.log(2) / (12 * 3600.0)  # a half-life of 12 hours
    mu_log_sd: float = 1.5


MU_GRID = np.geomspace(np.log(2) / (30 * 86400.0), np.log(2) / 60.0, 64)  # half-lives 1 min .. 30 days


def fit_profit_decay(codes, ages_s, clicks, n_sources: int, prior: ProfitPrior = ProfitPrior(), mu_grid=MU_GRID,
                     start_ages_s=None) -> pd.DataFrame:
    """Posterior mean/sd of P and μ per source (``codes`` index sources 0..n_sources-1).

    One row per crawled page: its age at observation and its clicks counted since age
    ``start_ages_s`` (None: since creation).
    """
    codes = np.asarray(codes, dtype=np.int64)
    ages = np.asarray(ages_s, dtype=float)
    clicks = np.asarray(clicks, dtype=float)
    # (pages, grid) share of a page's clicks that fall in its counting window
    w = -np.expm1(-np.outer(ages, mu_grid))
    if start_ages_s is not None:
        w = w + np.expm1(-np.outer(np.asarray(start_ages_s, dtype=float), mu_grid))
    by_source = sparse.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(n_sources, len(codes)))
    W = by_source @ w
    CLW = by_source @ (clicks[:, None] * np.log(np.maximum(w, 1e-300)))
    C = np.bincount(codes, weights=clicks, minlength=n_sources)[:, None]
    n = np.bincount(codes, minlength=n_sources)
    alpha = prior.P_shape
    beta = prior.P_shape / prior.P_mean
    log_post = (
        CLW + gammaln(alpha + C) - (alpha + C) * np.log(beta + W)
        - 0.5 * ((np.log(mu_grid) - np.log(prior.mu_median)) / prior.mu_log_sd) ** 2
    )
    post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    log_mu = np.log(mu_grid)
    mu_log_mean = post @ log_mu
    mu_log_sd = np.sqrt(np.maximum(post @ log_mu**2 - mu_log_mean**2, 0.0))
    P_given_mu = (alpha + C) / (beta + W)
    P_mean = (post * P_given_mu).sum(axis=1)
    P_var = (post * ((alpha + C) / (beta + W) ** 2 + P_given_mu**2)).sum(axis=1) - P_mean**2
    mu = np.exp(mu_log_mean)
    return pd.DataFrame(
        {"P": P_mean, "P_sd": np.sqrt(np.maximum(P_var, 0.0)), "mu": mu, "mu_sd": mu * mu_log_sd, "n_pages": n}
    )


def pooled_prior(ages_s, clicks, base: ProfitPrior = ProfitPrior(), start_ages_s=None, mu_grid=MU_GRID) -> ProfitPrior:
    """Empirical Bayes: the prior of every source centred on the fit of all sources pooled."""
    if len(clicks) == 0:
        return base
    pooled = fit_profit_decay(np.zeros(len(clicks), dtype=np.int64), ages_s, clicks, 1, base, mu_grid,
                              start_ages_s=start_ages_s)
    return ProfitPrior(float(pooled.P[0]), base.P_shape, float(pooled.mu[0]), base.mu_log_sd)


def profit_fit_one_source(feedback: pd.DataFrame, prior: ProfitPrior, mu_grid=MU_GRID) -> pd.DataFrame:
    """:func:`fit_profit_decay` for one source's rows (the ``applyInPandas`` step of the Spark job)."""
    fit = fit_profit_decay(np.zeros(len(feedback), dtype=np.int64), feedback["age_s"], feedback["clicks"], 1, prior,
                           mu_grid, start_ages_s=feedback.get("start_age_s"))
    fit.insert(0, "source_url", feedback["source_url"].iloc[0])
    return fit


def combine_estimates(sources, recrawl_sums: pd.DataFrame, profit_fits: pd.DataFrame,
                      link_prior: LinkRatePrior, profit_prior: ProfitPrior, mu_grid=MU_GRID) -> pd.DataFrame:
    """One row per source in ``sources`` order from per-source sums and fits; the priors fill the gaps.

    ``recrawl_sums``: source_url, new_links, elapsed_s, n_recrawls. ``profit_fits``: source_url, P,
    P_sd, mu, mu_sd, n_pages (sources without feedback get the prior's own estimate).
    """
    index = pd.Index(list(sources), name="source_url")
    sums = recrawl_sums.set_index("source_url").reindex(index)
    lam, lam_sd = link_rate_posterior(sums["new_links"].fillna(0).to_numpy(float),
                                      sums["elapsed_s"].fillna(0).to_numpy(float), link_prior)
    no_data = fit_profit_decay([], [], [], 1, profit_prior, mu_grid).iloc[0]
    fits = profit_fits.set_index("source_url").reindex(index)
    for column in ("P", "P_sd", "mu", "mu_sd", "n_pages"):
        fits[column] = fits[column].fillna(no_data[column])
    out = pd.DataFrame({"source_url": index.to_numpy(), "lam": lam, "lam_sd": lam_sd})
    for column in ("P", "P_sd", "mu", "mu_sd"):
        out[column] = fits[column].to_numpy(float)
    out["n_pages"] = fits["n_pages"].to_numpy().astype(np.int64)
    out["n_recrawls"] = sums["n_recrawls"].fillna(0).to_numpy().astype(np.int64)
    return out[ESTIMATE_COLUMNS]


def estimate_sources(sources, recrawls: pd.DataFrame, feedback: pd.DataFrame,
                     link_prior: LinkRatePrior | None = None, profit_prior: ProfitPrior | None = None,
                     mu_grid=MU_GRID, base_prior: ProfitPrior = ProfitPrior()) -> pd.DataFrame:
    """Estimates for ``sources`` (urls) from recrawl and click-feedback frames, in memory.

    ``recrawls``: source_url, new_links, elapsed_s (one row per recrawl).
    ``feedback``: source_url, age_s, clicks (latest observation of each crawled page), optionally
    start_age_s (the age its clicks were counted from; absent: since creation).
    Priors default to the pooled data (empirical Bayes) around ``base_prior``; μ lives on ``mu_grid``
    (a profit signal's, :mod:`focuscrawl.ephemeral.feedback`).
    """
    sums = recrawls.groupby("source_url").agg(new_links=("new_links", "sum"), elapsed_s=("elapsed_s", "sum"),
                                              n_recrawls=("new_links", "size")).reset_index()
    if link_prior is None:
        total_s = float(sums["elapsed_s"].sum())
        link_prior = LinkRatePrior.with_mean(float(sums["new_links"].sum()) / total_s) if total_s > 0 else LinkRatePrior()
    index = pd.Index(list(sources))
    known = feedback[feedback["source_url"].isin(index)]
    ages = known["age_s"].to_numpy(dtype=float)
    clicks = known["clicks"].to_numpy(dtype=float)
    starts = known["start_age_s"].to_numpy(dtype=float) if "start_age_s" in known else None
    prior = profit_prior or pooled_prior(ages, clicks, base_prior, starts, mu_grid)
    seen = pd.Index(known["source_url"].unique())
    fits = fit_profit_decay(seen.get_indexer(known["source_url"]), ages, clicks, len(seen), prior, mu_grid,
                            start_ages_s=starts)
    fits.insert(0, "source_url", seen.to_numpy())
    return combine_estimates(sources, sums, fits, link_prior, prior, mu_grid)


def optimistic(estimates: pd.DataFrame, k: float) -> pd.DataFrame:
    """λ and P raised by ``k`` posterior standard deviations (k = 0: the posterior means)."""
    return estimates.assign(lam=estimates["lam"] + k * estimates["lam_sd"], P=estimates["P"] + k * estimates["P_sd"])
