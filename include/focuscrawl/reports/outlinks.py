"""``focuscrawl report outlinks``: the seed-002 evaluation in the paper's form (Section 7).

    focuscrawl report outlinks [--pages 2000] [--periods 12] [--history-size 8] [--world | --lake] [--models ...]
    focuscrawl report outlinks --run DIR   # rebuild the tables of a `focuscrawl experiment outlinks` run

- a Spearman table (Figure 14): every ranking (models, LBLA variants, baselines NNL-Av, NNL-Pr, CCR)
  against the ground-truth rankings LCR, NL and NNL, for internal and external outlinks;
- Precision@k% curves for NNL with their areas (Figure 15), as a PNG;
- feature importances of the ExtraTrees and NGBoost models, and LBLA versus all features.

Data: synthetic snapshots by default (focuscrawl.outlinks.synthetic); ``--world`` for the default
world's web revisited weekly by the page revisitor (in process: the world's pages are rendered
without HTTP, on a clock the report moves a week at a time; every evergreen page is known from the
start, as from a sitemap); or ``--lake`` for the ``outlink_features`` table the Spark jobs wrote. Files go to ``--out`` (default
``$FOCUSCRAWL_VAR/reports/outlinks``): spearman.csv, pk_area.csv, precision_at_k.png, report.md, results.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.core.commandline import parser
from focuscrawl.config import settings
from focuscrawl.outlinks.evaluation import PERCENTS
from focuscrawl.outlinks.experiment import ExperimentResult, prepare, run_experiment
from focuscrawl.outlinks.models import model_specs
from focuscrawl.outlinks.synthetic import generate_snapshots


class WorldPages:
    """The world's web as a revisitor ``source``, called in process at the simulated time ``now[0]``."""

    def __init__(self, web, now: list[float]) -> None:
        self.web = web
        self.now = now

    def get(self, url: str) -> bytes:
        from urllib.parse import urlsplit

        status, _, body = self.web.crawl(urlsplit(url).path, {}, self.now[0])
        if status != 200:
            raise LookupError(f"{url}: HTTP {status}")
        return body


def world_snapshots(weeks: int, seed: int = 0, max_pages: int | None = None) -> tuple[pd.DataFrame, str]:
    """Weekly snapshots of the default world's evergreen pages (Wikispeedia's when the real data is
    there) taken by :class:`~focuscrawl.outlinks.revisit.PageRevisitor`; and a description."""
    from focuscrawl.outlinks.revisit import WEEK, PageRevisitor
    from focuscrawl.outlinks.urls import virtual_host_domain
    from focuscrawl.world.web import build_web

    cfg = settings()
    start = 1_700_000_000.0  # the world's default start epoch
    web = build_web(seed, start, cfg.data_dir, cfg.var_dir)
    now = [start]
    rows: list[dict] = []
    base = "http://world.invalid"
    revisitor = PageRevisitor(WorldPages(web, now), rows.append, lambda: now[0], origin=start,
                              domain_of=virtual_host_domain())
    pages = range(len(web.names)) if max_pages is None else range(min(max_pages, len(web.names)))
    revisitor.add(base + web.page_path(p) for p in pages)
    for week in range(weeks):
        now[0] = start + week * WEEK
        while revisitor.revisit_next() is not None or revisitor.due():
            pass
    frame = pd.DataFrame(rows).astype({"period": "int32", "status": "int32"})
    kind = "Wikispeedia" if cfg.data_dir is not None and (cfg.data_dir / "wikispeedia").is_dir() else "generated"
    return frame, f"default world ({kind} web, seed {seed}): {revisitor.status()['known']} pages x {weeks} weekly revisits"


def plot_precision(result: ExperimentResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scopes = sorted({s for s, _ in result.pk_curves}, reverse=True)
    fig, axes = plt.subplots(1, len(scopes), figsize=(6 * len(scopes), 4.5), squeeze=False)
    for ax, scope in zip(axes[0], scopes):
        for (s, name), curve in result.pk_curves.items():
            if s != scope:
                continue
            area = result.pk_area.loc[(scope, name), "pk_area"]
            style = "--" if name in ("NNL-Av", "NNL-Pr", "CCR") else "-"
            ax.plot(PERCENTS, curve * 100, style, label=f"{name} ({area:.3f})", linewidth=1.2)
        ax.plot(PERCENTS, PERCENTS, ":", color="grey", label="random (0.500)")
        ax.set(title=f"NNL, {scope}ernal outlinks", xlabel="k (%)", ylabel="Precision@k% (%)", xlim=(0, 100),
               ylim=(0, 100))
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def top_importances(result: ExperimentResult, n: int = 8) -> pd.DataFrame:
    rows = []
    for (scope, name), imp in result.importances.items():
        if not name.startswith("NNL-"):
            continue
        for feature, value in sorted(imp.items(), key=lambda kv: -kv[1])[:n]:
            rows.append({"scope": scope, "model": name, "feature": feature, "importance": round(value, 4)})
    return pd.DataFrame(rows)


def lbla_versus_all(result: ExperimentResult) -> pd.DataFrame:
    """Per learned model and scope: Spearman against its own target and P@k% area, all features vs LBLA."""
    own = {"LCR": "LCR", "NL": "NL", "PNL": "NL", "NNL": "NNL"}
    rows = []
    for (scope, name) in result.spearman.index:
        if name.endswith("_LBLA") or (scope, f"{name}_LBLA") not in result.spearman.index:
            continue
        truth = own[name.split("-")[0]]
        lbla = f"{name}_LBLA"
        rows.append({"scope": scope, "model": name, "truth": truth,
                     "rho_all": result.spearman.loc[(scope, name), truth],
                     "rho_lbla": result.spearman.loc[(scope, lbla), truth],
                     "pk_area_all": result.pk_area.loc[(scope, name), "pk_area"],
                     "pk_area_lbla": result.pk_area.loc[(scope, lbla), "pk_area"]})
    return pd.DataFrame(rows).round(3)


def markdown(frame: pd.DataFrame) -> str:
    frame = frame.reset_index() if frame.index.name or isinstance(frame.index, pd.MultiIndex) else frame
    cols = list(frame.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _rebuild(run, out, record) -> str:
    from focuscrawl.experiments.outlinks import build_outputs

    return build_outputs(out, pd.read_csv(run / "predictions.csv.gz"), record["parameters"])


def main(argv: list[str] | None = None) -> int:
    import sys

    argv = sys.argv[1:] if argv is None else list(argv)
    if "--run" in argv:
        from focuscrawl.experiments.run_record import report_main

        return report_main(argv, "outlinks", "Rebuild the tables of a `focuscrawl experiment outlinks` run from its "
                           "run.json and held-out predictions.", ["predictions.csv.gz"], _rebuild)
    ap = parser("focuscrawl report outlinks", __doc__, "focuscrawl report outlinks --pages 500 --models NNL-ET,NNL-NGB",
                "focuscrawl report outlinks --lake          # the live outlink_features table",
                "focuscrawl report outlinks --run /tmp/ol   # rebuild a `focuscrawl experiment outlinks` run")
    ap.add_argument("--pages", type=int, help="synthetic pages (default 2000); with --world, the world's first N pages "
                                              "(default all)")
    ap.add_argument("--periods", type=int, default=12, help="synthetic weekly snapshots (history + 2 training weeks + 1 held out)")
    ap.add_argument("--history-size", type=int, default=8, help="look-back intervals (8, as in the paper, Section 7)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-estimators", type=int, default=100, help="trees / boosting rounds")
    source = ap.add_mutually_exclusive_group()
    source.add_argument("--world", action="store_true", help="revisit the default world's pages for --periods weeks")
    source.add_argument("--lake", action="store_true", help="use the outlink_features Delta table instead")
    ap.add_argument("--models", help=f"comma-separated subset of {', '.join(model_specs())} (default: all)")
    ap.add_argument("--out", type=Path, help="output folder")
    args = ap.parse_args(argv)
    cfg = settings()
    out = args.out or cfg.var_dir / "reports" / "outlinks"
    out.mkdir(parents=True, exist_ok=True)
    if args.lake:
        from focuscrawl.lake import to_pandas
        from focuscrawl.outlinks.tables import FEATURES

        features, source = to_pandas(FEATURES, cfg), f"Delta table {FEATURES.path(cfg)}"
    elif args.world:
        snapshots, source = world_snapshots(args.periods, seed=args.seed, max_pages=args.pages)
        features = prepare(snapshots, history_size=args.history_size)
    else:
        pages = args.pages or 2000
        snapshots = generate_snapshots(n_pages=pages, n_periods=args.periods, seed=args.seed)
        features = prepare(snapshots, history_size=args.history_size)
        source = f"synthetic snapshots: {pages} pages x {args.periods} weekly periods, seed {args.seed}"
    specs = model_specs()
    if args.models:
        specs = {name: specs[name] for name in args.models.split(",")}
    result = run_experiment(features, args.history_size, specs=specs, seed=args.seed,
                            n_estimators=args.n_estimators, min_samples_leaf=10)
    rho = result.spearman.round(3).unstack(0).swaplevel(axis=1).sort_index(axis=1)
    area = result.pk_area["pk_area"].round(3).unstack(0)
    importances = top_importances(result)
    lbla = lbla_versus_all(result)
    rho.to_csv(out / "spearman.csv")
    area.to_csv(out / "pk_area.csv")
    plot_precision(result, out / "precision_at_k.png")
    rho.columns = [f"{s}:{t}" for s, t in rho.columns]
    text = "\n\n".join([
        f"# Look back, look around: new-outlink prediction ({source})",
        f"Trained on {result.n_train} page-periods, evaluated on the held-out period ({result.n_test} pages).",
        "## Spearman's rho against the ground-truth rankings (Figure 14)", markdown(rho),
        "## Precision@k% area, NNL (Figure 15; plot: precision_at_k.png)", markdown(area),
        "## LBLA versus all features", markdown(lbla),
        "## Feature importances (top 8)", markdown(importances),
    ])
    (out / "report.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({
        "source": source,
        "spearman": {f"{s}/{m}": r for (s, m), r in result.spearman.round(4).to_dict("index").items()},
        "pk_area": {f"{s}/{m}": float(v) for (s, m), v in result.pk_area["pk_area"].round(4).items()},
        "pk_curve": {f"{s}/{m}": np.round(c, 4).tolist() for (s, m), c in result.pk_curves.items()},
    }, indent=1))
    print(text)
    print(f"\nwritten to {out}")
    return 0
