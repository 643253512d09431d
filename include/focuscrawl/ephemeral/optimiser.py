"""Split one crawl budget between recrawling content sources and fetching the new pages they reveal.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), section 2 (profit model and quality metric) and the
introduction's "holistic crawl ordering" problem: divide N fetches per second between the
task of recrawling sources (to discover new pages) and the task of fetching those pages.

Derivation (Poisson arrivals, exponential decay)
------------------------------------------------
Source i links to new pages at Poisson rate λ_i. A page's future clicks when crawled Δ seconds
after its creation are P_i·e^(−μ_i·Δ) (the seed's profit ``P_i(Δt)``: total clicks P_i minus the
``P_i·(1−e^(−μ_i·Δt))`` already gathered). The source is recrawled every τ_i = 1/r_i seconds.

*Discovery delay.* Arrivals of a Poisson process inside one interval are uniform on it, so a page
found at a recrawl was created Δ ~ U(0, τ) before it (mean τ/2). Fetching it at once earns on
average ``P·∫_0^τ e^(−μΔ) dΔ / τ = P·(1−e^(−μτ))/(μτ)``; a recrawl finds λτ pages on average, so

    profit per second   F_i(τ) = λ_i·P_i·(1 − e^(−μ_i·τ_i)) / (μ_i·τ_i)
    fetches per second  C_i(τ) = 1/τ_i + λ_i          (recrawls + page fetches)

*Skipping.* Fetching only pages with Δ ≤ D (the still-valuable ones) uses s_i = λ_i·min(1, r_i·D)
page fetches per second and earns ``(λP/μ)·r·(1 − e^(−μD))``. In the variables (r, s) this is
``(λP/μ)·r·(1 − e^(−μ·s/(λr)))``, the perspective of a concave function, hence jointly concave:
the problem ``max Σ F_i  s.t.  Σ (r_i + s_i) ≤ N,  0 ≤ r_i ≤ r_max_i,  0 ≤ s_i ≤ λ_i`` is a concave
programme and its Lagrangian relaxation is exact.

*Multiplier.* With ν the value of one fetch, each source maximises ``F_i − ν·(r_i + s_i)`` alone:

- For fixed r, a page is worth fetching while its remaining profit P·e^(−μΔ) ≥ ν, i.e.
  Δ ≤ D* = ln(P/ν)/μ: pages whose expected remaining profit is below ν are skipped.
- For r ≤ 1/D* (interval longer than D*) the Lagrangian is linear in r with slope
  ``λ·C* − ν`` where ``C* = (P−ν)/μ − ν·D*``; if that is ≤ 0 the source is not worth recrawling.
- For r ≥ 1/D* every discovered page is fetched and the stationarity condition
  ``∂F/∂r = (λP/μ)·(1 − e^(−x)(1+x)) = ν`` with ``x = μτ = μ/r`` fixes the interval:
  ``1 − e^(−x)(1+x) = νμ/(λP)`` (solved with Lambert W: ``x = −W₋₁(−(1−c)/e) − 1``, c = νμ/(λP)).
- Politeness caps r at the host's allowed recrawl rate r_max; the cutoff D* still applies.

The total cost Σ(r_i + s_i) decreases in ν, so ν is found by bisection (in log ν) until the
budget is met; where a source is indifferent (flat Lagrangian) the two bracketing solutions are
mixed to spend the budget exactly. ν = 0 (budget never binding) recrawls every source as often as
politeness allows; an exhausted budget (ν ≥ max P) recrawls nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import lambertw


def expected_profit_rate(lam, P, mu, rate, page_rate=None) -> np.ndarray:
    """Expected profit per second ``(λP/μ)·r·(1 − e^(−μ·s/(λr)))`` (s = λ: every page fetched)."""
    lam, P, mu, rate = (np.asarray(a, dtype=float) for a in (lam, P, mu, rate))
    s = lam if page_rate is None else np.asarray(page_rate, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        window = np.where((rate > 0) & (lam > 0), s / (lam * rate), 0.0)  # fetched delay window D
        out = lam * P / mu * rate * -np.expm1(-mu * window)
    return np.where((rate > 0) & (lam > 0), out, 0.0)


def _solve_x(c: np.ndarray) -> np.ndarray:
    """x > 0 with ``1 − e^(−x)(1+x) = c`` for c in (0, 1).

    With y = 1 + x: ``y·e^(−y) = (1−c)/e``, so ``y = −W₋₁(−(1−c)/e)`` (Lambert W, lower branch),
    polished by two Newton steps; for tiny c (near the branch point, where both lose digits) the
    series ``c ≈ x²/2`` is exact to the precision that matters.
    """
    small = c < 1e-8
    cc = np.where(small, 0.5, c)
    x = -lambertw(-(1.0 - cc) / np.e, k=-1).real - 1.0
    for _ in range(2):
        x = x - (-np.expm1(-x) - x * np.exp(-x) - cc) / (x * np.exp(-x))
    return np.where(small, np.sqrt(2.0 * c), x)


def best_response(lam, P, mu, max_rate, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """Recrawl rate r_i and page-fetch rate s_i maximising ``F_i − ν·(r_i + s_i)`` per source."""
    lam, P, mu, max_rate = (np.asarray(a, dtype=float) for a in (lam, P, mu, max_rate))
    useful = (lam > 0) & (P > nu) & (max_rate > 0)
    if nu <= 0:
        rate = np.where(useful, max_rate, 0.0)
        return rate, np.where(useful, lam, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cutoff = np.where(useful, np.log(P / nu) / mu, 0.0)
        c_star = (P - nu) / mu - nu * cutoff
        on = useful & (lam * c_star - nu > 0)
        c = np.where(on, nu * mu / (lam * P), 0.5)
        rate = np.where(on, mu / _solve_x(c), 0.0)
    rate = np.minimum(rate, max_rate)
    page_rate = np.where(on, lam * np.minimum(1.0, rate * cutoff), 0.0)
    return rate, page_rate


@dataclass(frozen=True)
class Allocation:
    """The optimiser's answer: per-source recrawl and page-fetch rates, and the multiplier ν."""

    rate: np.ndarray  # recrawls per second (1/τ_i), 0 = not recrawled
    page_rate: np.ndarray  # page fetches per second spent on the source's new pages
    multiplier: float  # ν: expected profit of the marginal fetch; pages worth less are skipped
    profit_rate: np.ndarray  # expected profit per second per source

    @property
    def interval(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.rate > 0, 1.0 / self.rate, np.inf)

    @property
    def cost(self) -> float:
        return float(self.rate.sum() + self.page_rate.sum())

    def to_frame(self, source_ids) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "source_url": list(source_ids),
                "recrawl_rate": self.rate,
                "recrawl_interval_s": self.interval,
                "page_rate": self.page_rate,
                "expected_profit_rate": self.profit_rate,
                "skip_below": self.multiplier,
            }
        )


def allocate(lam, P, mu, max_rate, budget: float, iterations: int = 100) -> Allocation:
    """Optimal recrawl rates for ``budget`` fetches per second (module docstring: the derivation).

    ``max_rate`` is each source's politeness cap on recrawls per second (``np.inf`` for none).
    """
    lam, P, mu, max_rate = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (lam, P, mu, max_rate))
    if budget < 0:
        raise ValueError(f"budget must be >= 0 fetches per second, got {budget}")

    def solution(nu):
        r, s = best_response(lam, P, mu, max_rate, nu)
        return r, s, float(r.sum() + s.sum())

    r0, s0, cost0 = solution(0.0)
    if cost0 <= budget:
        return Allocation(r0, s0, 0.0, expected_profit_rate(lam, P, mu, r0, s0))
    log_lo, log_hi = np.log(1e-300), np.log(max(float(P.max(initial=0.0)), 1e-300)) + 1.0
    for _ in range(iterations):
        mid = 0.5 * (log_lo + log_hi)
        if solution(np.exp(mid))[2] > budget:
            log_lo = mid
        else:
            log_hi = mid
    r_hi, s_hi, cost_hi = solution(np.exp(log_hi))
    r_lo, s_lo, cost_lo = solution(np.exp(log_lo))
    # Mix the two bracketing solutions: both are Lagrangian-optimal at (almost) the same ν.
    t = 0.0 if cost_lo <= cost_hi else min(1.0, max(0.0, (budget - cost_hi) / (cost_lo - cost_hi)))
    r = r_hi + t * (r_lo - r_hi)
    s = s_hi + t * (s_lo - s_hi)
    return Allocation(r, s, float(np.exp(log_hi)), expected_profit_rate(lam, P, mu, r, s))
