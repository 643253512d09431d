"""Accuracy of content estimates (NRMSE against ground truth) and bootstrap intervals over runs.

Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*) reports the normalised root mean square error,
NRMSE(ω̂_x) = sqrt(E[(ω̂_x - ω_x)^2]) / ω_x, over repeated runs. Copy counts are heavy-tailed, so for
``copies`` the distribution is grouped into powers of two (1, 2-3, 4-7, ...) before comparing.

The units resampled here are independent runs (crawls) of an experiment. The interval of one
crawl's estimate, over its draws, is :func:`focuscrawl.graph.tables.replicate_estimates` and
:func:`~focuscrawl.graph.tables.summarise_replicates` (what the Spark job writes to ``graph_estimates``).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


def log2_bin(copies: int) -> str:
    low = 1 << (int(copies).bit_length() - 1)
    return str(low) if low == 1 else f"{low}-{2 * low - 1}"


def binned(distribution: dict, target: str) -> dict:
    """``copies`` distributions grouped into powers of two; label distributions unchanged."""
    if target != "copies":
        return distribution
    out: dict = {}
    for copies, share in distribution.items():
        key = log2_bin(copies)
        out[key] = out.get(key, 0.0) + share
    return out


def _errors(estimates: Iterable[dict], truth: dict) -> tuple[list, np.ndarray, np.ndarray]:
    keys = list(truth)
    est = np.array([[e.get(k, 0.0) for k in keys] for e in estimates])
    true = np.array([truth[k] for k in keys])
    return keys, est - true, true


def nrmse(estimates: Iterable[dict], truth: dict) -> dict:
    """NRMSE per value of ``truth`` over repeated estimates (a value an estimate lacks counts as 0)."""
    keys, err, true = _errors(estimates, truth)
    return dict(zip(keys, (np.sqrt((err**2).mean(axis=0)) / true).tolist()))


def relative_bias(estimates: Iterable[dict], truth: dict) -> dict:
    """(mean estimate - truth) / truth per value: NRMSE^2 = relative bias^2 + relative variance, so this
    tells an estimator whose error is bias (naive) from one whose error is variance (SCE, WCE)."""
    keys, err, true = _errors(estimates, truth)
    return dict(zip(keys, (err.mean(axis=0) / true).tolist()))


def run_bootstrap(values: np.ndarray, statistic, replicates: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """``(statistic on all runs, low, high)``: percentile interval of ``statistic`` over runs resampled with
    replacement. ``values`` has one row per independent run (crawl), so the runs are the units
    resampled; ``statistic`` maps a (runs x ...) array to a number."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    boot = np.array([statistic(values[rng.integers(0, n, n)]) for _ in range(replicates)])
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(statistic(values)), float(low), float(high)


def difference_interval(a: np.ndarray, b: np.ndarray, statistic, replicates: int = 1000, level: float = 0.95,
                        seed: int = 0, paired: bool = False) -> tuple[float, float, float]:
    """Interval of ``statistic(a) - statistic(b)`` over runs, resampled independently (or jointly when
    ``paired``: the same crawls seen by two estimators). An ordering is claimed only when it excludes 0."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(replicates):
        ia = rng.integers(0, len(a), len(a))
        ib = ia if paired else rng.integers(0, len(b), len(b))
        diffs.append(statistic(a[ia]) - statistic(b[ib]))
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(statistic(a) - statistic(b)), float(low), float(high)


def estimate_matrix(estimates: Iterable[dict], keys: list) -> np.ndarray:
    """Runs x values array of shares (a value an estimate lacks is 0)."""
    return np.array([[e.get(k, 0.0) for k in keys] for e in estimates], dtype=float).reshape(-1, len(keys))
