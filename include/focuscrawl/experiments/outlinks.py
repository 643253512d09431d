"""``focuscrawl experiment outlinks``: seed 002 reported whole, with intervals, and the co-change sweep.

Seed 002 (*Look back, look around*), Section 7 (Table 4, Figures 14-15) on the synthetic snapshots of
:mod:`focuscrawl.outlinks.synthetic`, history 8 as in the paper (``--history-size``):

1. *Whole table*: every model of :func:`focuscrawl.outlinks.models.model_specs` (LCR-ET, NL-ET, PNL-ET,
   NNL-ET, NNL-NGB, each on all features and on LBLA, and the baselines NNL-Av, NNL-Pr, CCR) ranks the
   held-out period's pages; Spearman's rho against every ground truth (LCR, NL, NNL), internal and
   external outlinks, with a 95% bootstrap interval over the held-out pages, and the P@k% area (NNL).
2. *Co-change sweep*: at each ``--co-change`` strength and ``--seeds`` seed, the
   gain of NNL-ET_LBLA over NNL-Av (Spearman against NNL), and of all-features NNL-ET over it; the
   table gives the mean gain over seeds with its 95% t-interval: look-around pays where it excludes 0.

Writes under ``--output``: ``predictions.csv.gz`` (every held-out page's prediction of every model:
the raw rows), ``run.json``, and from them (:func:`build_outputs`, which ``focuscrawl report outlinks
--run DIR`` calls again) ``whole.md``/``.csv``, ``cochange.md``/``.csv``, ``cochange.png``.
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

NAME = "outlinks"
SWEEP_MODELS = ("NNL-ET_LBLA", "NNL-ET", "NNL-Av")
LEVEL = 0.95


def run_one(co_change: float, seed: int, pages: int, periods: int, history_size: int, models: list[str],
            n_estimators: int, dimensions: int) -> pd.DataFrame:
    """Held-out predictions of ``models`` on one synthetic world."""
    from focuscrawl.outlinks.experiment import prepare, run_experiment
    from focuscrawl.outlinks.models import model_specs
    from focuscrawl.outlinks.synthetic import generate_snapshots

    snapshots = generate_snapshots(n_pages=pages, n_periods=periods, seed=seed, co_change=co_change)
    features = prepare(snapshots, history_size=history_size, dimensions=dimensions)
    specs = {name: model_specs()[name] for name in models}
    result = run_experiment(features, history_size, specs=specs, seed=seed, n_estimators=n_estimators, min_samples_leaf=10)
    return result.predictions.assign(co_change=co_change, seed=seed)


def _spearman_boot(truth: np.ndarray, predicted: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Spearman's rho on each bootstrap replicate (rows of ``idx``): Pearson on average ranks."""
    from scipy.stats import rankdata

    t, p = truth[idx], predicted[idx]
    rt, rp = rankdata(t, axis=1), rankdata(p, axis=1)
    rt -= rt.mean(axis=1, keepdims=True)
    rp -= rp.mean(axis=1, keepdims=True)
    den = np.sqrt((rt**2).sum(axis=1) * (rp**2).sum(axis=1))
    return np.where(den > 0, (rt * rp).sum(axis=1) / np.where(den > 0, den, 1), 0.0)


def paired_difference(pred: pd.DataFrame, a: str, b: str, scope: str, target: str = "NNL", replicates: int = 500,
                      seed: int = 0) -> tuple[float, float, float]:
    """Spearman of model ``a`` minus model ``b`` on the same held-out pages, with the 95% interval of the
    difference over pages resampled jointly (paired): an ordering is claimed only where it excludes 0."""
    from focuscrawl.outlinks.evaluation import spearman

    part = pred[pred.scope == scope]
    pa = part[part.model == a].sort_values("url")
    pb = part[part.model == b].sort_values("url")
    if pa.url.tolist() != pb.url.tolist():
        raise ValueError(f"{a} and {b} did not rank the same pages")
    truth = pa[target].to_numpy(float)
    idx = np.random.default_rng(seed).integers(0, len(pa), (replicates, len(pa)))
    diffs = _spearman_boot(truth, pa.predicted.to_numpy(float), idx) - _spearman_boot(truth, pb.predicted.to_numpy(float), idx)
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(diffs, [tail, 100 - tail])
    return (spearman(truth, pa.predicted.to_numpy(float)) - spearman(truth, pb.predicted.to_numpy(float)), float(lo), float(hi))


def whole_table(pred: pd.DataFrame, replicates: int = 200, seed: int = 0) -> pd.DataFrame:
    """Per (scope, model): Spearman vs LCR, NL, NNL with page-bootstrap intervals, and the P@k% area (NNL)."""
    from focuscrawl.outlinks.evaluation import curve_area, precision_at_k_curve, spearman

    rows = []
    tail = (1 - LEVEL) / 2 * 100
    for (scope, model), part in pred.groupby(["scope", "model"], sort=False):
        part = part.sort_values("url")
        idx = np.random.default_rng(seed).integers(0, len(part), (replicates, len(part)))
        row = {"scope": scope, "model": model, "pages": len(part)}
        for target in ("LCR", "NL", "NNL"):
            truth, predicted = part[target].to_numpy(float), part.predicted.to_numpy(float)
            boot = _spearman_boot(truth, predicted, idx)
            lo, hi = np.percentile(boot, [tail, 100 - tail])
            row.update({target: spearman(truth, predicted), f"{target}_low": lo, f"{target}_high": hi})
        row["pk_area"] = curve_area(precision_at_k_curve(part["NNL"].to_numpy(float), part.predicted.to_numpy(float), seed=seed))
        rows.append(row)
    return pd.DataFrame(rows)


def cochange_table(pred: pd.DataFrame) -> pd.DataFrame:
    """Per (scope, strength): per-seed Spearman (vs NNL) gains of NNL-ET_LBLA and NNL-ET over NNL-Av, and
    of LBLA over all features; mean over seeds with its 95% t-interval."""
    from focuscrawl.experiments.ephemeral import t_interval
    from focuscrawl.outlinks.evaluation import spearman

    rho = (pred.groupby(["scope", "co_change", "seed", "model"])
           .apply(lambda g: spearman(g["NNL"].to_numpy(float), g.predicted.to_numpy(float)), include_groups=False)
           .unstack("model"))
    rows = []
    for (scope, c), part in rho.groupby(level=["scope", "co_change"]):
        row = {"scope": scope, "co_change": c, "seeds": len(part)}
        for name, a, b in (("lbla_minus_av", "NNL-ET_LBLA", "NNL-Av"), ("all_minus_av", "NNL-ET", "NNL-Av"),
                           ("lbla_minus_all", "NNL-ET_LBLA", "NNL-ET")):
            m, lo, hi = t_interval(part[a] - part[b], LEVEL)
            row.update({name: m, f"{name}_low": lo, f"{name}_high": hi})
        for model in SWEEP_MODELS:
            row[f"rho_{model}"] = float(part[model].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def _fmt(m, lo, hi) -> str:
    return f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def plot_cochange(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (scope, part) in zip(axes, table.groupby("scope", sort=False)):
        part = part.sort_values("co_change")
        for name, label in (("lbla_minus_av", "NNL-ET_LBLA - NNL-Av"), ("all_minus_av", "NNL-ET (all) - NNL-Av")):
            ax.errorbar(part.co_change, part[name], yerr=[part[name] - part[f"{name}_low"], part[f"{name}_high"] - part[name]],
                        marker="o", capsize=3, label=label)
        ax.axhline(0, color="k", lw=0.8)
        ax.set(title=f"{scope}ernal outlinks", xlabel="co-change strength of related pages")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gain in Spearman rho vs NNL (95% CI over seeds)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_outputs(out: Path, predictions: pd.DataFrame, params: dict) -> str:
    """Tables and plot from the raw predictions (the experiment and ``focuscrawl report outlinks --run`` call this)."""
    texts = []
    whole = predictions[predictions.part == "whole"]
    if not whole.empty:
        table = whole_table(whole, params.get("bootstrap", 200), params.get("seed", 0))
        table.to_csv(out / "whole.csv", index=False)
        view = table[["scope", "model"]].assign(**{
            f"rho vs {t}": [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in zip(table[t], table[f"{t}_low"], table[f"{t}_high"])]
            for t in ("LCR", "NL", "NNL")}, **{"P@k% area (NNL)": table.pk_area.round(3)})
        text = (f"Every model on every target, synthetic snapshots ({params['pages']} pages x {params['periods']} weeks, "
                f"co_change {params['whole_co_change']}, history {params['history_size']}), held-out week; Spearman's rho "
                "with a 95% bootstrap interval over the held-out pages\n\n" + view.to_markdown(index=False) + "\n")
        pairs = []
        own = {"LCR": "LCR", "NL": "NL", "PNL": "NL", "NNL": "NNL"}
        names = set(whole.model)
        for name in sorted(names):
            comparisons = []
            if not name.endswith("_LBLA") and f"{name}_LBLA" in names:
                comparisons.append((name, f"{name}_LBLA", own[name.split("-")[0]]))
            if name.startswith("NNL-") and name.endswith("_LBLA"):
                comparisons += [(name, b, "NNL") for b in ("NNL-Av", "NNL-Pr", "CCR") if b in names]
            for a, b, target in comparisons:
                for scope in ("int", "ext"):
                    d = paired_difference(whole, a, b, scope, target, params.get("bootstrap", 200), params.get("seed", 0))
                    pairs.append({"scope": scope, "a": a, "b": b, "truth": target, "a minus b": _fmt(*d),
                                  "significant": bool(d[1] > 0 or d[2] < 0)})
        pairs = pd.DataFrame(pairs)
        pairs.to_csv(out / "pairs.csv", index=False)
        text += ("\nPaired differences of Spearman's rho on the same held-out pages (95% bootstrap interval): all "
                 "features against LBLA, and LBLA against the baselines\n\n" + pairs.to_markdown(index=False) + "\n")
        (out / "whole.md").write_text(text)
        texts.append(text)
    sweep = predictions[predictions.part == "sweep"]
    if not sweep.empty:
        table = cochange_table(sweep)
        table.to_csv(out / "cochange.csv", index=False)
        view = table[["scope", "co_change", "seeds"]].assign(
            **{"LBLA - NNL-Av": [_fmt(*r) for r in zip(table.lbla_minus_av, table.lbla_minus_av_low, table.lbla_minus_av_high)],
               "all - NNL-Av": [_fmt(*r) for r in zip(table.all_minus_av, table.all_minus_av_low, table.all_minus_av_high)],
               "LBLA - all": [_fmt(*r) for r in zip(table.lbla_minus_all, table.lbla_minus_all_low, table.lbla_minus_all_high)],
               "rho NNL-Av": table["rho_NNL-Av"].round(3)})
        text = ("Co-change sweep: gain in Spearman's rho against NNL on the held-out week, mean over seeds with a 95% "
                "t-interval (look-around pays where LBLA - NNL-Av excludes 0)\n\n" + view.to_markdown(index=False) + "\n")
        (out / "cochange.md").write_text(text)
        plot_cochange(table, out / "cochange.png")
        texts.append(text)
    return "\n\n".join(texts)


def build_parser() -> argparse.ArgumentParser:
    p = parser("focuscrawl experiment outlinks", __doc__,
               "focuscrawl experiment outlinks --pages 500 --co-change ''",
               "focuscrawl experiment outlinks --output /tmp/ol   # then: focuscrawl report outlinks --run /tmp/ol")
    p.add_argument("--pages", type=int, default=1500)
    p.add_argument("--periods", type=int, default=12, help="weekly snapshots (history + 2 training weeks + 1 held out)")
    p.add_argument("--history-size", type=int, default=8, help="look-back intervals (the paper's 8)")
    p.add_argument("--whole-co-change", type=float, default=0.5, help="co-change strength of the whole table's world")
    p.add_argument("--co-change", default="0,0.25,0.5,0.75,1", help="swept strengths ('' for no sweep)")
    p.add_argument("--seeds", default="0,1,2", help="world seeds of the sweep")
    p.add_argument("--sweep-pages", type=int, default=800)
    p.add_argument("--models", help="whole table's models (default: all); '' for no whole table")
    p.add_argument("--n-estimators", type=int, default=50)
    p.add_argument("--dimensions", type=int, default=50, help="LSA dimensions of the related-pages embedding")
    p.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates over held-out pages")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole table's world")
    p.add_argument("--output", type=Path)
    add_draft_argument(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.experiments.run_record import start_run, write_run_json
    from focuscrawl.outlinks.models import model_specs

    args = build_parser().parse_args(argv)
    out = args.output or settings().var_dir / "experiments" / NAME
    code = start_run(out, args.draft)
    models = list(model_specs()) if args.models is None else [m for m in args.models.split(",") if m]
    strengths = [float(c) for c in args.co_change.split(",") if c.strip()]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    frames = []
    if models:
        print(f"whole table: {len(models)} models", file=sys.stderr)
        frames.append(run_one(args.whole_co_change, args.seed, args.pages, args.periods, args.history_size, models,
                              args.n_estimators, args.dimensions).assign(part="whole"))
    for c in strengths:
        for seed in seeds:
            print(f"sweep co_change={c:g} seed={seed}", file=sys.stderr)
            frames.append(run_one(c, seed, args.sweep_pages, args.periods, args.history_size, list(SWEEP_MODELS),
                                  args.n_estimators, args.dimensions).assign(part="sweep"))
    predictions = pd.concat(frames, ignore_index=True)
    predictions.to_csv(out / "predictions.csv.gz", index=False)
    params = {k: v for k, v in vars(args).items() if k not in ("output", "draft")}
    params.update(models=models, co_change=strengths, seeds=seeds)
    write_run_json(out, NAME, params, {"whole": args.seed, "sweep": seeds, "models": "seed of each world"},
                   code=code, draft=args.draft, outputs=["predictions.csv.gz"])
    text = build_outputs(out, predictions, params)
    print(text)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
