"""Per-source λ, P, μ of seed 001 recovered from simulated recrawls and click feedback."""

import numpy as np
import pandas as pd
import pytest

from focuscrawl.ephemeral.estimate import (LinkRateEstimator, LinkRatePrior, ProfitPrior, estimate_sources,
                                           link_rate_posterior)

TRUTH = {  # source: (λ per second, P clicks, μ per second)
    "a": (1 / 600, 20.0, np.log(2) / 3600),
    "b": (1 / 3000, 4.0, np.log(2) / 86400),
    "c": (1 / 120, 9.0, np.log(2) / (6 * 3600)),
}


def simulated(seed=0, pages=600, recrawls=400):
    rng = np.random.default_rng(seed)
    rec, fb = [], []
    for source, (lam, P, mu) in TRUTH.items():
        elapsed = rng.uniform(60, 1800, recrawls)
        rec.append(pd.DataFrame({"source_url": source, "elapsed_s": elapsed, "new_links": rng.poisson(lam * elapsed)}))
        ages = rng.uniform(0, 4 * 86400, pages)
        fb.append(pd.DataFrame({"source_url": source, "age_s": ages, "clicks": rng.poisson(P * -np.expm1(-mu * ages))}))
    return pd.concat(rec, ignore_index=True), pd.concat(fb, ignore_index=True)


def test_recovers_lambda_P_mu_within_their_uncertainty():
    recrawls, feedback = simulated()
    est = estimate_sources(list(TRUTH), recrawls, feedback).set_index("source_url")
    for source, (lam, P, mu) in TRUTH.items():
        row = est.loc[source]
        assert abs(row.lam - lam) < 3 * row.lam_sd + 0.05 * lam, source
        assert abs(row.P - P) < 3 * row.P_sd + 0.05 * P, source
        assert abs(row.mu - mu) < 3 * row.mu_sd + 0.1 * mu, source
        assert row.lam_sd < 0.15 * lam and row.P_sd < 0.1 * P and row.mu_sd < 0.25 * mu, source
    assert list(est.n_pages) == [600, 600, 600] and list(est.n_recrawls) == [400, 400, 400]


def test_source_seen_little_stays_near_the_pooled_prior_with_wide_uncertainty():
    recrawls, feedback = simulated()
    rare = pd.DataFrame({"source_url": ["new"], "age_s": [7200.0], "clicks": [3]})
    est = estimate_sources([*TRUTH, "new"], recrawls, pd.concat([feedback, rare])).set_index("source_url")
    new, known = est.loc["new"], est.loc["a"]
    assert new.P_sd / new.P > 5 * known.P_sd / known.P
    assert new.lam_sd > new.lam  # never recrawled: the Gamma(0.5, ·) prior, sd = mean·√2
    assert new.lam == pytest.approx(recrawls.new_links.sum() / recrawls.elapsed_s.sum())


def test_link_rate_posterior_is_the_gamma_update():
    mean, sd = link_rate_posterior(10, 1000.0, LinkRatePrior(shape=2.0, rate=100.0))
    assert mean == pytest.approx(12 / 1100)
    assert sd == pytest.approx(np.sqrt(12) / 1100)


def test_online_link_rate_equals_batch():
    online = LinkRateEstimator(LinkRatePrior(1.0, 600.0))
    for links, seconds in [(3, 600.0), (0, 300.0), (5, 900.0)]:
        online.update("s", links, seconds)
    assert online.estimate("s") == pytest.approx(tuple(link_rate_posterior(8, 1800.0, LinkRatePrior(1.0, 600.0))))
    assert online.estimate("unseen") == pytest.approx((1 / 600, 1 / 600))


def test_no_feedback_gives_the_prior():
    prior = ProfitPrior(P_mean=7.0, P_shape=2.0, mu_median=1e-4)
    est = estimate_sources(["x"], pd.DataFrame(columns=["source_url", "new_links", "elapsed_s"]),
                           pd.DataFrame(columns=["source_url", "age_s", "clicks"]), profit_prior=prior)
    assert est.P[0] == pytest.approx(7.0)
    assert est.P_sd[0] == pytest.approx(7.0 / np.sqrt(2.0), rel=1e-6)


def test_clicks_counted_from_the_crawl_recover_P_and_mu_and_ignoring_the_window_would_not():
    rng = np.random.default_rng(3)
    P, mu = 30.0, np.log(2) / 7200
    delay = rng.uniform(0, 4 * 3600, 800)  # crawled up to two half-lives late: much of P already gone
    ages = delay + rng.uniform(600, 2 * 86400, 800)
    clicks = rng.poisson(P * (np.exp(-mu * delay) - np.exp(-mu * ages)))
    feedback = pd.DataFrame({"source_url": "a", "age_s": ages, "start_age_s": delay, "clicks": clicks})
    recrawls = pd.DataFrame({"source_url": ["a"], "new_links": [10], "elapsed_s": [3600.0]})
    row = estimate_sources(["a"], recrawls, feedback).iloc[0]
    assert abs(row.P - P) < 3 * row.P_sd + 0.05 * P and abs(row.mu - mu) < 3 * row.mu_sd + 0.1 * mu
    naive = estimate_sources(["a"], recrawls, feedback.drop(columns="start_age_s")).iloc[0]
    assert naive.P < 0.8 * P  # read as clicks since creation, the clicks lost to the delay look like a smaller P
