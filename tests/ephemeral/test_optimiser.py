"""The budget split of seed 001 (optimiser docstring) against brute force and its limits."""

import itertools

import numpy as np
import pytest

from focuscrawl.ephemeral.optimiser import allocate, expected_profit_rate


def random_instance(k, seed):
    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.001, 0.02, k)
    P = rng.uniform(1, 20, k)
    mu = np.log(2) / rng.uniform(600, 20000, k)
    return lam, P, mu


def interval_grid_best(lam, P, mu, budget, grid):
    """Brute force over recrawl intervals (every discovered page fetched, or the source left out)."""
    best = 0.0
    options = [np.concatenate([[0.0], 1.0 / grid])] * len(lam)
    rates = np.array(list(itertools.product(*options))).T  # (k, combos)
    cost = (rates + (rates > 0) * lam[:, None]).sum(axis=0)
    profit = sum(expected_profit_rate(lam[i], P[i], mu[i], rates[i]) for i in range(len(lam)))
    best = profit[cost <= budget].max()
    return best


@pytest.mark.parametrize("k,seed", [(2, 0), (3, 1), (4, 2), (5, 3)])
def test_never_worse_than_brute_force_over_intervals(k, seed):
    lam, P, mu = random_instance(k, seed)
    budget = float(lam.sum() * 1.5)
    grid = np.geomspace(1.0 / budget, 1e6, {2: 200, 3: 50, 4: 18, 5: 9}[k])
    got = allocate(lam, P, mu, np.full(k, np.inf), budget)
    assert got.cost <= budget * (1 + 1e-9)
    assert got.profit_rate.sum() >= interval_grid_best(lam, P, mu, budget, grid) - 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_matches_fine_brute_force_with_page_skipping(seed):
    """Two sources, grid over recrawl rate and share of pages fetched: equal to 0.5%."""
    lam, P, mu = random_instance(2, seed)
    budget = float(lam.sum() * 0.8)  # tight: skipping old pages pays
    rates = np.concatenate([[0.0], np.geomspace(1e-6, budget, 400)])
    shares = np.linspace(0, 1, 41)
    r, f = np.meshgrid(rates, shares, indexing="ij")
    r, s = r.ravel(), (f * lam[0]).ravel()
    cost0 = r + s
    profit0 = expected_profit_rate(lam[0], P[0], mu[0], r, s)
    r1, f1 = np.meshgrid(rates, shares, indexing="ij")
    r1, s1 = r1.ravel(), (f1 * lam[1]).ravel()
    profit1 = expected_profit_rate(lam[1], P[1], mu[1], r1, s1)
    # for each choice of source 0, the best affordable choice of source 1
    order = np.argsort(r1 + s1)
    best_so_far = np.maximum.accumulate(profit1[order])
    idx = np.searchsorted((r1 + s1)[order], budget - cost0, side="right") - 1
    total = np.where(idx >= 0, profit0 + best_so_far[np.maximum(idx, 0)], -np.inf)
    brute = total.max()
    got = allocate(lam, P, mu, np.full(2, np.inf), budget)
    assert got.cost == pytest.approx(budget, rel=1e-6)
    assert brute * (1 - 1e-9) <= got.profit_rate.sum() <= brute * 1.005


def test_single_source_known_value():
    """r + λ = N: r = 0.01/s, τ = 100 s, profit λP(1−e^(−μτ))/(μτ) = 0.1·(1−e^(−0.1))/0.1."""
    got = allocate([0.01], [10.0], [1e-3], [np.inf], 0.02)
    assert got.rate[0] == pytest.approx(0.01, rel=1e-6)
    assert got.interval[0] == pytest.approx(100.0, rel=1e-6)
    assert got.page_rate[0] == pytest.approx(0.01)
    assert got.profit_rate[0] == pytest.approx(0.0951625820, rel=1e-6)


def test_zero_budget_crawls_nothing():
    lam, P, mu = random_instance(4, 7)
    got = allocate(lam, P, mu, np.full(4, 1.0), 0.0)
    assert np.all(got.rate == 0) and np.all(got.page_rate == 0)
    assert got.profit_rate.sum() == 0
    assert np.all(np.isinf(got.interval))


def test_huge_budget_recrawls_as_often_as_politeness_allows():
    lam, P, mu = random_instance(4, 8)
    caps = np.array([1 / 60, 1 / 30, 1 / 600, 1 / 5])
    got = allocate(lam, P, mu, caps, 1e9)
    np.testing.assert_allclose(got.rate, caps)
    np.testing.assert_allclose(got.page_rate, lam)
    assert got.multiplier == 0.0


def test_politeness_cap_binds_one_source_and_budget_moves_to_others():
    lam, P, mu = np.array([0.01, 0.01]), np.array([10.0, 10.0]), np.array([1e-3, 1e-3])
    free = allocate(lam, P, mu, [np.inf, np.inf], 0.04)
    capped = allocate(lam, P, mu, [0.002, np.inf], 0.04)
    assert free.rate[0] == pytest.approx(free.rate[1])
    assert capped.rate[0] == pytest.approx(0.002)
    assert capped.rate[1] > free.rate[1]
    assert capped.cost == pytest.approx(0.04)


def test_worthless_source_is_not_recrawled():
    got = allocate([0.01, 0.01], [10.0, 1e-6], [1e-3, 1e-3], [np.inf, np.inf], 0.015)
    assert got.rate[1] == 0 and got.page_rate[1] == 0
    assert got.rate[0] > 0


def test_rejects_negative_budget():
    with pytest.raises(ValueError, match="budget"):
        allocate([0.01], [1.0], [1e-3], [1.0], -1.0)
