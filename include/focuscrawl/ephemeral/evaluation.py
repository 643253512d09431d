"""Held-out figures of the source estimates (each source's λ, P, μ), measured forward in time.

Seed 001 (*Timely crawling of high-quality ephemeral new content*) estimates each content source from its past
to plan its future: λ is the rate of new links a recrawl will find, and P, μ "predict the quality of newly created
pages by using the quality of pages previously linked from each content source" (introduction; section 2). A fit
is judged as it is used: the estimator (:func:`focuscrawl.ephemeral.estimate.estimate_sources`, the Spark job's
own, with its pooled priors) is fitted on what was known before a split time, the time by which
``1 - held_out`` of the recrawls had happened, and predicts what came after it:

- each later recrawl's new links, ``λ·elapsed``;
- each later page's profit (its clicks, or its discounted relevance: the project's profit signal,
  :mod:`focuscrawl.ephemeral.feedback`), ``P·w(μ)`` over the window its profit was counted in.

The figures are the mean absolute errors of those predictions, beside the same errors of the pooled fit (one λ,
P, μ for every source: the empirical-Bayes centre the per-source estimates shrink to), and the skill
``1 - MAE / MAE(pooled)``: above 0, the per-source estimates predict better than treating every source alike.
Its interval is a percentile bootstrap over the sources (a source's recrawls and pages are not independent, so
whole sources are resampled). Nothing after the split time reaches the fit: the recrawls before it, and each
page's profit as it was known then (``ProfitSignal.forward_split``). The figures are of the procedure on the
older part of the data, not of the stored fit, which saw all of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from focuscrawl.ephemeral.estimate import estimate_sources
from focuscrawl.ephemeral.feedback import ProfitSignal, epoch_micros

HELD_OUT = 0.2  # the share of the recrawls (the newest) whose time on is predicted
POOLED = "*"  # every source as one: the pooled fit's source


def _errors(estimates: pd.DataFrame, recrawls: pd.DataFrame, observations: pd.DataFrame) -> pd.DataFrame:
    """Per source: the summed absolute errors of ``estimates`` (indexed by source) on the held-out recrawls
    (``lam``) and pages (``profit``), and how many there were."""
    lam = estimates["lam"].reindex(recrawls["source_url"]).to_numpy(float)
    link_error = np.abs(recrawls["new_links"].to_numpy(float) - lam * recrawls["elapsed_s"].to_numpy(float))
    found = estimates.reindex(observations["source_url"])
    mu, start, age = (found["mu"].to_numpy(float), observations["start_age_s"].to_numpy(float),
                      observations["age_s"].to_numpy(float))
    window = np.exp(-mu * start) - np.exp(-mu * age)  # the share of P counted from age start to age (∞: 0 after)
    profit_error = np.abs(observations["clicks"].to_numpy(float) - found["P"].to_numpy(float) * window)
    per_source = [pd.DataFrame({"source_url": recrawls["source_url"].to_numpy(), "lam": link_error, "recrawls": 1}),
                  pd.DataFrame({"source_url": observations["source_url"].to_numpy(), "profit": profit_error,
                                "pages": 1})]
    return pd.concat(per_source).groupby("source_url").sum(min_count=1).fillna(0.0)


def _skill(fit: pd.DataFrame, pooled: pd.DataFrame, column: str, count: str, rounds: int, seed: int
           ) -> dict[str, float]:
    """MAE, the pooled fit's MAE and the skill with its bootstrap interval over the sources, for ``column``."""
    n = fit[count].to_numpy(float)
    if n.sum() == 0:
        return {}
    own, base = fit[column].to_numpy(float), pooled[column].to_numpy(float)
    figures = {f"{column}_mae": float(own.sum() / n.sum()), f"{column}_mae_pooled": float(base.sum() / n.sum())}
    if base.sum() == 0:  # the pooled fit was exact: no skill to measure
        return figures
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(n), (rounds, len(n)))
    with np.errstate(divide="ignore", invalid="ignore"):
        skills = 1.0 - own[draws].sum(axis=1) / base[draws].sum(axis=1)
    low, high = np.quantile(skills[np.isfinite(skills)], [0.025, 0.975])
    return {**figures, f"{column}_skill": float(1.0 - own.sum() / base.sum()), f"{column}_skill_low": float(low),
            f"{column}_skill_high": float(high)}


def held_out_figures(recrawls: pd.DataFrame, rows: pd.DataFrame, signal: ProfitSignal, held_out: float = HELD_OUT,
                     rounds: int = 2000, seed: int = 0) -> dict[str, float]:
    """The forward held-out figures of the source estimates (module docstring), as metrics: ``lam_mae``,
    ``lam_mae_pooled``, ``lam_skill`` (``_low``, ``_high``), the same for ``profit``, and ``held_out_recrawls``,
    ``held_out_pages``. ``recrawls``: the ``source_recrawls`` rows (``source_url``, ``recrawled_at``,
    ``elapsed_s``, ``new_links``); ``rows``: the rows of ``signal``'s table. Empty when there is nothing to fit
    on before the split or nothing after it."""
    if len(recrawls) < 2:
        return {}
    when = epoch_micros(recrawls["recrawled_at"])
    at = np.quantile(when, 1.0 - held_out)
    late = when >= at
    train_recrawls, test_recrawls = recrawls[~late], recrawls[late]
    train_rows, test_rows = signal.forward_split(rows, at)
    train, test = signal.observations(train_rows), signal.observations(test_rows)
    if train_recrawls.empty or (test_recrawls.empty and test.empty):
        return {}
    sources = sorted({*recrawls["source_url"], *train["source_url"], *test["source_url"]})
    estimates = estimate_sources(sources, train_recrawls, train, mu_grid=signal.mu_grid(),
                                 base_prior=signal.prior()).set_index("source_url")
    pooled = estimate_sources([POOLED], train_recrawls.assign(source_url=POOLED), train.assign(source_url=POOLED),
                              mu_grid=signal.mu_grid(), base_prior=signal.prior()).set_index("source_url")
    fit = _errors(estimates, test_recrawls, test)
    base = _errors(pd.DataFrame([pooled.loc[POOLED]] * len(sources), index=pd.Index(sources, name="source_url")),
                   test_recrawls, test).reindex(fit.index)
    fit = fit.reindex(columns=["lam", "recrawls", "profit", "pages"], fill_value=0.0)
    base = base.reindex(columns=fit.columns, fill_value=0.0)
    return {**_skill(fit, base, "lam", "recrawls", rounds, seed), **_skill(fit, base, "profit", "pages", rounds, seed),
            "held_out_recrawls": float(len(test_recrawls)), "held_out_pages": float(len(test))}


__all__ = ["HELD_OUT", "held_out_figures"]
