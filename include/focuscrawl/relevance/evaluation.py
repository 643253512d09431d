"""Held-out evaluation of a page relevance model: a split that never shares a page, and intervals.

The split is by page identity (:attr:`ExamplePage.key`: the canonical URL, else a digest of the
text), stratified by class, so no page is in both the training and the evaluation set however often
it was declared. Figures on the held-out pages: the area under the ROC curve (the probability that a
random relevant page outscores a random other one) and the precision at the operating threshold,
each with a percentile bootstrap interval over the held-out pages (Efron and Tibshirani, "An
Introduction to the Bootstrap", 1993, chapter 13, the percentile interval).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from focuscrawl.relevance.examples import ExampleError, ExamplePage
from focuscrawl.relevance.models import MIN_PER_CLASS

# Fewest pages of a class for a held-out evaluation: MIN_PER_CLASS to fit on, one held out.
MIN_PAGES_PER_CLASS = MIN_PER_CLASS + 1


@dataclass(frozen=True)
class Split:
    train: tuple[ExamplePage, ...]
    held_out: tuple[ExamplePage, ...]

    def overlap(self) -> set[str]:
        """Page keys in both sets (always empty: the disjointness tests check it)."""
        return {p.key for p in self.train} & {p.key for p in self.held_out}


def split_pages(pages: Sequence[ExamplePage], held_out: float = 0.3, seed: int = 0) -> Split:
    """Stratified split of distinct pages: per class ``round(held_out * n)`` pages held out, at least one,
    leaving at least :data:`MIN_PER_CLASS` to train on."""
    keys = [p.key for p in pages]
    if len(set(keys)) != len(keys):
        raise ValueError("pages repeat a key; pass them through focuscrawl.relevance.examples.distinct first")
    rng = random.Random(seed)
    train, held = [], []
    for label in (1, 0):
        mine = sorted((p for p in pages if p.label == label), key=lambda p: p.key)
        if len(mine) < MIN_PAGES_PER_CLASS:
            role = "positives" if label else "negatives"
            raise ExampleError(f"profile.pages.{role}", f"{len(mine)} distinct {role[:-1]} example page(s); give at "
                                                        f"least {MIN_PAGES_PER_CLASS} ({MIN_PER_CLASS} to train on, "
                                                        "1 held out to measure the model)")
        rng.shuffle(mine)
        k = min(len(mine) - MIN_PER_CLASS, max(1, round(held_out * len(mine))))
        held += mine[:k]
        train += mine[k:]
    return Split(tuple(train), tuple(held))


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def to_json(self) -> dict:
        return {"value": _num(self.value), "low": _num(self.low), "high": _num(self.high)}

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), 6)


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC (ties count a half); NaN when one class is missing."""
    labels, scores = np.asarray(labels), np.asarray(scores, dtype=float)
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def precision_at(labels: np.ndarray, scores: np.ndarray, threshold: float) -> float:
    """Share of relevant pages among those scored at or above ``threshold``; NaN when none is."""
    chosen = np.asarray(scores) >= threshold
    return float(np.asarray(labels)[chosen].mean()) if chosen.any() else float("nan")


def bootstrap(labels, scores, statistic, rounds: int = 2000, seed: int = 0, level: float = 0.95) -> Interval:
    """``statistic(labels, scores)`` with its percentile bootstrap interval over the pages (resamples where
    it is undefined, NaN, are left out; an interval of NaN when all are)."""
    labels, scores = np.asarray(labels), np.asarray(scores, dtype=float)
    value = statistic(labels, scores)
    rng = np.random.default_rng(seed)
    n = len(labels)
    draws = []
    for _ in range(rounds if n else 0):
        idx = rng.integers(0, n, n)
        s = statistic(labels[idx], scores[idx])
        if not math.isnan(s):
            draws.append(s)
    if not draws:
        return Interval(value, float("nan"), float("nan"))
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return Interval(value, float(low), float(high))


def held_out_metrics(labels, scores, threshold: float, rounds: int = 2000, seed: int = 0) -> dict:
    """AUC and precision at ``threshold`` with 95 % bootstrap intervals, and the counts they rest on."""
    labels = np.asarray(labels)
    return {"auc": bootstrap(labels, scores, auc, rounds, seed).to_json(),
            "precision_at_threshold": bootstrap(labels, scores, lambda y, s: precision_at(y, s, threshold),
                                                rounds, seed).to_json(),
            "threshold": threshold, "pages": int(len(labels)), "relevant": int(labels.sum()),
            "bootstrap_rounds": rounds}


__all__ = ["Interval", "MIN_PAGES_PER_CLASS", "Split", "auc", "bootstrap", "held_out_metrics", "precision_at",
           "split_pages"]
