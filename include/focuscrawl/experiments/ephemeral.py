"""``focuscrawl experiment ephemeral``: crawl policies for ephemeral new content on one simulated world.

Seed ``001_c276720796c36144.txt``, sections 2 and 3: every registered scheduler
(:data:`focuscrawl.ephemeral.schedulers.SCHEDULERS`) crawls the same simulated week of content
sources with the same budget of fetches per second; each is scored by the seed's dynamic quality
Q_T(t) (profit per second over a trailing window T) and overall quality (profit per second over
the week, after a warm-up in which the estimates are still being learned).

Writes under ``--output``: ``dynamic_quality.png`` (Q_T(t) of every scheduler),
``overall_quality.md`` and ``overall_quality.csv`` (one row per scheduler, with its share of the
oracle's quality).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.config import settings
from focuscrawl.ephemeral.quality import dynamic_quality, overall_quality
from focuscrawl.ephemeral.schedulers import SCHEDULERS
from focuscrawl.ephemeral.simulate import DAY, Run, WorldSpec, make_world, simulate


def run_all(spec: WorldSpec, budget: float, names: list[str], refit_every_s: float, progress=None) -> dict[str, Run]:
    world = make_world(spec)
    return {name: simulate(world, SCHEDULERS.create(name, budget=budget, max_rate=world.max_rate), budget,
                           refit_every_s=refit_every_s, seed=spec.seed, progress=progress)
            for name in names}


def quality_table(runs: dict[str, Run], start: float, end: float) -> pd.DataFrame:
    rows = [{"scheduler": name, "overall_quality": overall_quality(r.crawl_times, r.profits, start, end),
             "recrawls": r.recrawls, "page_fetches": r.page_fetches, "idle_slots": r.idle}
            for name, r in runs.items()]
    table = pd.DataFrame(rows).sort_values("overall_quality", ascending=False, ignore_index=True)
    if "ORACLE" in runs:
        table["share_of_oracle"] = table["overall_quality"] / float(table.loc[table.scheduler == "ORACLE", "overall_quality"].iloc[0])
    return table


def plot(runs: dict[str, Run], window_s: float, horizon_s: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at = np.arange(window_s, horizon_s + 1, 600.0)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name, r in runs.items():
        ax.plot(at / DAY, dynamic_quality(r.crawl_times, r.profits, window_s, at), label=name, lw=1.2)
    ax.set_xlabel("simulated day")
    ax.set_ylabel(f"Q_T(t), clicks per second (T = {window_s / 3600:g} h)")
    ax.set_title("Dynamic quality of crawl policies for ephemeral new content (seed 001, section 2)")
    ax.legend(ncol=3, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="focuscrawl experiment ephemeral", description=__doc__.splitlines()[0])
    p.add_argument("--output", type=Path, help="folder for the plot and tables (default: $FOCUSCRAWL_VAR/experiments/ephemeral)")
    p.add_argument("--schedulers", default=",".join(SCHEDULERS.names()), help="comma-separated names (default: all)")
    p.add_argument("--budget", type=float, default=0.025, help="fetches per second (default 0.025: 90 an hour)")
    p.add_argument("--sources", type=int, default=WorldSpec.n_sources)
    p.add_argument("--days", type=float, default=WorldSpec.days)
    p.add_argument("--seed", type=int, default=WorldSpec.seed)
    p.add_argument("--window-hours", type=float, default=3.0, help="T of the dynamic quality Q_T(t)")
    p.add_argument("--warmup-days", type=float, default=1.0, help="left out of the overall quality")
    p.add_argument("--refit-hours", type=float, default=6.0, help="how often estimates and schedules are refitted")
    args = p.parse_args(argv)
    from tqdm import tqdm

    names = SCHEDULERS.parse(args.schedulers)
    spec = WorldSpec(n_sources=args.sources, days=args.days, seed=args.seed)
    out = args.output or Path(settings().var_dir) / "experiments" / "ephemeral"
    out.mkdir(parents=True, exist_ok=True)
    horizon = spec.days * DAY
    with tqdm(total=int(horizon * args.budget) * len(names), desc="fetch slots", unit="slot") as bar:
        runs = run_all(spec, args.budget, names, args.refit_hours * 3600, progress=bar)
    table = quality_table(runs, args.warmup_days * DAY, horizon)
    plot(runs, args.window_hours * 3600, horizon, out / "dynamic_quality.png")
    table.to_csv(out / "overall_quality.csv", index=False)
    (out / "overall_quality.md").write_text(table.to_markdown(index=False, floatfmt=".4f") + "\n")
    print(table.to_markdown(index=False, floatfmt=".4f"))
    print(f"written to {out}")
    return 0
