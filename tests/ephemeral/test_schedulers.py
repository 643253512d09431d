"""Every registered crawl policy of seed 001 honours the protocol; ours wins on a simulated world."""

import numpy as np
import pandas as pd
import pytest

from focuscrawl.ephemeral.quality import overall_quality
from focuscrawl.ephemeral.schedulers import SCHEDULERS, Action, ProfitFrontier
from focuscrawl.ephemeral.simulate import DAY, WorldSpec, make_world, simulate

TINY = WorldSpec(n_sources=5, days=0.5, seed=3)


def test_registry_has_the_issue_schedulers():
    assert SCHEDULERS.names() == ["BFS", "FIXED_QUOTA", "LAGRANGE", "LAMBDA", "ORACLE"]


@pytest.mark.parametrize("name", SCHEDULERS.names())
def test_contract_deterministic_budget_respected_no_page_twice(name):
    world = make_world(TINY)
    budget = 0.01
    runs = [simulate(world, SCHEDULERS.create(name, budget=budget, max_rate=world.max_rate), budget, seed=1)
            for _ in range(2)]
    a, b = runs
    np.testing.assert_array_equal(a.crawl_times, b.crawl_times)
    np.testing.assert_array_equal(a.profits, b.profits)
    assert a.recrawls + a.page_fetches + a.idle == int(world.horizon_s * budget)
    assert len(a.profits) == a.page_fetches > 0
    assert a.profits.sum() <= world.page_profit.sum()


def test_profit_frontier_serves_newest_batch_and_scores_the_uniform_creation():
    frontier = ProfitFrontier(2)
    frontier.P[:] = [10.0, 3.0]
    frontier.mu[:] = [1e-3, 1e-3]
    frontier.add(0, [1, 2], now=0.0, window_s=100.0)
    frontier.add(0, [3], now=500.0, window_s=500.0)
    frontier.add(1, [4], now=900.0, window_s=0.0)
    assert frontier.score(0, 1000.0) == pytest.approx(10 * np.exp(-0.5) * (1 - np.exp(-0.5)) / 0.5)
    # source 0 newest batch: 10·e^(−0.5)·0.787 = 4.77; older batch: 10·e^(−1)·0.952 = 3.50;
    # source 1: 3·e^(−0.1) = 2.71. Within a batch pages are equal (served last in, first out).
    assert frontier.pop_best(1000.0) == (0, 3)
    assert frontier.pop_best(1000.0, skip_below=3.6) is None
    assert [frontier.pop_best(1000.0) for _ in range(4)] == [(0, 2), (0, 1), (1, 4), None]


def test_breadth_first_is_fifo_over_recrawls_and_pages():
    policy = SCHEDULERS.create("BFS", budget=1.0, max_rate=np.array([1.0, 1.0]))
    assert policy.next_action(1.0) == Action("recrawl", 0)
    policy.discovered(0, [7, 8], 1.0, 1.0)
    assert policy.next_action(2.0) == Action("recrawl", 1)
    policy.discovered(1, [9], 2.0, 2.0)
    assert [policy.next_action(t) for t in (3.0, 4.0, 5.0, 6.0)] == [
        Action("page", 0, 7), Action("page", 0, 8), Action("recrawl", 0), Action("page", 1, 9)]


def test_lagrange_skips_pages_worth_less_than_the_multiplier():
    est = pd.DataFrame({"source_url": ["s"], "lam": [0.01], "lam_sd": [0.0], "P": [10.0], "P_sd": [0.0],
                        "mu": [1e-3], "mu_sd": [0.0]})
    policy = SCHEDULERS.create("LAGRANGE", budget=0.012, max_rate=np.array([1.0])).fit(est)
    assert 0 < policy.skip_below_ < 10.0
    policy.last_recrawl_[0] = 1e5  # not due: only pages can be fetched
    policy.discovered(0, [1], now=0.0, window_s=10.0)  # 10·e^(−100): worthless by now
    assert policy.next_action(1e5) is None
    policy.discovered(0, [2], now=1e5, window_s=10.0)
    assert policy.next_action(1e5) == Action("page", 0, 2)


def test_ours_beats_every_baseline_on_a_small_world():
    world = make_world(WorldSpec(n_sources=20, days=2.5, seed=2))
    budget = 0.0125  # fewer fetches than new pages: both recrawls and pages must be chosen
    quality = {}
    for name in SCHEDULERS.names():
        run = simulate(world, SCHEDULERS.create(name, budget=budget, max_rate=world.max_rate), budget, seed=2)
        quality[name] = overall_quality(run.crawl_times, run.profits, DAY, world.horizon_s)
    assert quality["LAGRANGE"] > max(quality[n] for n in ("BFS", "FIXED_QUOTA", "LAMBDA")), quality
    assert quality["LAGRANGE"] < quality["ORACLE"], quality
