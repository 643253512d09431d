"""``focuscrawl experiment page-relevance``: how well the page relevance models judge the world's pages.

The evaluation side of the page focus. A project's example pages (``projects/world.toml`` by
default) are read from a world built in this process, each registered model is fitted on them as
``focuscrawl train`` fits it (:func:`focuscrawl.relevance.train.fit_and_measure`: a stratified split by
page, figures on the held-out example pages), and then judged on pages of the world that are *not*
among the examples (disjoint by canonical URL, checked), labelled by the world's hidden topic label
(:meth:`focuscrawl.world.web.Web.topic_of`: the category of the real page served). The focus topic is
the top-level category most of the positive examples carry, read from the same hidden labels: the
project never names it. Every figure is an AUC or a precision at the operating threshold with a 95 %
percentile bootstrap interval over the judged pages, for each seed (the seed draws the split and the
judged pages). Writes ``results.json`` and ``run.json`` under ``--output``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

NAME = "page_relevance"


def world_fetch(web, now: float):
    """``url -> (body, url)`` answered by ``web`` in this process (what the world's HTTP server serves)."""

    def fetch(url: str) -> tuple[bytes, str]:
        status, _, body = web.crawl(urlsplit(url).path, {}, now)
        if status != 200:
            raise LookupError(f"{url}: the world answers {status}; list a page it serves")
        return body, url

    return fetch


def focus_topic(web, pages, now: float) -> str:
    """The top-level category most positive example pages carry (hidden labels: evaluation only)."""
    tops = Counter((web.topic_of(urlsplit(p.key).path, now) or "?").split(".")[0] for p in pages if p.label == 1)
    return tops.most_common(1)[0][0]


def judged_pages(web, origin: str, exclude: set[str], n: int, seed: int) -> list[tuple[str, int]]:
    """``n`` evergreen pages of ``web`` (URL, page index) drawn with ``seed``, none of them in ``exclude``
    (canonical URLs)."""
    from focuscrawl.parse.canon import canonical_url

    rng = np.random.default_rng(seed)
    out = []
    for p in rng.permutation(len(web.names)).tolist():
        url = origin + web.page_path(p)
        if canonical_url(url) not in exclude:
            out.append((url, p))
        if len(out) >= n:
            break
    return out


def judge(model, web, examples, threshold: float, n: int, seed: int, now: float, origin: str) -> dict:
    """Figures of a fitted ``model`` on ``n`` world pages disjoint from ``examples``."""
    from focuscrawl.outlinks.revisit import page_content
    from focuscrawl.parse.canon import canonical_url
    from focuscrawl.parse.text import page_text
    from focuscrawl.relevance.evaluation import held_out_metrics

    topic = focus_topic(web, examples, now)
    pages = judged_pages(web, origin, {p.key for p in examples}, n, seed)
    overlap = {canonical_url(u) for u, _ in pages} & {p.key for p in examples}
    assert not overlap, f"judged pages overlap the examples: {sorted(overlap)[:3]}"
    texts = []
    for url, p in pages:
        body = web.crawl(web.page_path(p), {}, now)[2]
        texts.append(page_text(body, url, visible_text=page_content(body, url)[0]).main_text)
    labels = np.array([int(web.topic[p].split(".")[0] == topic) for _, p in pages])
    figures = held_out_metrics(labels, model.predict_proba(texts), threshold, seed=seed)
    return {"topic": topic, **figures}


def run(project, cfg, models: list[str], seeds: list[int], n: int, log=print) -> dict:
    from focuscrawl.relevance.examples import distinct, read_example_pages
    from focuscrawl.relevance.train import fit_and_measure, in_languages
    from focuscrawl.world.web import build_web

    focus = project.profile.pages
    if focus is None:
        raise SystemExit("the project declares no [profile.pages]; give one with example pages (see projects/world.toml)")
    now = 1_700_000_000.0
    web = build_web(0, now, cfg.data_dir, cfg.var_dir)
    origin = cfg.world_url.rstrip("/")
    pages = in_languages(distinct(read_example_pages(focus.positives, focus.negatives, focus.examples,
                                                     project.profile.query, world_fetch(web, now))),
                         project.profile.languages)
    rows = []
    for name in models:
        for seed in seeds:
            model, split, examples = fit_and_measure(pages, name, focus.threshold, focus.held_out, seed)
            world = judge(model, web, pages, focus.threshold, n, seed, now, origin)
            rows.append({"model": name, "seed": seed, "train_pages": len(split.train),
                         "held_out_examples": examples, "world": world})
            a = world["auc"]
            log(f"{name} seed {seed}: world AUC {a['value']:.3f} [{a['low']:.3f}, {a['high']:.3f}] on {world['pages']} "
                f"pages ({world['relevant']} about {world['topic']}); precision at {focus.threshold:g} "
                f"{world['precision_at_threshold']['value']}")
    return {"examples": len(pages), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.core.commandline import parser
    from focuscrawl.config import settings
    from focuscrawl.experiments.run_record import add_draft_argument, start_run, write_run_json
    from focuscrawl.project.loading import load_project
    from focuscrawl.relevance.models import PAGE_MODELS

    command = f"focuscrawl experiment {NAME.replace('_', '-')}"
    p = parser(command, __doc__, command, f"{command} --models TFIDF-LR --seeds 0,1,2 --pages 300")
    p.add_argument("--project", type=Path, default=Path("projects/world.toml"), help="project whose [profile.pages] to use")
    p.add_argument("--models", default=",".join(PAGE_MODELS.names()), help="registered page relevance models")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma list: each draws a split and the judged pages")
    p.add_argument("--pages", type=int, default=600, help="world pages judged per seed (disjoint from the examples)")
    p.add_argument("--output", type=Path, help=f"folder (default: $FOCUSCRAWL_VAR/experiments/{NAME})")
    add_draft_argument(p)
    args = p.parse_args(argv)
    cfg = settings()
    out = args.output or Path(cfg.var_dir) / "experiments" / NAME
    code = start_run(out, args.draft)  # the code as the run starts
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    result = run(load_project(args.project), cfg, PAGE_MODELS.parse(args.models), seeds, args.pages,
                 log=lambda line: print(line, file=sys.stderr))
    (out / "results.json").write_text(json.dumps(result, indent=1))
    write_run_json(out, NAME, vars(args), seeds, data={"wikispeedia": Path(cfg.data_dir or ".") / "wikispeedia"},
                   code=code, draft=args.draft, outputs=["results.json"])
    print(out / "results.json")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
