"""``focuscrawl experiment ephemeral``: its files, the report rebuilding them, and the seed's claims on
two kinds of world, each claim an ordering whose interval over seeds excludes zero (issue 17)."""

import json

import numpy as np
import pandas as pd
import pytest

from focuscrawl.ephemeral.simulate import DAY, WorldSpec, click_feedback, discover_sources, make_world
from focuscrawl.experiments.ephemeral import main, seed_table, t_interval


def test_main_writes_run_json_tables_plots_and_the_report_rebuilds_them(tmp_path):
    from focuscrawl.reports.ephemeral import main as report

    assert main(["--output", str(tmp_path), "--days", "0.5", "--sources", "6", "--budget", "0.01", "--seeds", "0,1",
                 "--discovery-days", "0.25", "--warmup-days", "0.1", "--window-hours", "1"]) == 0
    for name in ("dynamic_quality_model.png", "dynamic_quality_second.png", "quality_by_world.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert sorted(runs.scheduler.unique()) == ["BFS", "FIXED_QUOTA", "LAGRANGE", "LAMBDA", "ORACLE"]
    assert set(runs.world) == {"model", "second"} and set(runs.seed) == {0, 1}
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["experiment"] == "ephemeral" and record["parameters"]["seeds"] == [0, 1]
    assert record["worlds"]["second"]["decay"] == "lognormal" and "commit" in record["code"]
    table = pd.read_csv(tmp_path / "overall_quality.csv")
    assert (table[table.scheduler == "ORACLE"].share_of_oracle == 1.0).all()
    before = (tmp_path / "overall_quality.md").read_text()
    (tmp_path / "overall_quality.md").unlink()
    assert report(["--run", str(tmp_path)]) == 0
    assert (tmp_path / "overall_quality.md").read_text() == before


def test_feedback_counts_only_clicks_after_the_crawl():
    world = make_world(WorldSpec(n_sources=3, days=1.0, seed=4))
    pages = np.arange(200)
    created = world.page_created[pages]
    now = created.max() + 3 * DAY
    # Crawled at creation: every click is seen; crawled a day late: only what came after the crawl.
    early = click_feedback(world, pages, created, now, np.random.default_rng(0))
    late = click_feedback(world, pages, created + DAY, now, np.random.default_rng(0))
    assert (early.start_age_s == 0).all() and np.allclose(late.start_age_s, DAY)
    src = world.page_source[pages]
    expected_late = world.page_profit[pages] * (world.survival(src, np.full(200, DAY)) - world.survival(src, now - created))
    assert late.clicks.sum() < early.clicks.sum()
    assert abs(late.clicks.sum() - expected_late.sum()) < 4 * np.sqrt(expected_late.sum())


def test_second_world_departs_from_the_optimisers_model():
    model, second = make_world(WorldSpec(n_sources=8, days=4, seed=1)), make_world(WorldSpec.second(n_sources=8, days=4, seed=1))
    # Same median click time, heavier tail: more of the clicks come after two half-lives.
    half = np.log(2) / model.mu
    src = np.arange(8)
    assert np.allclose(second.survival(src, half), 0.5) and np.allclose(model.survival(src, half), 0.5)
    assert (second.survival(src, 4 * half) > model.survival(src, 4 * half)).all()
    # Bursty, drifting arrivals: Pearson's dispersion of each source's hourly counts around the daily
    # cycle's expectation is 1 +- sqrt(2/n) for a Poisson process; the second world's is far above.
    def dispersion(world):
        hours = np.arange(96)
        expected = world.lam[:, None] * 3600 * (1 + world.spec.diurnal * np.sin(2 * np.pi * (hours + 0.5) * 3600 / DAY))[None, :]
        counts = np.zeros((8, 96))
        np.add.at(counts, (world.page_source, (world.page_created // 3600).astype(int)), 1)
        return float(((counts - expected) ** 2 / expected).mean()), np.sqrt(2 / counts.size)
    d_model, sd = dispersion(model)
    d_second, _ = dispersion(second)
    assert abs(d_model - 1) < 4 * sd and d_second > 1 + 10 * sd, (d_model, d_second, sd)
    with pytest.raises(ValueError, match="decay"):
        WorldSpec(decay="weibull")


def test_discovery_picks_the_sources_that_carry_the_profit():
    """The chosen sources carry more of the true profit than as many sources drawn at random (whose
    expected share is their count over 20): the 95% t-interval, over 4 world seeds, of the excess share
    excludes zero."""
    excess = []
    for seed in range(4):
        world = make_world(WorldSpec(n_sources=20, days=1.0, seed=seed))
        chosen = discover_sources(world, 0.05, DAY, coverage=0.8)
        truth_profit = np.bincount(world.page_source, weights=world.page_profit, minlength=20)
        assert 0 < len(chosen) < 20 and chosen.coverage.iloc[-1] >= 0.8
        excess.append(truth_profit[chosen.source].sum() / truth_profit.sum() - len(chosen) / 20)
    mean, low, high = t_interval(excess)
    assert low > 0, (mean, low, high, excess)


def test_seed_table_claims_only_intervals_that_exclude_zero():
    runs = pd.DataFrame([dict(world="w", seed=s, scheduler=n, overall_quality=q, recrawls=0, page_fetches=0, sources_chosen=3)
                         for s in range(4) for n, q in (("LAGRANGE", 1.0 + 0.01 * s), ("BFS", 0.5 + 0.02 * s), ("LAMBDA", 1.0 + 0.2 * (s % 2) - 0.1), ("ORACLE", 2.0))])
    t = seed_table(runs).set_index("scheduler")
    assert t.loc["BFS", "significant"] and not t.loc["LAMBDA", "significant"]
    assert t_interval([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)


@pytest.mark.slow
def test_the_oracle_bounds_ours_over_seeds(tmp_path):
    """A claim as a claim: over 5 seeds of the model world (20 candidate sources, 1 day of history,
    3 days crawled at 0.0125 fetches/s, measured 2026-12-01), the oracle beats ours by a paired
    difference whose 95% interval excludes zero. At this size no ordering among the non-oracle
    policies is significant (ours minus FIXED_QUOTA +0.024 [-0.005, +0.054]); the committed
    40-source run (README) supports ours > FIXED_QUOTA; nothing on the second world is significant."""
    assert main(["--output", str(tmp_path), "--worlds", "model", "--seeds", "0,1,2,3,4", "--sources", "20", "--days", "3",
                 "--budget", "0.0125", "--discovery-days", "1", "--warmup-days", "1"]) == 0
    t = pd.read_csv(tmp_path / "overall_quality.csv").set_index("scheduler")
    assert t.loc["ORACLE", "diff_high"] < 0, t.loc["ORACLE", ["ours_minus", "diff_low", "diff_high"]].tolist()
