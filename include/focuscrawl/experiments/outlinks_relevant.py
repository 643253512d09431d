"""``focuscrawl experiment outlinks-relevant``: do revisits trained on new relevant outlinks find more of them?

``[loops.revisits] target = "new_relevant_outlinks"`` trains the seed-002 models (same features, same
estimators) on only the new outlinks about the page focus. This experiment compares it with the seed's
``new_outlinks`` on the synthetic worlds of :func:`focuscrawl.outlinks.synthetic.labelled_snapshots`,
whose outlinks carry a hidden relevant/not label that only this evaluation reads. Per seed:

1. the page focus's judge is fitted as ``focuscrawl train`` fits it
   (:func:`focuscrawl.relevance.train.fit_and_measure`, the project's threshold and held-out share) on
   example pages drawn as the world draws a page's text, none of them a page of the world; each
   registered page model in ``--judges`` is one judge;
2. every outlink is judged as the live loop judges it (:func:`focuscrawl.outlinks.targets.link_relevance`:
   no link target of the synthetic world is ever fetched, so the judge scores the words of its URL) and
   the snapshots are cut to the links judged relevant (:func:`focuscrawl.outlinks.targets.keep_links`);
3. each model of ``--models`` is trained on the history periods once on ``new_outlinks`` and once per
   judge on ``new_relevant_outlinks`` (:func:`focuscrawl.outlinks.experiment.run_experiment`), internal
   and external separately; a page's score is its predicted internal plus external count;
4. on the held-out period the top k pages by score are revisited, k a share of the pages (``--budgets``).

Metric: **relevant new pages found per revisit**, the revisited pages' new outlinks whose hidden label is
relevant, divided by k; beside it all new outlinks per revisit (the trade). For scale: the oracle (the
top k by true relevant new outlinks) and random revisits (their expectation, the mean over pages).
The comparison is paired by seed: relevant target minus all target, mean over seeds with a 95%
t-interval, and a Bonferroni interval over the family of every (judge, model, budget) cell of a metric;
an ordering is claimed only where the Bonferroni interval excludes 0.

Writes under ``--output``: ``revisits.csv.gz`` (raw rows: every held-out page's score under every
model and target, and its true new and relevant new outlinks), ``judges.csv`` (each judge's figures per
seed), ``run.json``, and from them (:func:`build_outputs`, which ``focuscrawl report outlinks-relevant
--run DIR`` calls again) ``relevant.md``, ``relevant.csv``, ``differences.csv``, ``relevant.png``.
See docs/loops/outlinks.md#relevant-new-outlinks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from focuscrawl.config import settings
from focuscrawl.core.commandline import parser
from focuscrawl.experiments.run_record import add_draft_argument

NAME = "outlinks-relevant"
ALL, RELEVANT = "new_outlinks", "new_relevant_outlinks"
LEVEL = 0.95
METRICS = {"relevant_per_revisit": "relevant new per revisit", "new_per_revisit": "all new per revisit"}


def held_out_truth(snapshots: pd.DataFrame, relevant_links: set[str], period: int) -> pd.DataFrame:
    """Per page of ``period``: its new outlinks (``new``) and those with a relevant hidden label (``relevant_new``)."""
    from focuscrawl.outlinks.targets import keep_links, targets

    def count(t: pd.DataFrame) -> pd.Series:
        t = t[t.period == period]
        return pd.Series((t.nnl_int + t.nnl_ext).to_numpy(int), index=t.url.to_numpy())

    new = count(targets(snapshots))
    return pd.DataFrame({"url": new.index, "new": new.to_numpy(),
                         "relevant_new": count(targets(keep_links(snapshots, relevant_links))).reindex(new.index).to_numpy()})


def fit_judge(world, name: str, threshold: float, held_out: float, positives: int, negatives: int, seed: int):
    """``(model, held-out figures)``: the page model ``name`` fitted as ``focuscrawl train`` fits it, on
    example pages none of which is a page of ``world``."""
    from focuscrawl.outlinks.synthetic import example_pages
    from focuscrawl.relevance.examples import ExamplePage, page_key
    from focuscrawl.relevance.train import fit_and_measure

    texts, labels = example_pages(world, positives, negatives, seed)
    pages = [ExamplePage(page_key(None, text), label, text, None, "synthetic") for text, label in zip(texts, labels)]
    model, _, figures = fit_and_measure(pages, name, threshold, held_out, seed)
    return model, figures


def run_seed(seed: int, pages: int, periods: int, history_size: int, models: list[str], judges: list[str],
             labels, threshold: float, held_out: float, positives: int, negatives: int, n_estimators: int,
             dimensions: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(rows, judge figures)`` of one world: every held-out page's score under every model and target."""
    from focuscrawl.outlinks.embedding import LsaEmbedder
    from focuscrawl.outlinks.experiment import latest_texts, related_frame, run_experiment
    from focuscrawl.outlinks.features import build_features
    from focuscrawl.outlinks.models import model_specs
    from focuscrawl.outlinks.related import related_pages
    from focuscrawl.outlinks.synthetic import labelled_snapshots
    from focuscrawl.outlinks.targets import LINK_COLUMNS, keep_links, link_relevance, targets

    world = labelled_snapshots(labels, n_pages=pages, n_periods=periods, seed=seed)
    snapshots = world.snapshots
    eval_period = periods - 1
    texts = latest_texts(snapshots, eval_period)
    idx, sims = related_pages(LsaEmbedder(dimensions=dimensions).fit_transform(texts["text"].tolist()), k=30)
    related = related_frame(texts["url"].tolist(), idx, sims)
    links = [u for column in LINK_COLUMNS.values() for links in snapshots[column] for u in links]
    truly = set(world.truth.link[world.truth.relevant])
    counted = {(ALL, "-"): snapshots}
    judged_rows = []
    for name in judges:
        model, figures = fit_judge(world, name, threshold, held_out, positives, negatives, seed)
        # No link target of the synthetic world is fetched: every link is judged by its URL's words.
        scores = link_relevance(links, {}, lambda words: [float(p) for p in model.predict_proba(words)])
        judged = {u for u, r in scores.items() if r is not None and r >= threshold}
        counted[(RELEVANT, name)] = keep_links(snapshots, judged)
        judged_rows.append({"seed": seed, "judge": name, "example_auc": figures["auc"]["value"],
                            "links": len(scores), "truly_relevant": len(truly & scores.keys()),
                            "judged_relevant": len(judged), "precision": len(judged & truly) / max(1, len(judged)),
                            "recall": len(judged & truly) / max(1, len(truly & scores.keys()))})
    specs = {name: model_specs()[name] for name in models}
    truth = held_out_truth(snapshots, truly, eval_period)
    frames = []
    for (target, judge), kept in counted.items():
        features = build_features(snapshots, targets(kept), related, history_size)
        result = run_experiment(features, history_size, eval_period, specs=specs, seed=seed,
                                n_estimators=n_estimators, min_samples_leaf=10)
        score = result.predictions.groupby(["model", "url"], as_index=False)["predicted"].sum()
        frames.append(score.merge(truth, on="url", how="left").assign(seed=seed, target=target, judge=judge))
    rows = pd.concat(frames, ignore_index=True)
    return rows[["seed", "target", "judge", "model", "url", "predicted", "new", "relevant_new"]], pd.DataFrame(judged_rows)


def revisit(scores: np.ndarray, new: np.ndarray, relevant_new: np.ndarray, k: int, seed: int) -> tuple[float, float]:
    """``(relevant new per revisit, all new per revisit)`` of revisiting the top ``k`` pages by ``scores``
    (ties broken by a permutation drawn from ``seed``)."""
    tie = np.random.default_rng(seed).permutation(len(scores))
    top = np.lexsort((tie, -np.asarray(scores, float)))[:k]
    return float(np.asarray(relevant_new)[top].sum() / k), float(np.asarray(new)[top].sum() / k)


def budget_label(share: float) -> str:
    return f"{share * 100:g}%"


def per_seed(rows: pd.DataFrame, budgets: list[float]) -> pd.DataFrame:
    """Per seed, ranking and budget: relevant new and all new outlinks per revisit. Rankings: each
    (target, judge, model), the oracle (true relevant new) and random revisits (their expectation)."""
    out = []
    for seed, part in rows.groupby("seed"):
        pages = part[(part.target == ALL)].drop_duplicates("url").sort_values("url")
        for share in budgets:
            k = max(1, int(round(share * len(pages))))
            cell = {"seed": seed, "budget": budget_label(share), "k": k}
            for (target, judge, model), g in part.groupby(["target", "judge", "model"]):
                g = g.sort_values("url")
                rel, new = revisit(g.predicted.to_numpy(), g.new.to_numpy(), g.relevant_new.to_numpy(), k, seed)
                out.append({**cell, "target": target, "judge": judge, "model": model,
                            "relevant_per_revisit": rel, "new_per_revisit": new})
            rel, new = revisit(pages.relevant_new.to_numpy(), pages.new.to_numpy(), pages.relevant_new.to_numpy(), k, seed)
            out.append({**cell, "target": "-", "judge": "-", "model": "oracle", "relevant_per_revisit": rel,
                        "new_per_revisit": new})
            out.append({**cell, "target": "-", "judge": "-", "model": "random", "relevant_per_revisit":
                        float(pages.relevant_new.mean()), "new_per_revisit": float(pages.new.mean())})
    return pd.DataFrame(out)


def differences(seeds: pd.DataFrame) -> pd.DataFrame:
    """Relevant target minus all target, paired by seed, per (judge, model, budget) and metric: mean, 95%
    t-interval, and the Bonferroni interval over the metric's family of cells; ``ordering`` where it excludes 0."""
    from focuscrawl.experiments.ephemeral import t_interval

    base = seeds[seeds.target == ALL].set_index(["seed", "model", "budget"])
    ours = seeds[seeds.target == RELEVANT]
    cells = list(ours.groupby(["judge", "model", "budget"], sort=False))
    rows = []
    for (judge, model, budget), part in cells:
        part = part.set_index(["seed", "model", "budget"])
        row = {"judge": judge, "model": model, "budget": budget, "seeds": len(part), "family": len(cells)}
        for metric in METRICS:
            d = part[metric] - base.loc[part.index, metric]
            m, lo, hi = t_interval(d, LEVEL)
            _, blo, bhi = t_interval(d, 1 - (1 - LEVEL) / len(cells))
            row.update({metric: m, f"{metric}_low": lo, f"{metric}_high": hi, f"{metric}_bonf_low": blo,
                        f"{metric}_bonf_high": bhi,
                        f"{metric}_ordering": "more" if blo > 0 else "fewer" if bhi < 0 else "tie"})
        rows.append(row)
    return pd.DataFrame(rows)


def summary(seeds: pd.DataFrame) -> pd.DataFrame:
    """Per ranking and budget: each metric's mean over seeds with its 95% t-interval."""
    from focuscrawl.experiments.ephemeral import t_interval

    rows = []
    for (target, judge, model, budget), part in seeds.groupby(["target", "judge", "model", "budget"], sort=False):
        row = {"target": target, "judge": judge, "model": model, "budget": budget, "k": int(part.k.iloc[0]),
               "seeds": len(part)}
        for metric in METRICS:
            m, lo, hi = t_interval(part[metric], LEVEL)
            row.update({metric: m, f"{metric}_low": lo, f"{metric}_high": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def _fmt(m, lo, hi, sign: str = "") -> str:
    return f"{m:{sign}.2f} [{lo:{sign}.2f}, {hi:{sign}.2f}]"


def plot(diff: pd.DataFrame, budgets: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(len(budgets))
    lines = list(diff.groupby(["judge", "model"], sort=False))
    for ax, (metric, label) in zip(axes, METRICS.items()):
        for n, ((judge, model), part) in enumerate(lines):
            part = part.set_index("budget").loc[budgets]
            offset = (n - (len(lines) - 1) / 2) * 0.08
            ax.errorbar(x + offset, part[metric], yerr=[part[metric] - part[f"{metric}_bonf_low"],
                                                        part[f"{metric}_bonf_high"] - part[metric]],
                        marker="o", capsize=3, label=f"{model}, judge {judge}")
        ax.axhline(0, color="k", lw=0.8)
        ax.set(xticks=x, xticklabels=budgets, xlabel="revisit budget (share of pages)",
               title=f"{label}: relevant target - all target")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("paired difference (Bonferroni interval over seeds)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_outputs(out: Path, rows: pd.DataFrame, judges: pd.DataFrame, params: dict) -> str:
    """Tables and plot from the raw rows (the experiment and ``focuscrawl report outlinks-relevant --run``)."""
    budgets = [float(b) for b in params["budgets"]]
    seeds = per_seed(rows, budgets)
    table = summary(seeds)
    table.to_csv(out / "relevant.csv", index=False)
    diff = differences(seeds)
    diff.to_csv(out / "differences.csv", index=False)
    view = table[["model", "target", "judge", "budget", "k"]].assign(**{
        label: [_fmt(*r) for r in zip(table[m], table[f"{m}_low"], table[f"{m}_high"])] for m, label in METRICS.items()})
    dview = diff[["judge", "model", "budget"]].assign(**{
        k: v for m, label in METRICS.items() for k, v in (
            (f"{label}: 95%", [_fmt(*r, sign="+") for r in zip(diff[m], diff[f"{m}_low"], diff[f"{m}_high"])]),
            (f"{label}: Bonferroni", [_fmt(*r, sign="+") for r in zip(diff[m], diff[f"{m}_bonf_low"], diff[f"{m}_bonf_high"])]),
            (f"{label}: ordering", diff[f"{m}_ordering"]))})
    jview = judges.groupby("judge", sort=False).agg(
        seeds=("seed", "size"), example_auc=("example_auc", "mean"), links=("links", "mean"),
        truly_relevant=("truly_relevant", "mean"), judged_relevant=("judged_relevant", "mean"),
        precision=("precision", "mean"), recall=("recall", "mean")).reset_index()
    labels = params["labels"]
    text = (f"Revisits trained on new relevant outlinks against new outlinks: synthetic worlds of {params['pages']} pages "
            f"x {params['periods']} weeks (history {params['history_size']}, held-out last week), hidden labels "
            f"share ~ Beta(mean {labels['share_mean']:g}, concentration {labels['share_concentration']:g}), topic word in "
            f"the URL with probability {labels['url_topic_word']:g}; seeds {', '.join(map(str, params['seeds']))}.\n\n"
            "The judges (page models fitted on example pages, threshold "
            f"{params['threshold']:g}) on the world's outlinks, mean over seeds: how many links each judged relevant and "
            "its precision and recall against the hidden label\n\n" + jview.to_markdown(index=False, floatfmt=".3f") +
            "\n\nPer revisit on the held-out week, mean over seeds with a 95% t-interval (oracle: top k by true relevant "
            "new outlinks; random: the expectation)\n\n" + view.to_markdown(index=False) +
            f"\n\nRelevant target minus all target, paired by seed: mean with its 95% t-interval and its Bonferroni "
            f"interval over the {len(diff)} (judge, model, budget) cells of each metric; an ordering (more / fewer / "
            "tie) only where the Bonferroni interval excludes 0\n\n" + dview.to_markdown(index=False) + "\n")
    (out / "relevant.md").write_text(text)
    plot(diff, [budget_label(b) for b in budgets], out / "relevant.png")
    return text


def build_parser():
    p = parser(f"focuscrawl experiment {NAME}", __doc__, f"focuscrawl experiment {NAME} --pages 300 --seeds 0,1",
               f"focuscrawl experiment {NAME} --output /tmp/or   # then: focuscrawl report {NAME} --run /tmp/or")
    p.add_argument("--pages", type=int, default=1000)
    p.add_argument("--periods", type=int, default=12, help="weekly snapshots (history + 2 training weeks + 1 held out)")
    p.add_argument("--history-size", type=int, default=8, help="look-back intervals (the paper's 8)")
    p.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9", help="world seeds (each: a world, its labels, its examples)")
    p.add_argument("--models", default="NNL-ET,NNL-Av", help="seed-002 models (focuscrawl.outlinks.models.model_specs)")
    p.add_argument("--judges", default="TFIDF-LR,LSA-LR", help="registered page relevance models judging the links")
    p.add_argument("--budgets", default="0.05,0.1,0.2", help="revisit budgets, shares of the pages")
    p.add_argument("--threshold", type=float, default=0.5, help="the page focus's threshold ([profile.pages] default)")
    p.add_argument("--held-out", type=float, default=0.3, help="share of example pages held out ([profile.pages] default)")
    p.add_argument("--positives", type=int, default=20, help="example pages about the focus")
    p.add_argument("--negatives", type=int, default=60, help="example pages about other topics")
    p.add_argument("--share-mean", type=float, default=0.5, help="mean of the topics' relevant share (Beta)")
    p.add_argument("--share-concentration", type=float, default=2.0, help="a + b of the Beta (2: uniform with mean 0.5)")
    p.add_argument("--url-topic-word", type=float, default=0.5, help="probability a link's URL carries a topic word")
    p.add_argument("--n-estimators", type=int, default=50)
    p.add_argument("--dimensions", type=int, default=50, help="LSA dimensions of the related-pages embedding")
    p.add_argument("--output", type=Path)
    add_draft_argument(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.experiments.run_record import start_run, write_run_json
    from focuscrawl.outlinks.models import model_specs
    from focuscrawl.outlinks.synthetic import LinkLabels
    from focuscrawl.relevance.models import PAGE_MODELS

    args = build_parser().parse_args(argv)
    out = args.output or settings().var_dir / "experiments" / NAME
    code = start_run(out, args.draft)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    models = [m for m in args.models.split(",") if m]
    unknown = set(models) - set(model_specs())
    if unknown:
        raise SystemExit(f"unknown --models {sorted(unknown)}; known: {', '.join(model_specs())}")
    judges = PAGE_MODELS.parse(args.judges)
    budgets = [float(b) for b in args.budgets.split(",") if b.strip()]
    labels = LinkLabels(args.share_mean, args.share_concentration, args.url_topic_word)
    frames, judged = [], []
    for seed in seeds:
        print(f"seed {seed}", file=sys.stderr)
        rows, figures = run_seed(seed, args.pages, args.periods, args.history_size, models, judges, labels,
                                 args.threshold, args.held_out, args.positives, args.negatives, args.n_estimators,
                                 args.dimensions)
        frames.append(rows)
        judged.append(figures)
    rows, judged = pd.concat(frames, ignore_index=True), pd.concat(judged, ignore_index=True)
    rows.to_csv(out / "revisits.csv.gz", index=False)
    judged.to_csv(out / "judges.csv", index=False)
    params = {k: v for k, v in vars(args).items() if k not in ("output", "draft")}
    params.update(seeds=seeds, models=models, judges=judges, budgets=budgets,
                  labels={"share_mean": labels.share_mean, "share_concentration": labels.share_concentration,
                          "url_topic_word": labels.url_topic_word})
    write_run_json(out, NAME, params, {"worlds": seeds, "labels": "default_rng([seed, 1])",
                                       "examples": "default_rng([seed, 1, 1])", "models and judges": "the world's seed"},
                   code=code, draft=args.draft, outputs=["revisits.csv.gz", "judges.csv"])
    text = build_outputs(out, rows, judged, params)
    print(text)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
