"""``focuscrawl experiment graph-estimation``: NRMSE of every estimator x sampler over sampling fractions.

Seed ``003_3ce707ea6f24f484.txt`` (abstract, experiments): crawl a fraction of the vertices with
UNI, RW, MHRW and FS, estimate the copy-count distribution (omega) and the label distribution with
NAIVE, MLE (UNI only, appendix 1.1), SCE and WCE, and compare with the ground truth over repeated
runs. Graphs: ``generated`` (power-law graph with Zipf content, :mod:`focuscrawl.graph.synthetic`)
and ``wikispeedia`` (real hyperlinks, :mod:`focuscrawl.graph.wikispeedia`).

Writes under ``--output``: ``nrmse_by_value.csv`` (NRMSE and relative bias of every value), ``nrmse.csv`` (one
number per cell: NRMSE averaged over values weighted by their true share, so a value held by one
content does not dominate), ``table_<f>.md``/``.csv`` at the reporting fraction, and one PNG per
graph and target.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.config import settings
from focuscrawl.graph.access import InMemoryGraph
from focuscrawl.graph.estimators import ESTIMATORS, TARGETS
from focuscrawl.graph.evaluation import binned, nrmse, relative_bias
from focuscrawl.graph.samplers import SAMPLERS


def load_graph(name: str, data_dir: Path | None, seed: int) -> InMemoryGraph:
    if name == "generated":
        from focuscrawl.graph.synthetic import synthetic_graph

        return synthetic_graph(seed=seed)
    if name == "wikispeedia":
        from focuscrawl.graph.wikispeedia import load_wikispeedia

        if data_dir is None:
            raise SystemExit("wikispeedia needs the real data folder: set FOCUSCRAWL_DATA or pass --data-dir")
        return load_wikispeedia(Path(data_dir) / "wikispeedia")
    raise SystemExit(f"unknown graph {name!r}; known: generated, wikispeedia")


def run_grid(
    graph: InMemoryGraph,
    samplers: list[str],
    estimators: list[str],
    fractions: list[float],
    runs: int,
    seed: int,
    walkers: int = 5,
    burn_in: int = 0,
    progress=None,
) -> pd.DataFrame:
    """NRMSE per (target, sampler, estimator, fraction, value) over ``runs`` crawls of each budget."""
    rows = []
    truth = {t: binned(graph.truth(t), t) for t in TARGETS}
    for s_name in samplers:
        sampler = SAMPLERS.create(s_name, walkers=walkers, burn_in=burn_in) if s_name == "FS" else SAMPLERS.create(s_name, burn_in=burn_in)
        for fraction in fractions:
            budget = max(2, round(fraction * graph.num_vertices))
            found: dict[tuple[str, str], list[dict]] = {}
            for run in range(runs):
                rng = np.random.default_rng([seed, run, int(fraction * 1e6), SAMPLERS.names().index(s_name)])
                sample = sampler.sample(graph.access(budget, rng), rng)
                for e_name in estimators:
                    for target in TARGETS:
                        est = ESTIMATORS.create(e_name, target=target)
                        if est.requires_uniform and not sample.uniform:
                            continue
                        found.setdefault((e_name, target), []).append(binned(est.estimate(sample), target))
                if progress is not None:
                    progress.update(1)
            for (e_name, target), estimates in found.items():
                bias = relative_bias(estimates, truth[target])
                for value, err in nrmse(estimates, truth[target]).items():
                    rows.append(dict(target=target, sampler=s_name, estimator=e_name, fraction=fraction, value=str(value),
                                     truth=truth[target][value], nrmse=err, rel_bias=bias[value]))
    return pd.DataFrame(rows)


def summarise(by_value: pd.DataFrame) -> pd.DataFrame:
    """One NRMSE per cell: the mean over values weighted by their true share."""
    w = by_value.assign(weighted=by_value.nrmse * by_value.truth)
    keys = ["graph", "target", "sampler", "estimator", "fraction"]
    out = w.groupby(keys, as_index=False)[["weighted", "truth"]].sum()
    return out.assign(nrmse=out.weighted / out.truth)[keys + ["nrmse"]]


def table_at(summary: pd.DataFrame, fraction: float) -> pd.DataFrame:
    at = summary[np.isclose(summary.fraction, fraction)]
    table = at.pivot_table(index=["sampler", "estimator"], columns=["graph", "target"], values="nrmse")
    table.columns = [f"{g} {t}" for g, t in table.columns]
    return table.reset_index()


def plot(summary: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for (graph, target), part in summary.groupby(["graph", "target"]):
        samplers = sorted(part.sampler.unique())
        # One colour per estimator in every panel (MLE appears in the UNI panel only).
        colours = {e: f"C{i}" for i, e in enumerate(sorted(part.estimator.unique()))}
        fig, axes = plt.subplots(1, len(samplers), figsize=(4 * len(samplers), 3.4), sharey=True, squeeze=False)
        for ax, s_name in zip(axes[0], samplers):
            for e_name, line in part[part.sampler == s_name].groupby("estimator"):
                line = line.sort_values("fraction")
                ax.plot(line.fraction * 100, line.nrmse, marker="o", color=colours[e_name], label=e_name)
            ax.set_title(s_name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("vertices sampled (%)")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel(f"NRMSE ({'omega' if target == 'copies' else 'label'})")
        handles = [plt.Line2D([], [], color=c, marker="o", label=e) for e, c in colours.items()]
        fig.legend(handles=handles, loc="upper right", ncol=len(handles))
        fig.suptitle(f"{graph}: {target}")
        fig.tight_layout()
        path = out / f"nrmse_{graph}_{target}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="focuscrawl experiment graph-estimation", description=__doc__.split("\n\n")[0])
    p.add_argument("--graphs", default="generated,wikispeedia", help="comma-separated: generated, wikispeedia")
    p.add_argument("--samplers", default="UNI,RW,MHRW,FS", help=f"comma-separated of {', '.join(SAMPLERS.names())}")
    p.add_argument("--estimators", default="NAIVE,MLE,SCE,WCE", help=f"comma-separated of {', '.join(ESTIMATORS.names())}")
    p.add_argument("--fractions", default="0.01,0.02,0.05,0.1,0.2", help="vertex-query budgets as fractions of |V|")
    p.add_argument("--runs", type=int, default=30, help="crawls per sampler and fraction")
    p.add_argument("--walkers", type=int, default=5, help="FS walkers")
    p.add_argument("--burn-in", type=int, default=0, help="draws dropped from the start of each crawl")
    p.add_argument("--report-fraction", type=float, default=0.1, help="fraction of the summary table")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", type=Path, help="real data folder (default: settings().data_dir)")
    p.add_argument("--output", type=Path, help="output folder (default: $FOCUSCRAWL_VAR/experiments/graph-estimation)")
    return p


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    args = build_parser().parse_args(argv)
    cfg = settings()
    out = args.output or cfg.var_dir / "experiments" / "graph-estimation"
    out.mkdir(parents=True, exist_ok=True)
    samplers = SAMPLERS.parse(args.samplers)
    estimators = ESTIMATORS.parse(args.estimators)
    fractions = [float(f) for f in args.fractions.split(",")]
    if not any(np.isclose(f, args.report_fraction) for f in fractions):
        fractions.append(args.report_fraction)
    graphs = [g.strip() for g in args.graphs.split(",") if g.strip()]
    frames = []
    with tqdm(total=len(graphs) * len(samplers) * len(fractions) * args.runs, desc="crawls", file=sys.stderr) as bar:
        for name in graphs:
            graph = load_graph(name, args.data_dir or cfg.data_dir, args.seed)
            bar.set_postfix_str(f"{name}: |V|={graph.num_vertices}")
            frame = run_grid(graph, samplers, estimators, fractions, args.runs, args.seed, args.walkers, args.burn_in, bar)
            frames.append(frame.assign(graph=name))
    by_value = pd.concat(frames, ignore_index=True)
    by_value.to_csv(out / "nrmse_by_value.csv", index=False)
    summary = summarise(by_value)
    summary.to_csv(out / "nrmse.csv", index=False)
    table = table_at(summary, args.report_fraction)
    stem = f"table_{round(args.report_fraction * 100)}pct"
    table.to_csv(out / f"{stem}.csv", index=False)
    markdown = table.to_markdown(index=False, floatfmt=".3f")
    (out / f"{stem}.md").write_text(
        f"NRMSE at {args.report_fraction:.0%} of the vertices, {args.runs} runs "
        "(mean over values weighted by their true share; MLE needs UNI)\n\n" + markdown + "\n"
    )
    plots = plot(summary, out)
    print(markdown)
    print(f"wrote {out}: nrmse.csv, nrmse_by_value.csv, {stem}.md, {len(plots)} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
