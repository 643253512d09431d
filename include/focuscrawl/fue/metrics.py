"""Harvest ratio and extraction speed over time, from extraction events (pure functions).

Seed 000 (*Real-time focused extraction of social media users*) section II-A: the harvest ratio (HR) is "the number of
relevant users extracted divided by the total number of extracted users", a user being
relevant when the reference classifier's probability on the whole history exceeds 0.9; the
second metric is "the number of extracted users per unit of time". Figures 2-4 plot both
per method over the experiment, and the text compares methods by their ratio to RND.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Extraction:
    """One extracted user, judged: ``at`` is seconds since the experiment started (simulated clock)."""

    method: str
    user: str
    at: float
    relevant: bool
    on_target: bool | None = None  # the world's hidden label (evaluation side only); None when unknown


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """Cumulative state at the end of a time bin."""

    until: float
    extracted: int
    relevant: int

    @property
    def harvest_ratio(self) -> float:
        return self.relevant / self.extracted if self.extracted else 0.0


def harvest_ratio(events: Iterable[Extraction]) -> float:
    """Relevant / extracted (0 when nothing was extracted)."""
    n = hits = 0
    for e in events:
        n += 1
        hits += e.relevant
    return hits / n if n else 0.0


def by_method(events: Iterable[Extraction]) -> dict[str, list[Extraction]]:
    """Events grouped by method, each group in time order."""
    groups: dict[str, list[Extraction]] = defaultdict(list)
    for e in events:
        groups[e.method].append(e)
    return {m: sorted(es, key=lambda e: e.at) for m, es in sorted(groups.items())}


def curve(events: Sequence[Extraction], duration: float, bin_seconds: float = HOUR) -> list[CurvePoint]:
    """Cumulative extracted / relevant counts at the end of each bin of ``[0, duration]``."""
    bins = max(1, math.ceil(duration / bin_seconds))
    extracted = [0] * bins
    relevant = [0] * bins
    for e in events:
        b = min(max(int(e.at // bin_seconds), 0), bins - 1)
        extracted[b] += 1
        relevant[b] += e.relevant
    out, n, r = [], 0, 0
    for b in range(bins):
        n += extracted[b]
        r += relevant[b]
        out.append(CurvePoint(until=min((b + 1) * bin_seconds, duration), extracted=n, relevant=r))
    return out


def extracted_per_hour(events: Sequence[Extraction], duration: float, bin_seconds: float = HOUR) -> list[float]:
    """Extraction speed in each bin, as users per hour (the paper's Figure 2 as a rate)."""
    return rates_per_hour(curve(events, duration, bin_seconds))


def rates_per_hour(points: Sequence[CurvePoint]) -> list[float]:
    """Users extracted per hour in each bin of a cumulative curve."""
    rates, previous, start = [], 0, 0.0
    for p in points:
        width = p.until - start
        rates.append((p.extracted - previous) * HOUR / width if width > 0 else 0.0)
        previous, start = p.extracted, p.until
    return rates


def ratio_to_baseline(method_hr: Sequence[float], baseline_hr: Sequence[float]) -> list[float | None]:
    """Point-wise HR ratio to a baseline (RND); None where the baseline's HR is 0."""
    return [m / b if b else None for m, b in zip(method_hr, baseline_hr)]
