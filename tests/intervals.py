"""Intervals that tests assert from: over seeds or folds (Student t), or over users (bootstrap).

A test asserts an ordering or a level only when such an interval excludes the neutral value (zero
difference, chance AUC 0.5, the base rate), never from a single measured number.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from focuscrawl.experiments.ephemeral import t_interval  # mean and Student-t interval over seeds or folds

__all__ = ["bootstrap_interval", "t_interval"]


def bootstrap_interval(statistic: Callable[..., float], *arrays: Sequence, n_boot: int = 1000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float, float]:
    """``statistic(*arrays)`` and its percentile-bootstrap ``level`` interval, resampling rows (users) together."""
    arrays = [np.asarray(a) for a in arrays]
    n = len(arrays[0])
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        try:
            draws.append(statistic(*(a[idx] for a in arrays)))
        except ValueError:  # a resample with one class only has no AUC
            continue
    lo, hi = np.percentile(draws, [50 - level * 50, 50 + level * 50])
    return float(statistic(*arrays)), float(lo), float(hi)
