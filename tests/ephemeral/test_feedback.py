"""Profit signals (focuscrawl.ephemeral.feedback): the clicks or the pages' relevance feed the seed's estimator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from focuscrawl.ephemeral.estimate import MU_GRID, estimate_sources
from focuscrawl.ephemeral.feedback import ClicksSignal, RelevanceSignal, profit_signal
from focuscrawl.ephemeral.tables import schedule_sources

T0 = pd.Timestamp("2026-12-01", tz="UTC")
DAY = 86400.0


def pages(rows):
    """``source_pages`` rows: (source, page, published seconds after T0 or None, fetched, relevance)."""
    return pd.DataFrame({
        "source_url": [r[0] for r in rows], "page_url": [r[1] for r in rows],
        "published_at": [None if r[2] is None else T0 + pd.Timedelta(seconds=r[2]) for r in rows],
        "fetched_at": [T0 + pd.Timedelta(seconds=r[3]) for r in rows], "relevance": [r[4] for r in rows]})


def test_relevance_is_discounted_by_the_fetch_delay_with_the_half_life():
    signal = RelevanceSignal(half_life_s=DAY)
    obs = signal.observations(pages([("s", "a", 0, DAY, 0.8), ("s", "b", 0, 0, 0.5), ("s", "c", None, 3 * DAY, 0.6),
                                     ("s", "d", 0, 10, None)]))
    # a: a day late counts half; b: fetched at publication counts whole; c: no publication time counts
    # from its fetch; d: not scored (no page model yet) is no observation
    assert obs["clicks"].tolist() == pytest.approx([0.4, 0.5, 0.6])
    assert obs["start_age_s"].tolist() == pytest.approx([DAY, 0.0, 0.0])
    assert np.isinf(obs["age_s"]).all()
    assert signal.mu_grid() == pytest.approx([np.log(2) / DAY])


def test_clicks_take_the_latest_count_of_each_page():
    at = lambda s: T0 + pd.Timedelta(seconds=s)  # noqa: E731
    rows = pd.DataFrame({"source_url": ["s", "s", "s"], "page_url": ["a", "a", "b"],
                         "created_at": [at(0), at(0), at(100)], "counted_from": [at(50), at(50), None],
                         "observed_at": [at(1000), at(500), at(700)], "clicks": [7, 3, 2]})
    obs = ClicksSignal().observations(rows).sort_values("clicks")
    assert obs["clicks"].tolist() == [2.0, 7.0]
    assert obs["age_s"].tolist() == [600.0, 1000.0] and obs["start_age_s"].tolist() == [0.0, 50.0]
    assert ClicksSignal().mu_grid() is MU_GRID


def test_the_half_life_goes_only_to_the_signal_that_discounts_by_it():
    assert profit_signal("relevance", 3600.0).half_life_s == 3600.0
    assert isinstance(profit_signal("CLICKS", 3600.0), ClicksSignal)
    with pytest.raises(ValueError, match="half-life must be > 0"):
        RelevanceSignal(half_life_s=0.0).mu_grid()


def test_relevance_schedules_sources_by_their_rate_of_relevant_new_pages():
    """Two sources with the same new-link rate: the one whose pages are relevant gets the recrawls; μ is the
    stated freshness decay for every source, the seed's optimiser unchanged."""
    signal = RelevanceSignal(half_life_s=DAY)
    rng = np.random.default_rng(0)
    rows = [(src, f"{src}{i}", i * 600.0, i * 600.0 + 1800.0, float(rng.uniform(lo, lo + 0.2)))
            for src, lo in (("https://on.test/", 0.75), ("https://off.test/", 0.0)) for i in range(30)]
    sources = ["https://on.test/", "https://off.test/", "https://unseen.test/"]
    recrawls = pd.DataFrame({"source_url": sources * 10, "new_links": [3] * 30, "elapsed_s": [1800.0] * 30})
    est = estimate_sources(sources, recrawls, signal.observations(pages(rows)), mu_grid=signal.mu_grid(),
                           base_prior=signal.prior()).set_index("source_url")
    assert est.loc["https://on.test/", "P"] > 0.7 > 0.2 > est.loc["https://off.test/", "P"]
    assert est["mu"].to_numpy() == pytest.approx(np.full(3, np.log(2) / DAY))
    assert est.loc["https://unseen.test/", "n_pages"] == 0  # the pooled prior between the two
    assert est.loc["https://off.test/", "P"] < est.loc["https://unseen.test/", "P"] < est.loc["https://on.test/", "P"]
    plan = schedule_sources(est.reset_index(), ["on.test", "off.test", "unseen.test"], budget=0.01,
                            host_min_interval_s=60.0).set_index("source_url")
    assert plan.loc["https://on.test/", "recrawl_rate"] > plan.loc["https://off.test/", "recrawl_rate"]
