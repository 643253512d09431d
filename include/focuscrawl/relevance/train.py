"""``focuscrawl train``'s step for pages (and the ``page_relevance`` DAG's): fit, measure, version, promote.

1. read the project's example pages (:mod:`focuscrawl.relevance.examples`; URLs fetched once through
   the fetch layer of the project's site for their origin, so its User-Agent, politeness and
   robots.txt apply), one page per identity, pages outside ``[profile] languages`` left out;
2. split them by page, stratified (:func:`focuscrawl.relevance.evaluation.split_pages`): no page is
   both trained on and measured on;
3. fit the project's registered model (``[profile.pages] model``) on the training pages and measure
   it on the held-out ones: AUC and precision at the operating threshold, with bootstrap intervals;
4. register the fitted model as the next version in the model store (the one the revisits loop's
   models use, :class:`focuscrawl.outlinks.store.ModelStore`) under
   ``$FOCUSCRAWL_VAR/models/<project>/pages/<MODEL>/v<N>``, with ``evaluation.json`` (the figures)
   and ``split.json`` (which pages trained it, which measured it) beside it, and promote it to
   champion when its held-out AUC is not worse than the current champion's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np

from focuscrawl.relevance.evaluation import held_out_metrics, split_pages
from focuscrawl.relevance.examples import ACCEPT, ExampleError, ExamplePage, distinct, read_example_pages

METRIC = "auc"  # what promotion compares: the held-out AUC


def store_for(project, cfg):
    """The model store of ``project``'s page relevance models."""
    return page_store(cfg, project.name)


def page_store(cfg, project_name: str):
    """The page relevance model store of the project named ``project_name``
    (``$FOCUSCRAWL_VAR/models/<project>/pages``)."""
    from focuscrawl.outlinks.store import ModelStore

    return ModelStore(Path(cfg.var_dir) / "models" / project_name / "pages", metric=METRIC)


class SiteFetch:
    """``url -> (body, final URL)`` through the fetcher of the project's site serving the URL's origin
    (the first site when none does): its User-Agent, politeness and robots.txt. ``close()`` closes them."""

    def __init__(self, project, cfg) -> None:
        self.project, self.cfg = project, cfg
        self._fetchers: dict[str, object] = {}

    @staticmethod
    def _origin(url: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    def __call__(self, url: str) -> tuple[bytes, str]:
        from focuscrawl.fetch.site import fetcher_for_site

        site = next((s for s in self.project.sites if self._origin(s.url(self.cfg)) == self._origin(url)),
                    self.project.sites[0])
        if site.name not in self._fetchers:
            self._fetchers[site.name] = fetcher_for_site(site, self.cfg)
        result = self._fetchers[site.name].fetch(url, accept=ACCEPT)
        return result.body, result.url

    def close(self) -> None:
        for fetcher in self._fetchers.values():
            fetcher.close()
        self._fetchers.clear()


def in_languages(pages: Sequence[ExamplePage], languages: Sequence[str]) -> list[ExamplePage]:
    """The pages in one of ``languages`` (all when empty; a page too short to tell is kept)."""
    if not languages:
        return list(pages)
    return [p for p in pages if p.language is None or p.language in languages]


@dataclass(frozen=True)
class Trained:
    """What one training run produced: the registered version and its held-out figures."""

    name: str
    version: int
    promoted: bool
    reason: str
    evaluation: dict
    path: Path

    def to_json(self) -> dict:
        return {"model": self.name, "version": self.version, "promoted": self.promoted, "reason": self.reason,
                "path": str(self.path), **self.evaluation}

    def summary(self) -> str:
        auc, prec = self.evaluation["auc"], self.evaluation["precision_at_threshold"]
        fmt = lambda d: "n/a" if d["value"] is None else f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"  # noqa: E731
        return (f"page relevance {self.name} v{self.version}: held-out AUC {fmt(auc)}, precision at "
                f"{self.evaluation['threshold']:g} {fmt(prec)} on {self.evaluation['pages']} pages "
                f"({self.evaluation['relevant']} relevant); {'promoted' if self.promoted else 'kept champion'}: {self.reason}")


def fit_and_measure(pages: Sequence[ExamplePage], model_name: str, threshold: float, held_out: float, seed: int = 0):
    """``(fitted model, split, held-out figures)`` of ``model_name`` on distinct ``pages``."""
    from focuscrawl.relevance.models import PAGE_MODELS

    split = split_pages(pages, held_out, seed)
    model = PAGE_MODELS.create(model_name, seed=seed).fit([p.text for p in split.train], [p.label for p in split.train])
    scores = model.predict_proba([p.text for p in split.held_out])
    figures = held_out_metrics(np.array([p.label for p in split.held_out]), scores, threshold, seed=seed)
    figures["train_pages"] = len(split.train)
    return model, split, figures


def train_page_model(project, cfg, *, fetch=None, seed: int = 0, log=print) -> Trained:
    """Train, measure, register and maybe promote ``project``'s page relevance model (see the module)."""
    from focuscrawl.outlinks.store import ModelVersion

    focus = project.profile.pages
    if focus is None:
        raise ExampleError("profile.pages", "is not declared; add [profile.pages] with positives and negatives "
                                            "(example pages) to train a page relevance model")
    started = time.monotonic()
    own = SiteFetch(project, cfg) if fetch is None else None
    try:
        read = read_example_pages(focus.positives, focus.negatives, focus.examples, project.profile.query, fetch or own)
    finally:
        if own is not None:
            own.close()
    pages = distinct(read)
    kept = in_languages(pages, project.profile.languages)
    if len(kept) < len(pages):
        log(f"train: {len(pages) - len(kept)} example page(s) left out: not in languages "
            f"{', '.join(project.profile.languages)}")
    for label, role in ((1, "positives"), (0, "negatives")):
        if not any(p.label == label for p in kept):
            raise ExampleError("profile.languages", f"leaves no {role[:-1]} example page (languages found: "
                                                    f"{sorted({str(p.language) for p in pages if p.label == label})}); "
                                                    "add that language to languages or give pages in yours")
    log(f"train: {len(kept)} example pages ({sum(p.label for p in kept)} about the topic) read in "
        f"{time.monotonic() - started:.1f}s")
    model, split, figures = fit_and_measure(kept, focus.model, focus.threshold, focus.held_out, seed)
    store = store_for(project, cfg)
    meta = store.register(ModelVersion(
        name=focus.model, version=0,
        metrics={"auc": figures["auc"]["value"], "auc_low": figures["auc"]["low"], "auc_high": figures["auc"]["high"],
                 "precision_at_threshold": figures["precision_at_threshold"]["value"]},
        data_version=0, eval_period=0, features=[], created_at=datetime.now(timezone.utc).isoformat(),
        params={"model": focus.model, "threshold": focus.threshold, "held_out": focus.held_out, "seed": seed,
                "languages": ",".join(project.profile.languages), "train_pages": len(split.train),
                "held_out_pages": len(split.held_out)}), model)
    folder = store._dir(meta.name) / f"v{meta.version}"
    (folder / "evaluation.json").write_text(json.dumps(figures, indent=1))
    (folder / "split.json").write_text(json.dumps({
        "seed": seed, "languages": list(project.profile.languages),
        "train": [[p.key, p.label, p.origin] for p in split.train],
        "held_out": [[p.key, p.label, p.origin] for p in split.held_out]}, indent=1))
    promoted, reason = store.promote_if_not_worse(meta)
    trained = Trained(meta.name, meta.version, promoted, reason, figures, folder)
    log(f"train: {trained.summary()} ({time.monotonic() - started:.1f}s)")
    return trained


__all__ = ["METRIC", "SiteFetch", "Trained", "fit_and_measure", "in_languages", "page_store", "store_for",
           "train_page_model"]
