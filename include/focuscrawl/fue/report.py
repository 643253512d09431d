"""The FUE report: harvest ratio over time, users per hour, ratio to RND, per day, and the paper's verdicts.

Seed ``000_c12b299f5bad9cdf.txt`` section IV-F, Figures 2-4: every method's harvest ratio over
the experiment, the extraction speed, and the comparison with RND "during the first day" and
"on the last day". The same tables come from a run's events in memory or, after the fact, from
its rows in the ``fue_extractions`` Delta table (:func:`events_from_table`).

Ratios to RND are given raw (empty while RND has found no relevant user) and add-one smoothed
(:func:`smoothed_ratio`), which is defined from the first hour on.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

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


def events_from_table(uri: str, run_id: str, storage_options: dict[str, str] | None = None) -> list[Extraction]:
    """A run's judged extractions read back from the ``fue_extractions`` Delta table."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    from focuscrawl.fue.pipeline import events_of

    if not DeltaTable.is_deltatable(uri, storage_options=storage_options):
        raise FileNotFoundError(f"no Delta table at {uri}: run `focuscrawl experiment fue` first or pass --table")
    rows = (DeltaTable(uri, storage_options=storage_options).to_pyarrow_dataset()
            .to_table(columns=["method", "user", "sim_time", "relevant"], filter=ds.field("run_id") == run_id)
            .to_pylist())
    if not rows:
        raise LookupError(f"run {run_id!r} has no rows in {uri}; the run ids are printed when a run ends "
                          "(or: focuscrawl sql \"SELECT DISTINCT run_id FROM focuscrawl.fue_extractions\")")
    return events_of(rows)
