"""The FUE report: harvest ratio over time, users per hour, ratio to RND, per day, and the paper's verdicts.

Seed 000 (*Real-time focused extraction of social media users*) section IV-F, Figures 2-4: every method's harvest ratio over
the experiment, the extraction speed, and the comparison with RND "during the first day" and
"on the last day". The same tables come from a run's events in memory or, after the fact, from
its rows in the ``fue_extractions`` Delta table (:func:`events_from_table`).

Ratios to RND are given raw (empty while RND has found no relevant user) and add-one smoothed
(:func:`smoothed_ratio`), which is defined from the first hour on.

Intervals: :func:`intervals` gives every method's harvest ratio, its ratio to RND and
the difference from RND per fold and pooled over folds, by reference verdict (the paper's
measure) and by the world's hidden label (the truth), with 95% intervals from a smoothed
bootstrap over extracted users: each (fold, method)'s rate is drawn from its Jeffreys posterior
Beta(r + 1/2, n - r + 1/2), i.e. the binomial bootstrap of the extracted users with half a hit and
half a miss added, so that a method with 0 relevant users still has an interval wider than [0, 0].

Significance (which difference from RND the tables mark): within each fold, a two-sided p-value of the
difference from the same draws, then Holm's step-down correction over every comparison of that fold
(every method against RND, by both measures), at family-wise level 5% (S. Holm, "A simple sequentially
rejective multiple test procedure", Scandinavian Journal of Statistics 6(2), 1979). Folds are separate
worlds, and an interval of draws summed over folds speaks only of variation among the users of these
worlds, not between worlds; so a pooled difference is marked only when it holds, Holm-corrected, in
every fold (an intersection-union test, whose level needs no further correction), and the pooled
table says for each fold whether it holds. The pooled interval is shown, labelled as user-level.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from focuscrawl.fue.metrics import HOUR, Extraction, by_method, curve, rates_per_hour

BASELINE = "RND"
DAY = 86400.0

# Section IV-F: "The most promising strategies are HCP, N06, HAC and N00 ... On the other hand,
# HAS, N12, N18, LAC, LAS and LCP can be discarded."
PAPER_PROMISING = ("HCP", "N06", "HAC", "N00")
PAPER_DISCARDED = ("HAS", "N12", "N18", "LAC", "LAS", "LCP")


def smoothed_ratio(relevant, extracted, base_relevant, base_extracted):
    """Harvest ratio over the baseline's, each add-one (Laplace) smoothed: ``(r+1)/(n+2)``.

    Defined even when the baseline found no relevant user, and close to the raw ratio once both
    found a few (with r=9 of 179 against 0 of 183 it is 10/181 over 1/185 = 10.2).
    """
    return ((relevant + 1) / (extracted + 2)) / ((base_relevant + 1) / (base_extracted + 2))


def with_ratio(frame: pd.DataFrame, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """``frame`` (per method, or per method and ``by``) with the raw and smoothed ratio to RND.

    The raw ratio is NaN where RND's harvest ratio is 0; both are NaN when RND was not run.
    """
    base = frame[frame.method == BASELINE][[*by, "relevant", "extracted"]]
    base = base.rename(columns={"relevant": "_r0", "extracted": "_n0"}).assign(_key=0)
    m = frame.assign(_key=0).merge(base, on=[*by, "_key"], how="left")
    hr, base_hr = m.relevant / m.extracted.where(m.extracted > 0), m._r0 / m._n0.where(m._n0 > 0)
    raw = hr.fillna(0.0) / base_hr.where(base_hr > 0)
    return m.drop(columns=["_key", "_r0", "_n0"]).assign(
        **{f"ratio_to_{BASELINE}": raw.round(3),
           f"ratio_to_{BASELINE}_smoothed": smoothed_ratio(m.relevant, m.extracted, m._r0, m._n0).round(3)})


def baseline_note(curve_frame: pd.DataFrame) -> str:
    """What the ratio panel says about its baseline (shown in the panel, so it is never blank)."""
    base = curve_frame[curve_frame.method == BASELINE].sort_values("hours")
    if base.empty:
        return f"{BASELINE} was not run: no baseline to compare with"
    found = base[base.relevant > 0]
    last = base.iloc[-1]
    if found.empty:
        return (f"{BASELINE} found none yet (0 relevant of {int(last.extracted)} extracted); "
                "ratios add-one smoothed, (r+1)/(n+2) over RND's")
    return f"{BASELINE} found its first relevant user by hour {found.hours.iloc[0]:g}; add-one smoothed"


def paper_verdict(method: str) -> str:
    """``promising`` / ``discarded`` as section IV-F judged the method; empty for the others."""
    return "promising" if method in PAPER_PROMISING else "discarded" if method in PAPER_DISCARDED else ""


def paper_agreement(harvest: dict[str, float]) -> float | None:
    """Share of (promising, discarded) method pairs, both run, where the promising one has the higher
    harvest ratio (ties count half): 1.0 ranks as the paper did, 0.5 is no better than chance."""
    pairs = [(harvest[p], harvest[d]) for p in PAPER_PROMISING if p in harvest
             for d in PAPER_DISCARDED if d in harvest]
    if not pairs:
        return None
    return sum(1.0 if p > d else 0.5 if p == d else 0.0 for p, d in pairs) / len(pairs)


@dataclass
class FueReport:
    summary: pd.DataFrame   # one row per method, best harvest ratio first
    curve: pd.DataFrame     # per method and bin (cumulative)
    days: pd.DataFrame      # per method and simulated day: that day's and the cumulative harvest ratio
    agreement: float | None

    def markdown(self) -> str:
        parts = [self.summary.to_markdown(index=False)]
        if self.agreement is not None:
            parts.append(f"Agreement with the paper's verdicts (section IV-F): {self.agreement:.2f} of the "
                         "(promising, discarded) method pairs ordered as the paper found (1.0 = all, 0.5 = chance).")
        if self.days.day.nunique() > 1:
            wide = self.days.pivot(index="method", columns="day", values=f"ratio_to_{BASELINE}_smoothed")
            wide.columns = [f"day {d}" for d in wide.columns]
            parts.append(f"Cumulative harvest ratio / {BASELINE} (smoothed) at the end of each simulated day:\n\n"
                         + wide.sort_values(wide.columns[-1], ascending=False).to_markdown())
        return "\n\n".join(parts) + "\n"


def build(events: Sequence[Extraction], duration: float, bin_seconds: float = HOUR) -> FueReport:
    """The report's tables from judged extractions of a run of ``duration`` simulated seconds."""
    groups = by_method(events)
    points, days = [], []
    for m, es in groups.items():
        hourly = curve(es, duration, bin_seconds)
        for p, rate in zip(hourly, rates_per_hour(hourly)):
            points.append({"method": m, "hours": p.until / HOUR, "extracted": p.extracted, "relevant": p.relevant,
                           "harvest_ratio": p.harvest_ratio, "users_per_hour": rate})
        previous = (0, 0)
        for d, p in enumerate(curve(es, duration, DAY), start=1):
            n, r = p.extracted - previous[0], p.relevant - previous[1]
            days.append({"method": m, "day": d, "extracted_that_day": n, "relevant_that_day": r,
                         "harvest_ratio_that_day": r / n if n else 0.0, "extracted": p.extracted,
                         "relevant": p.relevant, "harvest_ratio": p.harvest_ratio})
            previous = (p.extracted, p.relevant)
    curve_frame = with_ratio(pd.DataFrame(points), ("hours",))
    day_frame = with_ratio(pd.DataFrame(days), ("day",))
    first_day = day_frame[day_frame.day == 1].set_index("method")[f"ratio_to_{BASELINE}"]
    # The last bin of every method ends at ``duration``: its ratios to RND are the run's.
    last = curve_frame.sort_values("hours").groupby("method").tail(1)
    summary = pd.DataFrame({
        "method": last.method, "paper_verdict": last.method.map(paper_verdict), "extracted": last.extracted,
        "relevant": last.relevant, "harvest_ratio": last.harvest_ratio.round(4),
        "users_per_hour": (last.extracted * HOUR / duration).round(2),
        f"ratio_to_{BASELINE}": last[f"ratio_to_{BASELINE}"],
        f"ratio_to_{BASELINE}_smoothed": last[f"ratio_to_{BASELINE}_smoothed"]})
    summary[f"ratio_to_{BASELINE}_day1"] = summary.method.map(first_day)
    if events and all(e.on_target is not None for e in events):
        hidden = {m: sum(e.on_target for e in es) for m, es in groups.items()}
        summary["on_target"] = summary.method.map(hidden)
        summary["harvest_ratio_hidden"] = (summary.on_target / summary.extracted.where(summary.extracted > 0)).round(4)
    summary = summary.sort_values("harvest_ratio", ascending=False, ignore_index=True)
    agreement = paper_agreement(dict(zip(summary.method, summary.harvest_ratio)))
    return FueReport(summary, curve_frame, day_frame, agreement)


def plot(curve_frame: pd.DataFrame, path: Path) -> Path:
    """Figures 2-4 in one: harvest ratio, its (smoothed) ratio to RND and users per hour over time.

    The paper's promising methods are drawn solid, its discarded ones dashed, the others dash-dotted.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = sorted(curve_frame.method.unique())
    colours = plt.get_cmap("tab20")
    styles = {"promising": "-", "discarded": "--", "": "-."}
    fig, axes = plt.subplots(1, 3, figsize=(19, 5.5))
    for i, m in enumerate(methods):
        g = curve_frame[curve_frame.method == m].sort_values("hours")
        kw = {"label": m, "color": colours(i % 20), "ls": styles[paper_verdict(m)], "lw": 2.2 if m == BASELINE else 1.4}
        axes[0].plot(g.hours, g.harvest_ratio, **kw)
        if g[f"ratio_to_{BASELINE}_smoothed"].notna().any():
            axes[1].plot(g.hours, g[f"ratio_to_{BASELINE}_smoothed"], **kw)
        axes[2].plot(g.hours, g.users_per_hour, **kw)
    axes[1].axhline(1.0, color="grey", ls=":", lw=1)
    titles = ("harvest ratio (cumulative)",
              f"harvest ratio / {BASELINE}\n" + textwrap.fill(baseline_note(curve_frame), 70),
              "users extracted per hour")
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("simulated hours")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("relevant / extracted")
    axes[0].legend(fontsize=8, ncol=2, title="solid: paper's promising, dashed: discarded", title_fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(report: FueReport, out: Path) -> Path:
    """``fue_table.{csv,md}``, ``fue_curve.csv``, ``fue_days.csv`` and ``harvest_ratio.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    report.summary.to_csv(out / "fue_table.csv", index=False)
    report.curve.to_csv(out / "fue_curve.csv", index=False)
    report.days.to_csv(out / "fue_days.csv", index=False)
    (out / "fue_table.md").write_text(report.markdown())
    return plot(report.curve, out / "harvest_ratio.png")


# -- ground truth, intervals, sensitivity ---------------------------------------------------------

MEASURES = {"reference verdict": "relevant", "hidden label": "on_target"}


def user_number(name: str) -> int | None:
    """A world user's index from its name (``adj_noun_<i>``), None for a foreign name."""
    try:
        return int(name.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return None


def with_hidden_labels(events: Sequence[Extraction], labels) -> list[Extraction]:
    """Events with the world's hidden label of each extracted user joined in (evaluation side)."""
    out = []
    for e in events:
        i = user_number(e.user)
        out.append(replace(e, on_target=bool(labels[i]) if i is not None and 0 <= i < len(labels) else None))
    return out


def _counts(events: Sequence[Extraction], attr: str) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = {}
    for e in events:
        c = out.setdefault(e.method, [0, 0])
        c[0] += 1
        c[1] += int(bool(getattr(e, attr)))
    return {m: (n, r) for m, (n, r) in out.items()}


ALPHA = 0.05


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (same order): the i-th smallest times ``m - i``, made monotone, capped at 1.
    A hypothesis is rejected at family-wise level ``a`` when its adjusted p-value is at most ``a``."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    if not m:
        return p
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return out


def two_sided_p(diff: np.ndarray) -> float:
    """Two-sided p-value of "no difference" from draws of a difference: twice the smaller tail share,
    add-one so that no finite number of draws claims p = 0."""
    n = len(diff)
    return float(min(1.0, 2 * (min((diff <= 0).sum(), (diff >= 0).sum()) + 1) / (n + 1)))


def mark_significance(frame: pd.DataFrame, scope_col: str = "scope", alpha: float = ALPHA) -> pd.DataFrame:
    """``p_holm`` and ``significant`` (``higher``/``lower``/``no``) of every row with a ``p_value``: Holm over
    all rows of each fold scope; a ``pooled`` row holds when its measure and method hold the same way in
    every fold, with p_holm the largest of the folds' (see the module docstring). ``per_fold`` says how
    each fold judged it."""
    frame = frame.copy()
    frame["p_holm"] = np.nan
    frame["significant"] = ""
    tested = frame.p_value.notna()
    folds = [s for s in dict.fromkeys(frame[scope_col]) if s != "pooled"]
    for scope in folds:
        rows = tested & (frame[scope_col] == scope)
        frame.loc[rows, "p_holm"] = holm(frame.loc[rows, "p_value"].to_numpy())
    fold_rows = tested & frame[scope_col].isin(folds)
    frame.loc[fold_rows, "significant"] = np.where(
        frame.loc[fold_rows, "p_holm"] > alpha, "no", np.where(frame.loc[fold_rows, "diff"] > 0, "higher", "lower"))
    keys = [c for c in ("measure", "method") if c in frame]
    by_key = {k: g for k, g in frame[fold_rows].groupby(keys)}
    per_fold = []
    for i, row in frame.iterrows():
        g = by_key.get(tuple(row[k] for k in keys))
        per_fold.append("" if g is None else ", ".join(f"{s}: {v}" for s, v in zip(g[scope_col], g.significant)))
        if row[scope_col] == "pooled" and tested[i]:
            verdicts = set(g.significant) if g is not None else set()
            frame.at[i, "p_holm"] = g.p_holm.max() if g is not None else 1.0
            frame.at[i, "significant"] = verdicts.pop() if len(verdicts) == 1 and len(g) == len(folds) else "no"
    frame["per_fold"] = per_fold
    return frame


def intervals(folds: Sequence[tuple[int, Sequence[Extraction]]], n_boot: int = 2000, seed: int = 0,
              level: float = 0.95) -> pd.DataFrame:
    """Per fold and pooled: extracted, relevant, harvest ratio, ratio to RND and HR - HR(RND), each with a
    ``level`` percentile-bootstrap interval, for both measures (see the module docstring).

    Each (fold, method)'s relevant count is drawn as ``n x Beta(r + 1/2, n - r + 1/2)`` (the plain
    bootstrap, Binomial(n, r/n), collapses to [0, 0] when r = 0); pooled intervals sum the same draws
    over folds, so they are user-level only (they say nothing of the variation between worlds).
    ``p_value``: two-sided, of the difference from RND, from the draws; ``significant``, ``p_holm`` and
    ``per_fold``: :func:`mark_significance` (Holm within each fold; pooled = holds in every fold).
    """
    rng = np.random.default_rng(seed)
    lo_q, hi_q = 50 * (1 - level), 100 - 50 * (1 - level)
    rows = []
    folds = sorted(folds, key=lambda f: f[0])
    for measure, attr in MEASURES.items():
        counts = {f: _counts(es, attr) for f, es in folds}
        if attr == "on_target" and any(getattr(e, attr) is None for _, es in folds for e in es):
            continue
        methods = sorted({m for c in counts.values() for m in c})
        draws = {(f, m): n * rng.beta(r + 0.5, n - r + 0.5, size=n_boot) if n else np.zeros(n_boot)
                 for f in sorted(counts) for m in methods for n, r in [counts[f].get(m, (0, 0))]}
        scopes = [(f"fold {f}", [f]) for f in sorted(counts)] + ([("pooled", sorted(counts))] if len(counts) > 1 else [])
        for scope, fs in scopes:
            base_n = sum(counts[f].get(BASELINE, (0, 0))[0] for f in fs)
            base_d = sum(draws[(f, BASELINE)] for f in fs) if BASELINE in methods else None
            for m in methods:
                n = sum(counts[f].get(m, (0, 0))[0] for f in fs)
                r = sum(counts[f].get(m, (0, 0))[1] for f in fs)
                d = sum(draws[(f, m)] for f in fs)
                hr = d / n if n else np.zeros(n_boot)
                row = {"scope": scope, "measure": measure, "method": m, "extracted": n, "relevant": r,
                       "harvest_ratio": r / n if n else 0.0,
                       "hr_lo": float(np.percentile(hr, lo_q, method="inverted_cdf")), "hr_hi": float(np.percentile(hr, hi_q, method="inverted_cdf"))}
                if base_d is not None and base_n:
                    base_r = sum(counts[f].get(BASELINE, (0, 0))[1] for f in fs)
                    base_hr = base_d / base_n
                    diff = hr - base_hr
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = np.where(base_hr > 0, hr / np.where(base_hr > 0, base_hr, 1), np.inf)
                    point = (r / n) / (base_r / base_n) if base_r and n else (np.inf if r else np.nan)
                    dlo, dhi = float(np.percentile(diff, lo_q, method="inverted_cdf")), float(np.percentile(diff, hi_q, method="inverted_cdf"))
                    row.update({f"ratio_to_{BASELINE}": point,
                                "ratio_lo": float(np.percentile(ratio, lo_q, method="inverted_cdf")), "ratio_hi": float(np.percentile(ratio, hi_q, method="inverted_cdf")),
                                "diff": r / n - base_r / base_n if n else np.nan, "diff_lo": dlo, "diff_hi": dhi,
                                "p_value": np.nan if m == BASELINE or not n else two_sided_p(diff)})
                rows.append(row)
    frame = pd.DataFrame(rows)
    if "p_value" in frame:
        frame = mark_significance(frame)
    num = frame.select_dtypes("number").columns.difference(["extracted", "relevant", "p_value", "p_holm"])
    frame[num] = frame[num].round(4)
    return frame


OURS = ("HCP-CB", "HCP-CB-0.9-0.1", "HIERARCHICAL-R2", "HCP-SNIP")


def against_best(folds: Sequence[tuple[int, Sequence[Extraction]]], n_boot: int = 2000, seed: int = 0,
                 level: float = 0.95) -> pd.DataFrame:
    """Each of our methods (:data:`OURS`) against the best of the others by pooled harvest ratio, per
    measure, per fold and pooled: the difference of harvest ratios with the same smoothed bootstrap as
    :func:`intervals`, and its significance as there (Holm over every row of a fold; pooled = holds in
    every fold)."""
    rng = np.random.default_rng(seed + 1)
    lo_q, hi_q = 50 * (1 - level), 100 - 50 * (1 - level)
    rows = []
    for measure, attr in MEASURES.items():
        if any(getattr(e, attr) is None for _, es in folds for e in es):
            continue
        counts = {f: _counts(es, attr) for f, es in sorted(folds, key=lambda x: x[0])}
        methods = sorted({m for c in counts.values() for m in c})
        pooled = {m: (sum(c.get(m, (0, 0))[0] for c in counts.values()), sum(c.get(m, (0, 0))[1] for c in counts.values()))
                  for m in methods}
        others = [m for m in methods if m not in OURS and pooled[m][0]]
        ours = [m for m in methods if m in OURS and pooled[m][0]]
        if not others or not ours:
            continue
        best = max(others, key=lambda m: (pooled[m][1] / pooled[m][0], m))
        draws = {(f, m): n * rng.beta(r + 0.5, n - r + 0.5, size=n_boot) if n else np.zeros(n_boot)
                 for f, c in counts.items() for m in (best, *ours) for n, r in [c.get(m, (0, 0))]}
        scopes = [(f"fold {f}", [f]) for f in counts] + ([("pooled", list(counts))] if len(counts) > 1 else [])
        for scope, fs in scopes:
            n_of = {m: sum(counts[f].get(m, (0, 0))[0] for f in fs) for m in (best, *ours)}
            r_of = {m: sum(counts[f].get(m, (0, 0))[1] for f in fs) for m in (best, *ours)}
            if not n_of[best]:
                continue
            base = sum(draws[(f, best)] for f in fs) / n_of[best]
            for m in ours:
                if not n_of[m]:
                    continue
                diff = sum(draws[(f, m)] for f in fs) / n_of[m] - base
                lo, hi = float(np.percentile(diff, lo_q)), float(np.percentile(diff, hi_q))
                rows.append({"scope": scope, "measure": measure, "method": m, "best_other": best,
                             "harvest_ratio": round(r_of[m] / n_of[m], 4),
                             "best_other_harvest_ratio": round(r_of[best] / n_of[best], 4),
                             "diff": round(r_of[m] / n_of[m] - r_of[best] / n_of[best], 4),
                             "diff_lo": round(lo, 4), "diff_hi": round(hi, 4), "p_value": two_sided_p(diff)})
    frame = pd.DataFrame(rows)
    return mark_significance(frame) if not frame.empty else frame


def intervals_markdown(frame: pd.DataFrame) -> str:
    """The intervals as one table per measure and scope: ``ratio [lo, hi]`` and the verdict on RND
    (Holm-corrected; a pooled table also says how each fold judged the difference)."""
    parts = []
    for (measure, scope), g in frame.groupby(["measure", "scope"], sort=False):
        g = g.sort_values("harvest_ratio", ascending=False)
        t = pd.DataFrame({
            "method": g.method, "extracted": g.extracted, "relevant": g.relevant,
            "harvest ratio [95% CI]": [f"{h:.4f} [{a:.4f}, {b:.4f}]" for h, a, b in zip(g.harvest_ratio, g.hr_lo, g.hr_hi)],
        })
        if f"ratio_to_{BASELINE}" in g:
            t[f"ratio to {BASELINE} [95% CI]"] = ["1 (baseline)" if m == BASELINE else f"{r:.2f} [{a:.2f}, {b:.2f}]"
                                                   for m, r, a, b in zip(g.method, g[f"ratio_to_{BASELINE}"], g.ratio_lo, g.ratio_hi)]
            t[f"differs from {BASELINE} (Holm)"] = g.significant.values
            if scope == "pooled" and "per_fold" in g:
                t["per fold (Holm)"] = g.per_fold.values
        title = f"{scope} (intervals over the users of these worlds only)" if scope == "pooled" else scope
        parts.append(f"### {title}, by {measure}\n\n" + t.to_markdown(index=False))
    return "\n\n".join(parts) + "\n"


def significant_summary(frame: pd.DataFrame, scope: str = "pooled") -> str:
    """One sentence per measure: which methods differ significantly from RND (see :func:`mark_significance`)."""
    if scope not in set(frame.scope):
        scope = frame.scope.iloc[0]
    lines = []
    for measure, g in frame[frame.scope == scope].groupby("measure", sort=False):
        hi = ", ".join(g[g.significant == "higher"].sort_values("harvest_ratio", ascending=False).method) or "none"
        lo = ", ".join(g[g.significant == "lower"].method) or "none"
        ns = ", ".join(g[g.significant == "no"].method) or "none"
        lines.append(f"- {scope}, by {measure}: significantly above {BASELINE}: {hi}; significantly below: {lo}; "
                     f"not distinguishable from {BASELINE}: {ns}.")
    family = frame[(frame.scope != "pooled") & frame.p_value.notna()].groupby("scope").size() if "p_value" in frame else None
    if family is not None and len(family):
        lines.append(f"- Significant means: Holm-corrected at family-wise level {ALPHA:g} over every comparison with "
                     f"{BASELINE} of a fold, both measures ({', '.join(f'{s}: {n}' for s, n in family.items())} comparisons)"
                     + ("; pooled: the same direction holds in every fold." if "pooled" in set(frame.scope) else "."))
    return "\n".join(lines)


def protocol_note(parameters: dict, folds: Sequence[dict]) -> str:
    """What was run, for the head of ``fue_intervals.md`` (from the run record, so a rebuild writes the same)."""
    p = parameters
    pop = p.get("population", {})
    world = ", ".join(f"{k}={v}" for k, v in sorted(pop.items()))
    donors = "; ".join(
        f"fold {f['fold']}: trained on {len(f['train_donors']['positive'])}+{len(f['train_donors']['negative'])} donors, "
        f"world from {len(f['world_donor_ids']['positive'])}+{len(f['world_donor_ids']['negative'])}"
        for f in folds)
    return (f"Run of `focuscrawl experiment fue`: {len(folds)} donor-disjoint fold(s) of {p.get('folds')} ({donors}); "
            f"{p.get('duration')} simulated, budget {p.get('budget')} user-page requests per simulated hour per method, "
            f"step {p.get('step')}, pseudo-training every {p.get('pseudo_every')}, world: {world}. Intervals: 95% "
            f"smoothed bootstrap over extracted users (Jeffreys, {p.get('bootstrap')} draws, seed {p.get('seed')}).")


def write_intervals(frame: pd.DataFrame, out: Path, note: str = "", best: pd.DataFrame | None = None) -> Path:
    """``fue_intervals.csv`` and ``fue_intervals.md`` (with which differences from RND are significant);
    with ``best`` (:func:`against_best`) also ``fue_ours_vs_best.csv`` and its table in the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "fue_intervals.csv", index=False)
    text = (note + "\n\n" if note else "") + significant_summary(frame) + "\n\n"
    if best is not None and not best.empty:
        best.to_csv(out / "fue_ours_vs_best.csv", index=False)
        text += ("### Ours against the best other method (harvest ratio difference per fold and pooled, 95% interval; "
                 f"significant: Holm at {ALPHA:g} over the rows of each fold, pooled: holds in every fold)\n\n"
                 + best.to_markdown(index=False) + "\n\n")
    text += intervals_markdown(frame)
    (out / "fue_intervals.md").write_text(text)
    return out / "fue_intervals.md"


def sensitivity_table(parameter: str, points: Sequence[tuple[float, pd.DataFrame]]) -> pd.DataFrame:
    """The pooled ratio to RND (with its interval) of every method at every value of ``parameter``."""
    rows = []
    for value, frame in points:
        scope = "pooled" if "pooled" in set(frame.scope) else frame.scope.iloc[0]
        for _, r in frame[frame.scope == scope].iterrows():
            rows.append({"parameter": parameter, "value": value, "measure": r.measure, "method": r.method,
                         "extracted": r.extracted, "relevant": r.relevant, f"ratio_to_{BASELINE}": r.get(f"ratio_to_{BASELINE}"),
                         "ratio_lo": r.get("ratio_lo"), "ratio_hi": r.get("ratio_hi"), "significant": r.get("significant")})
    return pd.DataFrame(rows)


def write_sensitivity(table: pd.DataFrame, parameter: str, out: Path) -> Path:
    """``sensitivity.{csv,md,png}``: ratio to RND against the parameter's value, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "sensitivity.csv", index=False)
    wide = table.assign(cell=[f"{r:.2f} [{a:.2f}, {b:.2f}]{'*' if s in ('higher', 'lower') else ''}"
                              + f" ({n} ext.)" if m != BASELINE else f"{h}/{n} relevant"
                              for m, r, a, b, s, n, h in zip(table.method, table[f"ratio_to_{BASELINE}"], table.ratio_lo,
                                                             table.ratio_hi, table.significant, table.extracted,
                                                             table.relevant)])
    parts = []
    for measure, g in wide.groupby("measure", sort=False):
        pivot = g.pivot(index="method", columns="value", values="cell")
        pivot.columns = [f"{parameter}={v:g}" for v in pivot.columns]
        parts.append(f"### ratio to {BASELINE} by {measure} [95% CI] (* = the difference from {BASELINE} is significant: "
                     f"Holm at {ALPHA:g} over the fold's comparisons, in every fold)"
                     f"\n\n" + pivot.to_markdown())
    (out / "sensitivity.md").write_text("\n\n".join(parts) + "\n")
    measures = list(dict.fromkeys(table.measure))
    fig, axes = plt.subplots(1, len(measures), figsize=(7 * len(measures), 5), squeeze=False)
    for ax, measure in zip(axes[0], measures):
        g = table[(table.measure == measure) & (table.method != BASELINE)]
        for i, (m, gm) in enumerate(g.groupby("method")):
            gm = gm.sort_values("value")
            off = (i - len(g.method.unique()) / 2) * 0.004 * (table.value.max() - table.value.min() or 1)
            # The raw ratio can lie just outside its smoothed (Jeffreys) interval: no negative bar then.
            ax.errorbar(gm.value + off, gm[f"ratio_to_{BASELINE}"],
                        yerr=[(gm[f"ratio_to_{BASELINE}"] - gm.ratio_lo).clip(lower=0),
                              (gm.ratio_hi - gm[f"ratio_to_{BASELINE}"]).clip(lower=0)],
                        label=m, marker="o", capsize=3, lw=1.2)
        ax.axhline(1.0, color="grey", ls=":")
        ax.set_xlabel(parameter)
        ax.set_ylabel(f"harvest ratio / {BASELINE} (95% CI)")
        ax.set_title(f"by {measure}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "sensitivity.png", dpi=110)
    plt.close(fig)
    return out / "sensitivity.md"


def events_from_table(uri: str, run_id: str, storage_options: dict[str, str] | None = None) -> list[Extraction]:
    """A run's judged extractions read back from the ``fue_extractions`` Delta table."""
    import pyarrow.dataset as ds

    from focuscrawl.fue.pipeline import events_of
    from focuscrawl.lake import open_table

    table = open_table(uri, storage_options)
    if table is None:
        raise FileNotFoundError(f"no Delta table at {uri}: run `focuscrawl experiment fue` first or pass --table")
    rows = (table.to_pyarrow_dataset()
            .to_table(columns=["method", "user", "sim_time", "relevant"], filter=ds.field("run_id") == run_id)
            .to_pylist())
    if not rows:
        raise LookupError(f"run {run_id!r} has no rows in {uri}; the run ids are printed when a run ends "
                          "(or: focuscrawl sql \"SELECT DISTINCT run_id FROM focuscrawl.fue_extractions\")")
    return events_of(rows)
