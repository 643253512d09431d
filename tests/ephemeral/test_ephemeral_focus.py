"""The sources loop on a page focus (``focuscrawl experiment ephemeral-focus``): the simulator's hidden topic
labels reach only the evaluation, the page scores are what the world's knobs say, the click path is the
committed seed-001 run's, and the experiment writes and rebuilds its files."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from focuscrawl.ephemeral.feedback import profit_signal
from focuscrawl.ephemeral.simulate import DAY, Run, WorldSpec, make_world, scored_pages
from focuscrawl.experiments.ephemeral_focus import POLICIES, main, measure, run_policies, seed_table


def test_the_page_focus_has_its_own_generator_so_the_worlds_sources_pages_and_clicks_do_not_move():
    base = make_world(WorldSpec(n_sources=10, days=2, seed=3))
    other = make_world(WorldSpec(n_sources=10, days=2, seed=3, relevant_share_mean=0.4, relevance_auc=0.6,
                                 relevant_share_concentration=5.0))
    for field in ("lam", "P", "mu", "page_source", "page_created", "page_profit"):
        assert np.array_equal(getattr(base, field), getattr(other, field)), field
    assert not np.array_equal(base.page_relevant, other.page_relevant)


def test_the_page_scores_have_the_stated_auc_and_are_calibrated():
    world = make_world(WorldSpec(n_sources=40, days=6, seed=0, relevant_share_mean=0.3, relevance_auc=0.8))
    labels, scores = world.page_relevant, world.page_relevance
    n = len(labels)
    assert n > 10_000
    # AUC's standard error at this size is below 0.01; the binormal model gives exactly the stated AUC
    assert roc_auc_score(labels, scores) == pytest.approx(0.8, abs=0.03)
    # calibrated against the base rate: the mean score is the stated share (Beta mean), within sampling error
    assert scores.mean() == pytest.approx(labels.mean(), abs=0.02)
    assert ((scores > 0) & (scores < 1)).all()


@pytest.mark.parametrize("bad", [dict(relevant_share_mean=0.0), dict(relevant_share_mean=1.0),
                                 dict(relevant_share_concentration=0.0), dict(relevance_auc=0.4), dict(relevance_auc=1.0)])
def test_a_page_focus_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        WorldSpec(**bad)


def test_the_crawler_reads_scores_never_the_hidden_label():
    world = make_world(WorldSpec(n_sources=8, days=1.5, seed=2))
    assert "relevant" not in " ".join(scored_pages(world, np.arange(5), world.page_created[:5]).columns).replace("relevance", "")
    shuffled = dataclasses.replace(world, page_relevant=np.random.default_rng(0).permutation(world.page_relevant))
    names = [name for name, *_ in POLICIES if name != "ORACLE/RELEVANCE"]  # the oracle is told the truth
    a = run_policies(world, 0.02, 86400.0, 6 * 3600.0, 0.0, names)
    b = run_policies(shuffled, 0.02, 86400.0, 6 * 3600.0, 0.0, names)
    for name in names:
        assert np.array_equal(a[name].pages, b[name].pages) and np.array_equal(a[name].crawl_times, b[name].crawl_times), name


def test_the_oracle_is_told_the_true_relevant_shares_and_the_freshness_decay():
    world = make_world(WorldSpec(n_sources=5, days=1, seed=1))
    truth = world.truth(np.arange(5), profit_signal("RELEVANCE", 3600.0))
    assert np.allclose(truth.P, world.relevant_share) and np.allclose(truth.mu, np.log(2) / 3600.0)
    assert np.allclose(world.truth(np.arange(5)).P, world.P)


def test_measure_counts_relevant_pages_fetched_within_the_window_per_budgeted_fetch():
    spec = WorldSpec(n_sources=1, days=1, seed=0)
    world = dataclasses.replace(make_world(spec), page_source=np.zeros(4, dtype=np.int64),
                                page_created=np.array([0.0, 0.0, 0.0, 0.0]), page_profit=np.ones(4),
                                page_relevant=np.array([True, True, False, True]), page_relevance=np.full(4, 0.5))
    # fetched at 100 s (relevant, in time), 5000 s (relevant, too late for a 3600 s window), 200 s (not
    # relevant), 50 s (relevant, in time, but before the evaluation starts at 60 s)
    run = Run(np.array([100.0, 5000.0, 200.0, 50.0]), np.zeros(4), 0, 4, 0, np.array([0, 1, 2, 3]), np.zeros((0, 3)))
    m = measure(world, run, budget=0.01, start=60.0, end=10_060.0, window_s=3600.0)
    assert m["relevant_fresh_per_fetch"] == pytest.approx(1 / 100) and m["relevant_per_fetch"] == pytest.approx(2 / 100)
    assert m["page_fetches"] == 3


def test_seed_table_pairs_by_seed_and_corrects_for_every_comparison():
    rows = [dict(world=w, budget=b, seed=s, policy=p, relevant_fresh_per_fetch=v + 0.001 * s, relevant_per_fetch=v,
                 click_quality=0.0, page_fetches=10)
            for w in ("model", "second") for b in (0.01, 0.02) for s in range(5)
            for p, v in (("LAGRANGE/RELEVANCE", 0.3), ("BFS", 0.1), ("LAGRANGE/CLICKS", 0.3))]
    table = seed_table(pd.DataFrame(rows))
    assert (table.comparisons == 8).all() and table.corrected_level.iloc[0] == pytest.approx(1 - 0.05 / 8)
    bfs = table[table.policy == "BFS"]
    assert np.allclose(bfs.ours_minus, 0.2) and bfs.significant.all()  # the same gap on every seed: no spread
    assert not table[table.policy == "LAGRANGE/CLICKS"].significant.any()


def test_main_writes_runs_record_table_plot_and_the_report_rebuilds_them(tmp_path):
    from focuscrawl.reports.ephemeral_focus import main as report

    assert main(["--output", str(tmp_path), "--days", "0.6", "--warmup-days", "0.1", "--sources", "6",
                 "--budgets", "0.01,0.005", "--seeds", "0,1", "--freshness-half-life-s", "7200"]) == 0
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert sorted(runs.policy.unique()) == sorted(name for name, *_ in POLICIES)
    assert set(runs.world) == {"model", "second"} and set(runs.seed) == {0, 1} and set(runs.budget) == {0.01, 0.005}
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["experiment"] == "ephemeral-focus" and record["parameters"]["window_hours"] == 2.0
    assert record["worlds"]["model"]["relevance_auc"] == WorldSpec.relevance_auc
    assert (tmp_path / "relevant_fresh.png").stat().st_size > 10_000
    before = (tmp_path / "relevant_fresh.md").read_text()
    (tmp_path / "relevant_fresh.md").unlink()
    assert report(["--run", str(tmp_path)]) == 0
    assert (tmp_path / "relevant_fresh.md").read_text() == before


def test_the_click_path_still_gives_the_committed_seed_001_figures():
    from pathlib import Path

    from focuscrawl.ephemeral.quality import overall_quality
    from focuscrawl.experiments.ephemeral import run_all

    results = Path(__file__).resolve().parents[2] / "bench" / "results" / "001-ephemeral"
    committed = pd.read_csv(results / "runs.csv")
    params = json.loads((results / "run.json").read_text())["parameters"]
    days = params["discovery_days"] + params["days"]
    spec = WorldSpec(n_sources=params["sources"], days=days, seed=0)
    runs, _, start = run_all(spec, params["budget"], ["LAGRANGE"], params["refit_hours"] * 3600,
                             discovery_days=params["discovery_days"], coverage=params["coverage"])
    q = overall_quality(runs["LAGRANGE"].crawl_times, runs["LAGRANGE"].profits, start + params["warmup_days"] * DAY, days * DAY)
    row = committed[(committed.world == "model") & (committed.seed == 0) & (committed.scheduler == "LAGRANGE")]
    assert q == pytest.approx(float(row.overall_quality.iloc[0]), rel=1e-9)
