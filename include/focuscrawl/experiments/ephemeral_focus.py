"""``focuscrawl experiment ephemeral-focus``: the sources loop on a page focus, with relevance feedback
against the seed's clicks, a uniform schedule and fixed quotas, over several seeds, with intervals.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), sections 2-4, with the profit signal
of :mod:`focuscrawl.ephemeral.feedback`: a project on real sites has no click log, so a new page earns its
source its relevance to the user's focus, discounted by its fetch delay with the freshness half-life.
The worlds are :mod:`focuscrawl.ephemeral.simulate`'s (``model`` and ``second``), whose pages carry a
hidden topic label (evaluation only) and the score a page model gives them (what the crawler reads).

Every policy watches every source (no click-driven source discovery, which would favour the click
signal) and spends the same budget, at each of ``--budgets`` (default: the product's budget, and a half
and a quarter of it, where the relevant pages compete harder for the fetches); each is refitted every ``--refit-hours`` from what a crawler could
know under its signal:

- ``LAGRANGE/RELEVANCE``: ours on a real site, the seed's optimiser fitted from the page scores;
- ``LAGRANGE/CLICKS``: the seed's click-fed schedule, as on the world with its click log;
- ``BFS``: a uniform schedule (sources round-robin, pages first in, first out; it uses no signal);
- ``FIXED_QUOTA/RELEVANCE``: half the budget for recrawls, spread evenly over the sources (the seed's
  "fixed quota"), pages ordered by the relevance estimates;
- ``LAMBDA/RELEVANCE``: recrawls in proportion to the link rate;
- ``ORACLE/RELEVANCE``: told every page at its creation and each source's true share of relevant pages.

Measure (the hidden label is the truth): **relevant new pages fetched within the freshness window per
fetch**: pages whose hidden label is relevant, fetched within ``--window-hours`` (default: the
freshness half-life) of their publication, in the evaluation window (after ``--warmup-days``), divided
by the fetches the budget allowed in it (``budget x seconds``; a slot a policy leaves idle counts as
spent). Also recorded: relevant pages per fetch at any delay, and the seed's click quality (clicks per
second), so the trade is visible.

Tables give, per world and budget, each policy's mean over seeds with its 95% t-interval, and the paired difference
of ``LAGRANGE/RELEVANCE`` against every other policy on the same seeds with a Bonferroni-corrected
t-interval (family: every comparison of the table, all worlds and budgets); an ordering is claimed only where that
interval excludes zero. Writes under ``--output``: ``runs.csv`` (one row per world, budget, seed, policy:
the raw rows), ``run.json``, and from them (:func:`build_outputs`, which ``focuscrawl report ephemeral-focus
--run DIR`` calls again) ``relevant_fresh.md``/``.csv`` and ``relevant_fresh.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.config import settings
from focuscrawl.core.commandline import parser
from focuscrawl.core.params import add_arguments
from focuscrawl.ephemeral.feedback import profit_signal
from focuscrawl.ephemeral.params import DEFAULT as EPHEMERAL
from focuscrawl.ephemeral.quality import overall_quality
from focuscrawl.ephemeral.schedulers import SCHEDULERS
from focuscrawl.ephemeral.simulate import DAY, WORLDS, Run, World, make_world, simulate
from focuscrawl.experiments.ephemeral import t_interval
from focuscrawl.experiments.run_record import add_draft_argument

NAME = "ephemeral-focus"
OURS = "LAGRANGE/RELEVANCE"
# (policy, scheduler, profit signal): the comparison the module docstring lists
POLICIES = (("LAGRANGE/RELEVANCE", "LAGRANGE", "RELEVANCE"), ("LAGRANGE/CLICKS", "LAGRANGE", "CLICKS"),
            ("BFS", "BFS", "RELEVANCE"), ("FIXED_QUOTA/RELEVANCE", "FIXED_QUOTA", "RELEVANCE"),
            ("LAMBDA/RELEVANCE", "LAMBDA", "RELEVANCE"), ("ORACLE/RELEVANCE", "ORACLE", "RELEVANCE"))
MEASURE = "relevant_fresh_per_fetch"
LEVEL = 0.95


def measure(world: World, run: Run, budget: float, start: float, end: float, window_s: float) -> dict:
    """The run's figures over the evaluation window [start, end] (module docstring)."""
    inside = (run.crawl_times > start) & (run.crawl_times <= end)
    pages = run.pages[inside]
    delay = run.crawl_times[inside] - world.page_created[pages]
    relevant = world.page_relevant[pages]
    fetches = budget * (end - start)
    return {MEASURE: float(np.sum(relevant & (delay <= window_s)) / fetches),
            "relevant_per_fetch": float(relevant.sum() / fetches),
            "click_quality": overall_quality(run.crawl_times, run.profits, start, end),
            "page_fetches": int(inside.sum())}


def run_policies(world: World, budget: float, half_life_s: float, refit_every_s: float, start: float,
                 names: list[str], progress=None) -> dict[str, Run]:
    """Every policy of ``names`` (:data:`POLICIES`) on ``world`` from ``start``, watching every source."""
    runs = {}
    for name, scheduler, signal in POLICIES:
        if name in names:
            policy = SCHEDULERS.create(scheduler, budget=budget, max_rate=world.max_rate)
            runs[name] = simulate(world, policy, budget, refit_every_s=refit_every_s, seed=world.spec.seed,
                                  progress=progress, start_s=start, signal=profit_signal(signal, half_life_s))
    return runs


def seed_table(runs: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """Per world, budget and policy: the measure's mean with its t-interval over seeds, and ours minus it
    (paired by seed) with a Bonferroni-corrected t-interval over every comparison of the table."""
    groups = runs.groupby(["world", "budget"], sort=False)
    comparisons = int(sum(part.policy.nunique() - 1 for _, part in groups))
    corrected = 1 - (1 - level) / max(comparisons, 1)
    rows = []
    for (world, budget), part in groups:
        wide = part.pivot(index="seed", columns="policy", values=MEASURE)
        for name in wide.columns:
            m = t_interval(wide[name], level)
            row = dict(world=world, budget=budget, policy=name, seeds=len(wide), mean=m[0], low=m[1], high=m[2],
                       comparisons=comparisons, corrected_level=corrected)
            for col in ("relevant_per_fetch", "click_quality", "page_fetches"):
                row[col] = float(part[part.policy == name][col].mean())
            if OURS in wide and name != OURS:
                d = t_interval(wide[OURS] - wide[name], corrected)
                row.update(ours_minus=d[0], diff_low=d[1], diff_high=d[2], significant=bool(d[1] > 0 or d[2] < 0))
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["world", "budget", "mean"], ascending=[True, False, False], ignore_index=True)


def _fmt(m: float, lo: float, hi: float, digits: int = 4) -> str:
    if not np.isfinite(m):
        return ""
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" if np.isfinite(lo) else f"{m:.{digits}f}"


def markdown(table: pd.DataFrame, window_hours: float) -> str:
    parts = []
    for (world, budget), t in table.groupby(["world", "budget"], sort=False):
        level = float(t.corrected_level.iloc[0])
        view = pd.DataFrame({
            "policy": t.policy,
            f"relevant new pages within {window_hours:g} h per fetch": [_fmt(*r) for r in zip(t["mean"], t.low, t.high)],
            f"{OURS} minus it": [("" if p == OURS else _fmt(*r) + (" *" if sig else "")) for p, sig, *r in
                                 zip(t.policy, t.get("significant", False), t.get("ours_minus", np.nan),
                                     t.get("diff_low", np.nan), t.get("diff_high", np.nan))],
            "relevant pages per fetch (any delay)": t.relevant_per_fetch.map(lambda v: f"{v:.4f}"),
            "click quality (clicks/s)": t.click_quality.map(lambda v: f"{v:.4f}"),
            "page fetches": t.page_fetches.round(0).astype(int),
        })
        parts.append(f"**{world} world, budget {budget:g} fetches/s** ({budget * 3600:g} an hour), {int(t.seeds.iloc[0])} seeds (mean [95% t-interval over seeds]; differences "
                     f"paired by seed with a Bonferroni-corrected {level:.2%} interval over the "
                     f"{int(t.comparisons.iloc[0])} comparisons of the table; * = it excludes 0)\n\n"
                     + view.to_markdown(index=False))
    return "\n\n".join(parts) + "\n"


def plot(table: pd.DataFrame, path: Path, window_hours: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worlds = list(table.world.unique())
    budgets = sorted(table.budget.unique(), reverse=True)
    names = [name for name, *_ in POLICIES if name in set(table.policy)]
    fig, axes = plt.subplots(1, len(worlds), figsize=(6 * len(worlds), 4.5), squeeze=False, sharey=True)
    width = 0.8 / len(budgets)
    for ax, world in zip(axes[0], worlds):
        for j, budget in enumerate(budgets):
            t = table[(table.world == world) & (table.budget == budget)].set_index("policy").reindex(names)
            x = np.arange(len(names)) + j * width
            ax.bar(x, t["mean"], width, yerr=[t["mean"] - t.low, t.high - t["mean"]], capsize=2,
                   label=f"{budget * 3600:g} fetches an hour")
        ax.set_xticks(np.arange(len(names)) + width * (len(budgets) - 1) / 2, names, rotation=20, fontsize=7, ha="right")
        ax.set_title(f"{world} world")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(f"relevant new pages within {window_hours:g} h\nper fetch (95% CI over seeds)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Sources loop on a page focus (seed 001 with the relevance signal; hidden labels judge)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_outputs(out: Path, runs: pd.DataFrame, params: dict) -> str:
    """Table and plot from the raw rows (the experiment and ``focuscrawl report ephemeral-focus`` call this)."""
    table = seed_table(runs)
    table.to_csv(out / "relevant_fresh.csv", index=False)
    text = markdown(table, params["window_hours"])
    (out / "relevant_fresh.md").write_text(text)
    plot(table, out / "relevant_fresh.png", params["window_hours"])
    return text


def build_parser() -> argparse.ArgumentParser:
    p = parser("focuscrawl experiment ephemeral-focus", __doc__,
               "focuscrawl experiment ephemeral-focus --seeds 0,1 --days 2",
               "focuscrawl experiment ephemeral-focus --output /tmp/ef   # then: focuscrawl report ephemeral-focus --run /tmp/ef")
    p.add_argument("--output", type=Path, help=f"folder for the table and plot (default: $FOCUSCRAWL_VAR/experiments/{NAME})")
    p.add_argument("--policies", default=",".join(name for name, *_ in POLICIES), help="comma-separated (default: all)")
    p.add_argument("--worlds", default="model,second", help=f"comma-separated of {', '.join(WORLDS)}")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated world seeds (each a fresh world)")
    add_arguments(p, EPHEMERAL, ["freshness_half_life_s"])
    default = EPHEMERAL.budget
    p.add_argument("--budgets", default=f"{default:g},{default / 2:g},{default / 4:g}",
                   help="comma-separated crawl budgets, fetches per second (default: the product's, a half and a quarter of it)")
    p.add_argument("--sources", type=int, default=40, help="sources, all watched")
    p.add_argument("--days", type=float, default=4.0, help="crawled days")
    p.add_argument("--warmup-days", type=float, default=1.0, help="left out of the measure")
    p.add_argument("--window-hours", type=float, help="freshness window of the measure (default: the half-life)")
    p.add_argument("--refit-hours", type=float, default=6.0, help="how often estimates and schedules are refitted")
    add_draft_argument(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from focuscrawl.experiments.run_record import start_run, write_run_json

    args = build_parser().parse_args(argv)
    known = [name for name, *_ in POLICIES]
    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    worlds = [w.strip() for w in args.worlds.split(",") if w.strip()]
    if unknown := [n for n in names if n not in known] + [w for w in worlds if w not in WORLDS]:
        raise SystemExit(f"unknown policy or world {unknown}; policies: {', '.join(known)}; worlds: {', '.join(WORLDS)}")
    if args.warmup_days >= args.days:
        raise SystemExit(f"--warmup-days ({args.warmup_days}) must be shorter than --days ({args.days})")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    budgets = [float(b) for b in args.budgets.split(",") if b.strip()]
    if not budgets or min(budgets) <= 0:
        raise SystemExit(f"--budgets must be fetches per second > 0 (got {args.budgets!r})")
    args.window_hours = args.window_hours or args.freshness_half_life_s / 3600
    out = args.output or Path(settings().var_dir) / "experiments" / NAME
    code = start_run(out, args.draft)
    rows, specs = [], {}
    slots = int(args.days * DAY * sum(budgets)) * len(names) * len(worlds) * len(seeds)
    with tqdm(total=slots, desc="fetch slots", unit="slot") as bar:
        for world_name in worlds:
            for seed in seeds:
                spec = WORLDS[world_name](n_sources=args.sources, days=args.days, seed=seed)
                specs[world_name] = dataclasses.asdict(spec) | {"seed": "per run"}
                world = make_world(spec)
                for budget in budgets:
                    runs = run_policies(world, budget, args.freshness_half_life_s, args.refit_hours * 3600, 0.0, names, bar)
                    for name, run in runs.items():
                        rows.append(dict(world=world_name, budget=budget, seed=seed, policy=name,
                                         **measure(world, run, budget, args.warmup_days * DAY, args.days * DAY,
                                                   args.window_hours * 3600)))
    runs_frame = pd.DataFrame(rows)
    runs_frame.to_csv(out / "runs.csv", index=False)
    params = {k: v for k, v in vars(args).items() if k not in ("output", "draft")}
    params.update(policies=names, worlds=worlds, seeds=seeds, budgets=budgets)
    write_run_json(out, NAME, params, {"world_seeds": seeds, "feedback_noise": "default_rng(world seed), the same for every policy"},
                   code=code, draft=args.draft, worlds=specs, outputs=["runs.csv"])
    text = build_outputs(out, runs_frame, params)
    print(text)
    print(f"written to {out}")
    return 0
