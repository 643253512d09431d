"""Spark job: page_snapshots + related_pages -> outlink_features (targets and LBLA features), seed 002 Sections 5-6.

    spark-submit spark_jobs/outlinks_features.py [--history-size N] [--target new_outlinks|new_relevant_outlinks]
        [--relevance-store DIR --relevance-model M --relevance-threshold T]   (defaults: OutlinksParams)

``--target new_relevant_outlinks`` counts only the outlinks about the page focus
(``focuscrawl.outlinks.targets``): a linked page's latest relevance, else its URL's words scored by the
champion page model of ``--relevance-store``, at or above ``--relevance-threshold``.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.lake.spark import IN_PROCESS
from focuscrawl.outlinks import frame_transforms, spark_transforms
from focuscrawl.outlinks.targets import keep_links
from focuscrawl.outlinks.params import DEFAULT, FEATURE_KNOBS
from focuscrawl.outlinks.tables import FEATURES, RELATED_PAGES, SNAPSHOTS
from focuscrawl.core.params import add_arguments
from focuscrawl.relevance.score import add_relevance_arguments


def url_scorer(store: str, model: str):
    """``score_texts(texts)`` by the champion page model in ``store`` (None each before one was trained);
    plain strings inside, so Spark can ship it to the executors."""

    def score_texts(texts: list[str]) -> list[float | None]:
        from focuscrawl.relevance.score import PageScorer

        loaded = PageScorer(store, model).current()
        if loaded is None:
            return [None] * len(texts)
        return [float(p) for p in loaded[1].predict_proba(list(texts))]

    return score_texts


def run(spark, cfg: Settings, history_size: int = DEFAULT.history_size, target: str = DEFAULT.target,
        relevance: tuple[str, str, float] | None = None) -> int:
    """``relevance``: ``(store, model, threshold)`` of the page focus, needed by ``new_relevant_outlinks``."""
    snapshots = lake.read(spark, SNAPSHOTS, cfg)
    counted = None
    if target == "new_relevant_outlinks":
        store, model, threshold = relevance
        relevant = spark_transforms.relevant_links(snapshots, url_scorer(store, model), threshold)
        print(f"outlinks_features: {len(relevant)} distinct outlinks about the page focus count as new relevant outlinks")
        counted = spark_transforms.only_relevant_links(snapshots, relevant)
    out = spark_transforms.features(snapshots, lake.read(spark, RELATED_PAGES, cfg), history_size, counted)
    lake.overwrite(out, FEATURES, cfg)
    return lake.read(spark, FEATURES, cfg).count()


def run_in_process(cfg: Settings, history_size: int = DEFAULT.history_size, target: str = DEFAULT.target,
                   relevance: tuple[str, str, float] | None = None) -> int:
    """:func:`run` on pandas in this process (``focuscrawl.outlinks.frame_transforms``), for a small lake."""
    snapshots = lake.to_pandas(SNAPSHOTS, cfg)
    counted = None
    if target == "new_relevant_outlinks":
        store, model, threshold = relevance
        relevant = frame_transforms.relevant_links(snapshots, url_scorer(store, model), threshold)
        print(f"outlinks_features: {len(relevant)} distinct outlinks about the page focus count as new relevant outlinks")
        counted = keep_links(snapshots, relevant)
    out = frame_transforms.features(snapshots, lake.to_pandas(RELATED_PAGES, cfg), history_size, counted)
    return lake.replace_frame(out, FEATURES, cfg)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session, in_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, FEATURE_KNOBS)
    add_relevance_arguments(ap)
    args = ap.parse_args(argv)
    if args.target == "new_relevant_outlinks" and not args.relevance_store:
        ap.error("--target new_relevant_outlinks judges links by the page focus: give --relevance-store (the "
                 "project's page model store, written by focuscrawl train), or --target new_outlinks")
    cfg = settings()
    relevance = (args.relevance_store, args.relevance_model, args.relevance_threshold) if args.relevance_store else None
    local = in_process(SNAPSHOTS, cfg)
    n = (run_in_process(cfg, args.history_size, args.target, relevance) if local
         else run(get_session("outlinks_features", cfg=cfg), cfg, args.history_size, args.target, relevance))
    print(f"outlinks_features: {n} rows -> {FEATURES.path(cfg)}{IN_PROCESS if local else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
