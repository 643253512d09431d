"""The seed's quality metric for crawling ephemeral new content.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), section 2: if page i, created at t_i, is crawled with delay Δt_i,
the *dynamic quality* ``Q_T(t)`` is the average profit per second gained in a time window of size T
(here the trailing window: pages crawled in (t−T, t]), and the *overall quality*
``Q = lim_{T→∞} Q_T(t)``, which does not depend on t and T. Profits are ``P_i(Δt_i)`` from the
ground truth, so this is computed on the evaluation path only.
"""

from __future__ import annotations

import numpy as np


def dynamic_quality(crawl_times, profits, window_s: float, at) -> np.ndarray:
    """``Q_T(t)`` for each t in ``at``: profit of pages crawled in (t − T, t], divided by T."""
    order = np.argsort(crawl_times, kind="stable")
    times = np.asarray(crawl_times, dtype=float)[order]
    cum = np.concatenate([[0.0], np.cumsum(np.asarray(profits, dtype=float)[order])])
    at = np.asarray(at, dtype=float)
    hi = np.searchsorted(times, at, side="right")
    lo = np.searchsorted(times, at - window_s, side="right")
    return (cum[hi] - cum[lo]) / window_s


def overall_quality(crawl_times, profits, start: float, end: float) -> float:
    """``Q``: Q_T over the whole window [start, end] (the longest T the run offers)."""
    if end <= start:
        raise ValueError(f"empty evaluation window [{start}, {end}]")
    return float(dynamic_quality(crawl_times, profits, end - start, [end])[0])
