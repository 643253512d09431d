"""``focuscrawl experiment ephemeral``: crawl policies for ephemeral new content, on two kinds of
simulated world and several seeds, with intervals.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), sections 2-4. For every world kind (``--worlds``: ``model``, the
optimiser's own model; ``second``, log-normal decay, bursty arrivals and drifting rates, see
:mod:`focuscrawl.ephemeral.simulate`) and every seed:

1. *Source discovery* (section 3): a breadth-first crawl of all candidate sources over the first
   ``--discovery-days`` is the crawl history; greedy maximum coverage over the profit its pages got
   after their crawl picks the sources that cover ``--coverage`` of it
   (:func:`focuscrawl.ephemeral.simulate.discover_sources`).
2. Every registered scheduler crawls the chosen sources over the next ``--days`` with the same
   budget; feedback is the clicks counted from each page's crawl. The oracle watches the same
   chosen sources (it bounds the scheduling, not the discovery).
3. Overall quality (profit per second after ``--warmup-days``) per run.

Tables give, per world, each scheduler's mean over seeds with a 95% t-interval, and the paired
difference of ours (LAGRANGE) against every other scheduler on the same seeds, with its interval:
an ordering is claimed only where that interval excludes zero. Writes under ``--output``: ``runs.csv``
(one row per world, seed, scheduler: the raw rows), ``curves.csv`` (Q_T(t) of the first seed),
``run.json``, and from those (:func:`build_outputs`, which ``focuscrawl report ephemeral --run DIR``
calls again) ``overall_quality.md``/``.csv``, ``dynamic_quality_<world>.png``, ``quality_by_world.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.core.commandline import parser
from focuscrawl.config import settings
from focuscrawl.experiments.run_record import add_draft_argument
from focuscrawl.core.params import add_arguments
from focuscrawl.ephemeral.params import DEFAULT as EPHEMERAL
from focuscrawl.ephemeral.quality import dynamic_quality, overall_quality
from focuscrawl.ephemeral.schedulers import SCHEDULERS
from focuscrawl.ephemeral.simulate import DAY, WORLDS, Run, WorldSpec, discover_sources, make_world, simulate

NAME = "ephemeral"
OURS = "LAGRANGE"


def run_all(spec: WorldSpec, budget: float, names: list[str], refit_every_s: float, progress=None,
            discovery_days: float = 1.0, coverage: float = 0.9) -> tuple[dict[str, Run], pd.DataFrame, float]:
    """Discovery over the first ``discovery_days`` of ``spec`` (whose ``days`` include them), then every
    scheduler on the chosen sources; returns the runs, the chosen sources and the evaluation start."""
    world = make_world(spec)
    start = discovery_days * DAY
    if discovery_days > 0:
        chosen = discover_sources(world, budget, start, coverage, seed=spec.seed)
        sources = np.sort(chosen.source.to_numpy())
    else:
        chosen, sources = pd.DataFrame(), np.arange(spec.n_sources)
    runs = {name: simulate(world, SCHEDULERS.create(name, budget=budget, max_rate=world.max_rate[sources]), budget,
                           refit_every_s=refit_every_s, seed=spec.seed, progress=progress, sources=sources, start_s=start)
            for name in names}
    return runs, chosen, start


def quality_table(runs: dict[str, Run], start: float, end: float) -> pd.DataFrame:
    rows = [{"scheduler": name, "overall_quality": overall_quality(r.crawl_times, r.profits, start, end),
             "recrawls": r.recrawls, "page_fetches": r.page_fetches, "idle_slots": r.idle}
            for name, r in runs.items()]
    table = pd.DataFrame(rows).sort_values("overall_quality", ascending=False, ignore_index=True)
    if "ORACLE" in runs:
        table["share_of_oracle"] = table["overall_quality"] / float(table.loc[table.scheduler == "ORACLE", "overall_quality"].iloc[0])
    return table


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its t-interval over independent replicates (seeds)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m, m - half, m + half


def seed_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per world and scheduler: mean quality and share of the oracle over seeds, and ours minus it
    (paired by seed), each with its 95% t-interval; ``significant`` when the difference's excludes 0."""
    rows = []
    for world, part in runs.groupby("world", sort=False):
        wide = part.pivot(index="seed", columns="scheduler", values="overall_quality")
        oracle = wide["ORACLE"] if "ORACLE" in wide else None
        for name in wide.columns:
            q = t_interval(wide[name])
            row = dict(world=world, scheduler=name, seeds=len(wide), quality=q[0], quality_low=q[1], quality_high=q[2])
            if oracle is not None:
                s = t_interval(wide[name] / oracle)
                row.update(share_of_oracle=s[0], share_low=s[1], share_high=s[2])
            if OURS in wide and name != OURS:
                d = t_interval(wide[OURS] - wide[name])
                row.update(ours_minus=d[0], diff_low=d[1], diff_high=d[2], significant=bool(d[1] > 0 or d[2] < 0))
            for col in ("recrawls", "page_fetches", "sources_chosen"):
                row[col] = float(part[part.scheduler == name][col].mean())
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["world", "quality"], ascending=[True, False], ignore_index=True)


def _fmt(m: float, lo: float, hi: float, digits: int = 4) -> str:
    if not np.isfinite(m):
        return ""
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" if np.isfinite(lo) else f"{m:.{digits}f}"


def markdown(table: pd.DataFrame) -> str:
    parts = []
    for world, t in table.groupby("world", sort=False):
        view = pd.DataFrame({
            "scheduler": t.scheduler,
            "overall quality (clicks/s)": [_fmt(*r) for r in zip(t.quality, t.quality_low, t.quality_high)],
            "share of oracle": [_fmt(*r, digits=3) for r in zip(t.share_of_oracle, t.share_low, t.share_high)] if "share_of_oracle" in t else "",
            f"{OURS} minus it": [("" if s == OURS else _fmt(*r) + (" *" if sig else "")) for s, sig, *r in
                                 zip(t.scheduler, t.get("significant", False), t.get("ours_minus", np.nan), t.get("diff_low", np.nan), t.get("diff_high", np.nan))],
            "recrawls": t.recrawls.round(0).astype(int),
            "page fetches": t.page_fetches.round(0).astype(int),
        })
        parts.append(f"**{world} world**, {int(t.seeds.iloc[0])} seeds, {t.sources_chosen.iloc[0]:.1f} sources chosen on average "
                     "(mean [95% t-interval over seeds]; * = the paired difference's interval excludes 0)\n\n" + view.to_markdown(index=False))
    return "\n\n".join(parts) + "\n"


def plot_curves(curves: pd.DataFrame, window_s: float, path: Path, world: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name, c in curves.groupby("scheduler", sort=False):
        ax.plot(c.t_s / DAY, c.q, label=name, lw=1.2)
    ax.set_xlabel("simulated day")
    ax.set_ylabel(f"Q_T(t), clicks per second (T = {window_s / 3600:g} h)")
    ax.set_title(f"Dynamic quality on the {world} world, seed {int(curves.seed.iloc[0])} (seed 001, section 2)")
    ax.legend(ncol=3, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_worlds(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worlds = list(table.world.unique())
    names = list(table[table.world == worlds[0]].scheduler)
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(worlds)
    for j, world in enumerate(worlds):
        t = table[table.world == world].set_index("scheduler").reindex(names)
        col, lo, hi = ("share_of_oracle", "share_low", "share_high") if "share_of_oracle" in t else ("quality", "quality_low", "quality_high")
        x = np.arange(len(names)) + j * width
        ax.bar(x, t[col], width, yerr=[t[col] - t[lo], t[hi] - t[col]], capsize=3, label=f"{world} world")
    ax.set_xticks(np.arange(len(names)) + width * (len(worlds) - 1) / 2, names)
    ax.set_ylabel("overall quality / oracle's (95% CI over seeds)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_outputs(out: Path, runs: pd.DataFrame, curves: pd.DataFrame, params: dict) -> str:
    """Tables and plots from the raw rows (the experiment and ``focuscrawl report ephemeral`` call this)."""
    table = seed_table(runs)
    table.to_csv(out / "overall_quality.csv", index=False)
    text = markdown(table)
    (out / "overall_quality.md").write_text(text)
    for i, (world, c) in enumerate(curves.groupby("world", sort=False)):
        plot_curves(c, params["window_hours"] * 3600, out / f"dynamic_quality_{world}.png", world)
        if i == 0:  # the demo report shows the first world's curve under this name
            plot_curves(c, params["window_hours"] * 3600, out / "dynamic_quality.png", world)
    plot_worlds(table, out / "quality_by_world.png")
    return text


def build_parser() -> argparse.ArgumentParser:
    p = parser("focuscrawl experiment ephemeral", __doc__,
               "focuscrawl experiment ephemeral --seeds 0,1 --days 3",
               "focuscrawl experiment ephemeral --worlds second --schedulers LAGRANGE,BFS --output /tmp/eph"
               "   # then: focuscrawl report ephemeral --run /tmp/eph")
    p.add_argument("--output", type=Path, help="folder for the plots and tables (default: $FOCUSCRAWL_VAR/experiments/ephemeral)")
    p.add_argument("--schedulers", default=",".join(SCHEDULERS.names()), help="comma-separated names (default: all)")
    p.add_argument("--worlds", default="model,second", help=f"comma-separated of {', '.join(WORLDS)}")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated world seeds (each a fresh world)")
    add_arguments(p, EPHEMERAL, ["budget"])
    p.add_argument("--sources", type=int, default=WorldSpec.n_sources, help="candidate sources")
    p.add_argument("--days", type=float, default=WorldSpec.days, help="crawled days after discovery")
    p.add_argument("--discovery-days", type=float, default=1.0, help="crawl history for source discovery (0: watch all)")
    p.add_argument("--coverage", type=float, default=0.9, help="share of the history's profit the chosen sources cover")
    p.add_argument("--window-hours", type=float, default=3.0, help="T of the dynamic quality Q_T(t)")
    p.add_argument("--warmup-days", type=float, default=1.0, help="left out of the overall quality")
    p.add_argument("--refit-hours", type=float, default=6.0, help="how often estimates and schedules are refitted")
    add_draft_argument(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from focuscrawl.experiments.run_record import start_run, write_run_json

    args = build_parser().parse_args(argv)
    names = SCHEDULERS.parse(args.schedulers)
    worlds = [w.strip() for w in args.worlds.split(",") if w.strip()]
    unknown = [w for w in worlds if w not in WORLDS]
    if unknown:
        raise SystemExit(f"unknown world(s) {unknown}; known: {', '.join(WORLDS)}")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    out = args.output or Path(settings().var_dir) / "experiments" / NAME
    code = start_run(out, args.draft)
    total_days = args.discovery_days + args.days
    rows, curves, specs = [], [], {}
    slots = int(args.days * DAY * args.budget) * len(names) * len(worlds) * len(seeds)
    with tqdm(total=slots, desc="fetch slots", unit="slot") as bar:
        for world in worlds:
            for seed in seeds:
                spec = WORLDS[world](n_sources=args.sources, days=total_days, seed=seed)
                specs[world] = dataclasses.asdict(spec) | {"seed": "per run"}
                runs, chosen, start = run_all(spec, args.budget, names, args.refit_hours * 3600, bar, args.discovery_days, args.coverage)
                end = total_days * DAY
                for name, r in runs.items():
                    rows.append(dict(world=world, seed=seed, scheduler=name,
                                     overall_quality=overall_quality(r.crawl_times, r.profits, start + args.warmup_days * DAY, end),
                                     recrawls=r.recrawls, page_fetches=r.page_fetches, idle_slots=r.idle,
                                     sources_chosen=len(chosen) if len(chosen) else args.sources))
                    if seed == seeds[0]:
                        at = np.arange(start + args.window_hours * 3600, end + 1, 1800.0)
                        q = dynamic_quality(r.crawl_times, r.profits, args.window_hours * 3600, at)
                        curves.append(pd.DataFrame({"world": world, "seed": seed, "scheduler": name, "t_s": at, "q": q}))
    runs_frame, curves_frame = pd.DataFrame(rows), pd.concat(curves, ignore_index=True)
    runs_frame.to_csv(out / "runs.csv", index=False)
    curves_frame.to_csv(out / "curves.csv", index=False)
    params = {k: v for k, v in vars(args).items() if k not in ("output", "draft")}
    params.update(schedulers=names, worlds=worlds, seeds=seeds)
    write_run_json(out, NAME, params, {"world_seeds": seeds, "feedback_noise": "default_rng(world seed), the same for every scheduler"},
                   code=code, draft=args.draft, worlds=specs, outputs=["runs.csv", "curves.csv"])
    text = build_outputs(out, runs_frame, curves_frame, params)
    print(text)
    print(f"written to {out}")
    return 0
