"""``focuscrawl experiment graph-estimation``: NRMSE and bias of every estimator x sampler, over sampling
fractions and over how strongly labels depend on exposure.

Seed 003, *Fast crawling methods of exploring content distributed over large graphs* (abstract, experiments): crawl a fraction of the vertices with
UNI, RW, MHRW and FS, estimate the copy-count distribution (omega) and the label distribution with
NAIVE, MLE (UNI only, appendix 1.1, |V| estimated from the same sample), SCE and WCE, and compare
with the ground truth over repeated runs. Graphs: ``generated`` (power-law graph with Zipf content,
:mod:`focuscrawl.graph.synthetic`) and ``wikispeedia`` (real hyperlinks, :mod:`focuscrawl.graph.wikispeedia`).

The *sweep* regenerates the generated graph at each ``--label-correlations``
strength (same graph and copies, only the labels change) and measures, at ``--sweep-fraction``, the
relative bias of every estimator on the most exposed label: the seed's claim is that naive's bias
grows with the dependence while SCE and WCE stay (asymptotically) unbiased.

Every figure comes with a 95% bootstrap interval over the independent crawls of its cell. Writes
under ``--output``: ``estimates.csv.gz`` (every crawl's estimate: the raw rows), ``truth.csv``,
``run.json`` (parameters, seeds, data versions, git commit) and the tables rebuilt from those three by
:func:`build_outputs`, which ``focuscrawl report graph-estimation --run DIR`` calls again:
``nrmse_by_value.csv``, ``nrmse.csv``, ``table_<f>pct.md``/``.csv``, ``sweep.csv``, ``sweep.md``, PNGs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.core.commandline import parser
from focuscrawl.config import settings
from focuscrawl.experiments.run_record import add_draft_argument
from focuscrawl.graph.access import InMemoryGraph
from focuscrawl.graph.estimators import ESTIMATORS, TARGETS, estimates_of
from focuscrawl.graph.evaluation import binned, difference_interval, estimate_matrix, run_bootstrap
from focuscrawl.graph.samplers import SAMPLERS

NAME = "graph-estimation"
LEVEL = 0.95
ESTIMATE_COLUMNS = ["graph", "label_correlation", "sampler", "estimator", "target", "fraction", "run", "value", "share"]


def load_graph(name: str, data_dir: Path | None, seed: int, label_correlation: float | None = None) -> InMemoryGraph:
    if name == "generated":
        from focuscrawl.graph.synthetic import synthetic_graph

        return synthetic_graph(seed=seed) if label_correlation is None else synthetic_graph(seed=seed, label_correlation=label_correlation)
    if name == "wikispeedia":
        from focuscrawl.graph.wikispeedia import load_wikispeedia

        if data_dir is None:
            raise SystemExit("wikispeedia needs the real data folder: set FOCUSCRAWL_DATA or pass --data-dir")
        return load_wikispeedia(Path(data_dir) / "wikispeedia")
    raise SystemExit(f"unknown graph {name!r}; known: generated, wikispeedia")


def _sampler(name: str, walkers: int, burn_in: int):
    return SAMPLERS.create(name, walkers=walkers, burn_in=burn_in) if name == "FS" else SAMPLERS.create(name, burn_in=burn_in)


def crawl_estimates(
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
    """One row per (crawl, estimator, target, value): the raw estimates. A crawl on which an estimator
    cannot estimate (MLE when no vertex was drawn twice, so |V| is unknown) gets one row with value
    NaN, so the tables can say how many crawls each cell rests on."""
    rows = []
    for s_name in samplers:
        sampler = _sampler(s_name, walkers, burn_in)
        for fraction in fractions:
            budget = max(2, round(fraction * graph.num_vertices))
            for run in range(runs):
                rng = np.random.default_rng([seed, run, int(fraction * 1e6), SAMPLERS.names().index(s_name)])
                sample = sampler.sample(graph.access(budget, rng), rng)
                for e_name, target, found in estimates_of(sample, estimators):
                    if found is None:
                        rows.append((s_name, e_name, target, fraction, run, None, np.nan))
                    else:
                        rows.extend((s_name, e_name, target, fraction, run, str(v), float(x))
                                    for v, x in binned(found, target).items())
                if progress is not None:
                    progress.update(1)
    return pd.DataFrame(rows, columns=["sampler", "estimator", "target", "fraction", "run", "value", "share"])


def truth_frame(graph: InMemoryGraph) -> pd.DataFrame:
    return pd.DataFrame(
        [(t, str(v), float(x)) for t in TARGETS for v, x in binned(graph.truth(t), t).items()], columns=["target", "value", "truth"]
    )


CELL = ["graph", "label_correlation", "sampler", "estimator", "target", "fraction"]


def _cell_matrix(cell: pd.DataFrame, keys: list[str]) -> np.ndarray:
    ok = cell[cell.value.notna()]
    shares = ok.pivot_table(index="run", columns="value", values="share", aggfunc="sum", fill_value=0.0)
    return estimate_matrix(shares.to_dict("records"), keys)


def by_value(estimates: pd.DataFrame, truth: pd.DataFrame, replicates: int = 500, seed: int = 0) -> pd.DataFrame:
    """NRMSE and relative bias per (cell, value), each with its 95% bootstrap interval over crawls (the crawls
    resampled with replacement), and the number of crawls the cell rests on (``runs``) and of those an
    estimator could not use (``failed``)."""
    rows = []
    tail = (1.0 - LEVEL) / 2 * 100
    for key, cell in estimates.groupby(CELL, dropna=False, sort=True):
        info = dict(zip(CELL, key))
        rho = -1.0 if pd.isna(info["label_correlation"]) else info["label_correlation"]
        t = truth[(truth.graph == info["graph"]) & np.isclose(truth.label_correlation.fillna(-1.0), rho) & (truth.target == info["target"])]
        keys, true = t.value.tolist(), t.truth.to_numpy()
        failed = int(cell[cell.value.isna()].run.nunique())
        err = _cell_matrix(cell, keys) - true
        if len(err) == 0:
            continue
        boot = err[np.random.default_rng(seed).integers(0, len(err), (replicates, len(err)))]
        nr_b = np.sqrt((boot**2).mean(axis=1)) / true
        rb_b = boot.mean(axis=1) / true
        nr_lo, nr_hi = np.percentile(nr_b, [tail, 100 - tail], axis=0)
        rb_lo, rb_hi = np.percentile(rb_b, [tail, 100 - tail], axis=0)
        nr, rb = np.sqrt((err**2).mean(axis=0)) / true, err.mean(axis=0) / true
        # The cell's one number (NRMSE weighted by the true shares) and its interval from the same replicates.
        share = true / true.sum()
        cell_lo, cell_hi = np.percentile(nr_b @ share, [tail, 100 - tail])
        for j, value in enumerate(keys):
            rows.append(dict(info, value=value, truth=true[j], runs=len(err), failed=failed, nrmse=nr[j], nrmse_low=nr_lo[j],
                             nrmse_high=nr_hi[j], rel_bias=rb[j], bias_low=rb_lo[j], bias_high=rb_hi[j],
                             cell_nrmse=float(nr @ share), cell_low=float(cell_lo), cell_high=float(cell_hi)))
    return pd.DataFrame(rows)


def nrmse_difference(estimates: pd.DataFrame, truth: pd.DataFrame, a: str, b: str, target: str, replicates: int = 1000,
                     seed: int = 0, **where) -> tuple[float, float, float]:
    """Cell NRMSE of estimator ``a`` minus ``b`` on the same crawls (``where`` picks sampler, fraction...),
    with the 95% interval of the difference, the crawls resampled jointly (paired): claim an ordering
    only when it excludes 0."""
    part = estimates[estimates.target == target]
    for k, v in where.items():
        part = part[np.isclose(part[k], v)] if isinstance(v, float) else part[part[k] == v]
    t = truth[truth.target == target]
    keys, true = t.value.tolist(), t.truth.to_numpy()
    share = true / true.sum()
    ea = _cell_matrix(part[part.estimator == a], keys) - true
    eb = _cell_matrix(part[part.estimator == b], keys) - true
    if ea.shape != eb.shape:
        raise ValueError(f"{a} and {b} were not estimated on the same crawls ({len(ea)} vs {len(eb)})")
    idx = np.random.default_rng(seed).integers(0, len(ea), (replicates, len(ea)))

    def cell(e):
        return (np.sqrt((e**2).mean(axis=-2)) / true) @ share

    diffs = cell(ea[idx]) - cell(eb[idx])
    tail = (1.0 - LEVEL) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(cell(ea) - cell(eb)), float(low), float(high)


def summarise(by_value: pd.DataFrame) -> pd.DataFrame:
    """One NRMSE per cell: the mean over values weighted by their true share, with the interval of that
    mean over the same bootstrap replicates (when :func:`by_value` computed it)."""
    frame = by_value.copy()
    if "label_correlation" not in frame:
        frame["label_correlation"] = np.nan
    keys = ["graph", "label_correlation", "target", "sampler", "estimator", "fraction"]
    w = frame.assign(weighted=frame.nrmse * frame.truth)
    out = w.groupby(keys, as_index=False, dropna=False)[["weighted", "truth"]].sum()
    out["nrmse"] = out.weighted / out.truth
    if "cell_low" in frame:
        ends = frame.groupby(keys, as_index=False, dropna=False)[["cell_low", "cell_high"]].first()
        out = out.merge(ends.rename(columns={"cell_low": "nrmse_low", "cell_high": "nrmse_high"}), on=keys, how="left")
        return out[keys + ["nrmse", "nrmse_low", "nrmse_high"]]
    return out[keys + ["nrmse"]]


def table_at(summary: pd.DataFrame, fraction: float) -> pd.DataFrame:
    at = summary[np.isclose(summary.fraction, fraction)].copy()
    if "nrmse_low" in at:
        at["cell"] = [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in zip(at.nrmse, at.nrmse_low, at.nrmse_high)]
        table = at.pivot_table(index=["sampler", "estimator"], columns=["graph", "target"], values="cell", aggfunc="first")
    else:
        table = at.pivot_table(index=["sampler", "estimator"], columns=["graph", "target"], values="nrmse")
    table.columns = [f"{g} {t}" for g, t in table.columns]
    return table.reset_index()


def top_label(truth: pd.DataFrame) -> str:
    labels = sorted(truth[truth.target == "label"].value.unique(), key=lambda v: (len(v), v))
    return labels[-1]


def sweep_table(estimates: pd.DataFrame, truth: pd.DataFrame, replicates: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (strength, sampler, estimator): relative bias of the most exposed label with its interval over
    crawls; and the claims: per sampler and estimator, bias at the strongest minus the weakest dependence
    (interval of the difference), and whether the bias interval at each strength holds 0."""
    sweep = estimates[(estimates.graph == "generated") & estimates.label_correlation.notna() & (estimates.target == "label")]
    rows = []
    if sweep.empty:
        return pd.DataFrame(), pd.DataFrame()
    label = top_label(truth[truth.label_correlation.notna()])
    per = {}
    for (rho, s_name, e_name, fraction), cell in sweep.groupby(["label_correlation", "sampler", "estimator", "fraction"]):
        t = truth[np.isclose(truth.label_correlation.fillna(-1), rho) & (truth.target == "label")]
        keys, true = t.value.tolist(), t.truth.to_numpy()
        est = _cell_matrix(cell, keys)
        j = keys.index(label)
        rel = (est[:, j] - true[j]) / true[j]
        per[(rho, s_name, e_name)] = rel
        b = run_bootstrap(rel, lambda r: float(r.mean()), replicates, LEVEL, seed)
        tv = run_bootstrap(est - true, lambda e: float(0.5 * np.abs(e.mean(axis=0)).sum()), replicates, LEVEL, seed)
        spearman = float(t.spearman.iloc[0]) if "spearman" in t else np.nan
        rows.append(dict(label_correlation=rho, spearman=spearman, sampler=s_name, estimator=e_name, fraction=fraction,
                         label=label, runs=len(est), failed=int(cell[cell.value.isna()].run.nunique()),
                         rel_bias=b[0], bias_low=b[1], bias_high=b[2], tv_of_mean=tv[0], tv_low=tv[1], tv_high=tv[2]))
    table = pd.DataFrame(rows)
    claims = []
    lo_rho, hi_rho = table.label_correlation.min(), table.label_correlation.max()
    for (s_name, e_name), part in table.groupby(["sampler", "estimator"]):
        if (hi_rho, s_name, e_name) not in per or (lo_rho, s_name, e_name) not in per:
            continue
        d = difference_interval(per[(hi_rho, s_name, e_name)], per[(lo_rho, s_name, e_name)], lambda r: float(r.mean()), replicates, LEVEL, seed)
        holds_zero = ((part.bias_low <= 0) & (part.bias_high >= 0))
        claims.append(dict(sampler=s_name, estimator=e_name, bias_growth=d[0], growth_low=d[1], growth_high=d[2],
                           growth_excludes_zero=bool(d[1] > 0 or d[2] < 0),
                           strengths_with_zero_in_interval=int(holds_zero.sum()), strengths=len(part)))
    return table, pd.DataFrame(claims)


def _sampler_panels(frame: pd.DataFrame, path: Path, draw, style, ylabel: str, title: str) -> Path:
    """A figure of one panel per sampler (y axis shared) with a line per estimator, each estimator in one
    colour in every panel (MLE appears in the UNI panel only): ``draw(ax, rows, colour, estimator)`` draws a
    line, ``style(ax)`` sets a panel's axes up; saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samplers = sorted(frame.sampler.unique())
    colours = {e: f"C{i}" for i, e in enumerate(sorted(frame.estimator.unique()))}
    fig, axes = plt.subplots(1, len(samplers), figsize=(4 * len(samplers), 3.4), sharey=True, squeeze=False)
    for ax, s_name in zip(axes[0], samplers):
        for e_name, line in frame[frame.sampler == s_name].groupby("estimator"):
            draw(ax, line, colours[e_name], e_name)
        ax.set_title(s_name)
        style(ax)
    axes[0][0].set_ylabel(ylabel)
    handles = [plt.Line2D([], [], color=c, marker="o", label=e) for e, c in colours.items()]
    fig.legend(handles=handles, loc="upper right", ncol=len(handles))
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sweep(table: pd.DataFrame, path: Path) -> Path:
    def draw(ax, line, colour, estimator):
        line = line.sort_values("spearman")
        ax.errorbar(line.spearman, line.rel_bias, yerr=[line.rel_bias - line.bias_low, line.bias_high - line.rel_bias],
                    marker="o", capsize=3, color=colour, label=estimator)

    def style(ax):
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xlabel("label-exposure correlation (Spearman)")
        ax.grid(True, alpha=0.3)

    return _sampler_panels(table, path, draw, style, f"relative bias of {table.label.iloc[0]} (95% CI)",
                           f"generated graph, {table.fraction.iloc[0]:.0%} of the vertices: label bias vs dependence "
                           "on exposure")


def plot(summary: pd.DataFrame, out: Path) -> list[Path]:
    def draw(ax, line, colour, estimator):
        line = line.sort_values("fraction")
        ax.plot(line.fraction * 100, line.nrmse, marker="o", color=colour, label=estimator)
        if "nrmse_low" in line:
            ax.fill_between(line.fraction * 100, line.nrmse_low, line.nrmse_high, color=colour, alpha=0.15)

    def style(ax):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("vertices sampled (%)")
        ax.grid(True, which="both", alpha=0.3)

    return [_sampler_panels(part, out / f"nrmse_{graph}_{target}.png", draw, style,
                            f"NRMSE ({'omega' if target == 'copies' else 'label'})", f"{graph}: {target}")
            for (graph, target), part in summary.groupby(["graph", "target"])]


def run_grid(graph: InMemoryGraph, samplers: list[str], estimators: list[str], fractions: list[float], runs: int, seed: int,
             walkers: int = 5, burn_in: int = 0, progress=None, replicates: int = 200) -> pd.DataFrame:
    """NRMSE and relative bias (with intervals) per (target, sampler, estimator, fraction, value) over ``runs`` crawls."""
    est = crawl_estimates(graph, samplers, estimators, fractions, runs, seed, walkers, burn_in, progress)
    est = est.assign(graph="g", label_correlation=np.nan)
    truth = truth_frame(graph).assign(graph="g", label_correlation=np.nan)
    return by_value(est, truth, replicates, seed).drop(columns=["graph", "label_correlation"])


def _fmt(m: float, lo: float, hi: float) -> str:
    return f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def build_outputs(out: Path, estimates: pd.DataFrame, truth: pd.DataFrame, params: dict) -> str:
    """Every table and plot from the raw rows (the experiment and ``focuscrawl report graph-estimation``
    both call this); returns the markdown printed."""
    replicates, seed, report_fraction = params["bootstrap"], params["seed"], params["report_fraction"]
    printed = []
    main = estimates[estimates.label_correlation.isna()]
    if not main.empty:
        values = by_value(main, truth, replicates, seed)
        values.to_csv(out / "nrmse_by_value.csv", index=False)
        summary = summarise(values)
        summary.to_csv(out / "nrmse.csv", index=False)
        table = table_at(summary, report_fraction)
        stem = f"table_{round(report_fraction * 100)}pct"
        table.to_csv(out / f"{stem}.csv", index=False)
        markdown = table.to_markdown(index=False)
        (out / f"{stem}.md").write_text(
            f"NRMSE at {report_fraction:.0%} of the vertices, {params['runs']} crawls per cell, 95% bootstrap interval over "
            "crawls (mean over values weighted by their true share; MLE needs UNI, |V| estimated by collisions)\n\n" + markdown + "\n"
        )
        plot(summary, out)
        printed.append(markdown)
    table, claims = sweep_table(estimates, truth, replicates, seed)
    if not table.empty:
        table.to_csv(out / "sweep.csv", index=False)
        claims.to_csv(out / "sweep_claims.csv", index=False)
        table = table.assign(cell=[_fmt(m, lo, hi) for m, lo, hi in zip(table.rel_bias, table.bias_low, table.bias_high)])
        wide = table.pivot_table(index=["sampler", "estimator"], columns="label_correlation", values="cell", aggfunc="first")
        rho = table.drop_duplicates("label_correlation").set_index("label_correlation").spearman
        wide.columns = [f"rho={c:g} (Spearman {rho[c]:.2f})" for c in wide.columns]
        failed = table.groupby(["sampler", "estimator"]).failed.sum()
        md = wide.reset_index().to_markdown(index=False)
        cl = claims.assign(growth=[_fmt(m, lo, hi) for m, lo, hi in zip(claims.bias_growth, claims.growth_low, claims.growth_high)])
        cl = cl[["sampler", "estimator", "growth", "growth_excludes_zero", "strengths_with_zero_in_interval", "strengths"]]
        text = (
            f"Relative bias of {table.label.iloc[0]} (the most exposed label) at {table.fraction.iloc[0]:.0%} of the vertices, "
            f"{int(table.runs.max())} crawls per cell, 95% bootstrap interval over crawls; columns: label_correlation "
            "(and the measured Spearman correlation between label and exposure)\n\n" + md + "\n\n"
            "Bias at the strongest dependence minus at the weakest (interval of the difference), and at how many "
            "strengths the bias interval holds 0:\n\n" + cl.to_markdown(index=False) + "\n"
        )
        if failed.sum():
            text += "\nCrawls on which MLE could not estimate |V| (no vertex drawn twice): " + ", ".join(
                f"{s} {e}: {n}" for (s, e), n in failed.items() if n) + "\n"
        (out / "sweep.md").write_text(text)
        plot_sweep(table, out / "sweep_label_correlation.png")
        printed.append(text)
    return "\n\n".join(printed)


def build_parser() -> argparse.ArgumentParser:
    p = parser("focuscrawl experiment graph-estimation", __doc__,
               "focuscrawl experiment graph-estimation --graphs generated --runs 10 --label-correlations ''",
               "focuscrawl experiment graph-estimation --output /tmp/ge   # then: focuscrawl report graph-estimation --run /tmp/ge")
    p.add_argument("--graphs", default="generated,wikispeedia", help="comma-separated: generated, wikispeedia ('' for the sweep only)")
    p.add_argument("--samplers", default="UNI,RW,MHRW,FS", help=f"comma-separated of {', '.join(SAMPLERS.names())}")
    p.add_argument("--estimators", default="NAIVE,MLE,SCE,WCE", help=f"comma-separated of {', '.join(ESTIMATORS.names())}")
    p.add_argument("--fractions", default="0.01,0.02,0.05,0.1,0.2", help="vertex-query budgets as fractions of |V|")
    p.add_argument("--runs", type=int, default=30, help="crawls per sampler and fraction")
    p.add_argument("--walkers", type=int, default=5, help="FS walkers")
    p.add_argument("--burn-in", type=int, default=0, help="draws dropped from the start of each crawl")
    p.add_argument("--report-fraction", type=float, default=0.1, help="fraction of the summary table")
    p.add_argument("--label-correlations", default="0,0.25,0.5,0.75,1",
                   help="sweep: label dependence on exposure of the generated graph ('' for no sweep)")
    p.add_argument("--sweep-fraction", type=float, default=0.1, help="vertex budget of the sweep")
    p.add_argument("--sweep-runs", type=int, default=100,
                   help="crawls per sweep cell (UNI and MHRW see hubs rarely: their estimates are skewed and need many crawls)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates of every interval (over crawls)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", type=Path, help="real data folder (default: settings().data_dir)")
    p.add_argument("--output", type=Path, help="output folder (default: $FOCUSCRAWL_VAR/experiments/graph-estimation)")
    add_draft_argument(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from focuscrawl.experiments.run_record import start_run, write_run_json
    from focuscrawl.graph.synthetic import label_exposure_correlation

    args = build_parser().parse_args(argv)
    cfg = settings()
    out = args.output or cfg.var_dir / "experiments" / NAME
    code = start_run(out, args.draft)
    samplers = SAMPLERS.parse(args.samplers)
    estimators = ESTIMATORS.parse(args.estimators)
    fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    if not any(np.isclose(f, args.report_fraction) for f in fractions):
        fractions.append(args.report_fraction)
    graphs = [g.strip() for g in args.graphs.split(",") if g.strip()]
    strengths = [float(r) for r in args.label_correlations.split(",") if r.strip()]
    data_dir = args.data_dir or cfg.data_dir
    frames, truths = [], []
    total = (len(graphs) * len(fractions) * args.runs + len(strengths) * args.sweep_runs) * len(samplers)
    with tqdm(total=total, desc="crawls", file=sys.stderr) as bar:
        for name in graphs:
            graph = load_graph(name, data_dir, args.seed)
            bar.set_postfix_str(f"{name}: |V|={graph.num_vertices}")
            frame = crawl_estimates(graph, samplers, estimators, fractions, args.runs, args.seed, args.walkers, args.burn_in, bar)
            frames.append(frame.assign(graph=name, label_correlation=np.nan))
            truths.append(truth_frame(graph).assign(graph=name, label_correlation=np.nan, spearman=np.nan))
        for rho in strengths:
            graph = load_graph("generated", data_dir, args.seed, label_correlation=rho)
            bar.set_postfix_str(f"sweep label_correlation={rho:g}")
            frame = crawl_estimates(graph, samplers, estimators, [args.sweep_fraction], args.sweep_runs, args.seed, args.walkers, args.burn_in, bar)
            frames.append(frame.assign(graph="generated", label_correlation=rho))
            truths.append(truth_frame(graph).assign(graph="generated", label_correlation=rho, spearman=label_exposure_correlation(graph)))
    estimates = pd.concat(frames, ignore_index=True)[ESTIMATE_COLUMNS]
    truth = pd.concat(truths, ignore_index=True)
    estimates.to_csv(out / "estimates.csv.gz", index=False)
    truth.to_csv(out / "truth.csv", index=False)
    params = {k: v for k, v in vars(args).items() if k not in ("output", "draft")}
    params.update(samplers=samplers, estimators=estimators, fractions=fractions, graphs=graphs, label_correlations=strengths)
    data = {"wikispeedia": Path(data_dir) / "wikispeedia"} if "wikispeedia" in graphs and data_dir else {}
    write_run_json(out, NAME, params, {"seed": args.seed, "crawl_rng": "default_rng([seed, run, int(fraction*1e6), sampler index])",
                                       "graph_seed": args.seed}, data, code=code, draft=args.draft,
                   outputs=["estimates.csv.gz", "truth.csv"])
    printed = build_outputs(out, estimates, truth, params)
    print(printed)
    print(f"wrote {out}: run.json, estimates.csv.gz, truth.csv and the tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
