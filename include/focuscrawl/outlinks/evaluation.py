"""Comparing a predicted ranking with the ground-truth ranking (seed 002, Section 7).

- Spearman's rho, ties resolved by the average rank (most targets are zero);
- Precision@k%: for k from 0% to 100%, the share of the top k% pages of the truth found in the
  top k% of the prediction; ties are resolved at random and the curve is averaged over five
  realisations; its area (1 for an identical ranking) summarises it.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

PERCENTS = np.arange(1, 101)


def spearman(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Spearman's rho with average ranks for ties; 0 when either ranking is constant (no information)."""
    truth, predicted = np.asarray(truth, float), np.asarray(predicted, float)
    if len(truth) < 2 or np.all(truth == truth[0]) or np.all(predicted == predicted[0]):
        return 0.0
    return float(spearmanr(truth, predicted).statistic)


def _random_tie_order(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices from highest to lowest value, ties in random order."""
    return np.lexsort((rng.random(len(values)), -values))


def precision_at_k_curve(truth: np.ndarray, predicted: np.ndarray, draws: int = 5, seed: int = 0,
                         percents: np.ndarray = PERCENTS) -> np.ndarray:
    """Precision@k% for each ``k`` in ``percents``, averaged over ``draws`` random tie resolutions."""
    truth, predicted = np.asarray(truth, float), np.asarray(predicted, float)
    n = len(truth)
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, np.ceil(percents / 100 * n).astype(int))
    curve = np.zeros(len(percents))
    for _ in range(draws):
        rank_true = np.empty(n, dtype=np.int64)
        rank_true[_random_tie_order(truth, rng)] = np.arange(n)
        by_prediction = _random_tie_order(predicted, rng)
        # hits[j] = how many of the prediction's first j+1 pages rank in the truth's top (j+1).
        in_top = rank_true[by_prediction]
        for i, size in enumerate(sizes):
            curve[i] += np.count_nonzero(in_top[:size] < size) / size
    return curve / draws


def curve_area(curve: np.ndarray, percents: np.ndarray = PERCENTS) -> float:
    """Area under a Precision@k% curve with k on [0, 1] (trapezoids from the origin's first point)."""
    x = np.concatenate([[0.0], percents / 100])
    y = np.concatenate([[curve[0]], curve])
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


def evaluate(truth: np.ndarray, predicted: np.ndarray, draws: int = 5, seed: int = 0) -> dict[str, float]:
    """``{"spearman", "pk_area"}`` of one ranking."""
    curve = precision_at_k_curve(truth, predicted, draws=draws, seed=seed)
    return {"spearman": spearman(truth, predicted), "pk_area": curve_area(curve)}
