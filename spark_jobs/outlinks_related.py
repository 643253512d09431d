"""Spark job: page_embeddings -> related_pages (k most similar pages on FAISS), seed 002 Section 7.

    spark-submit spark_jobs/outlinks_related.py [--k N] [--method EXACT|HNSW|IVF] [--n-probe 16] [--ef-search 96]

The index is built once on the driver and shipped with the search function; the queries are partitioned
over the executors.
FAISS's OpenBLAS kernels are pinned first thing (``focuscrawl.core.blas``), before the session starts, so
the driver and the Python workers it starts load FAISS on this CPU's kernels.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.lake.spark import IN_PROCESS
from focuscrawl.outlinks import frame_transforms, spark_transforms
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.related import RELATED
from focuscrawl.outlinks.tables import EMBEDDINGS, RELATED_PAGES
from focuscrawl.core.params import add_arguments

# The command-line knob each method takes (the others keep their defaults).
METHOD_OPTIONS = {"IVF": "n_probe", "HNSW": "ef_search"}


def run(spark, cfg: Settings, k: int = DEFAULT.k, method: str = DEFAULT.method, **options) -> int:
    out = spark_transforms.related(lake.read(spark, EMBEDDINGS, cfg), k=k, method=method, **options)
    lake.overwrite(out, RELATED_PAGES, cfg)
    return lake.read(spark, RELATED_PAGES, cfg).count()


def run_in_process(cfg: Settings, k: int = DEFAULT.k, method: str = DEFAULT.method, **options) -> int:
    """:func:`run` on pandas in this process (``focuscrawl.outlinks.frame_transforms``), for a small lake."""
    out = frame_transforms.related(lake.to_pandas(EMBEDDINGS, cfg), k=k, method=method, **options)
    return lake.replace_frame(out, RELATED_PAGES, cfg)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.core.blas import pin_openblas_kernels
    from focuscrawl.lake.spark import get_session, in_process

    pin_openblas_kernels()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, ["k"])
    ap.add_argument("--method", default=DEFAULT.method, type=str.upper, choices=RELATED.names())
    ap.add_argument("--n-probe", type=int, default=None, help="IVF: cells scanned per query")
    ap.add_argument("--ef-search", type=int, default=None, help="HNSW: candidates kept per query")
    args = ap.parse_args(argv)
    cfg = settings()
    knob = METHOD_OPTIONS.get(args.method)
    value = getattr(args, knob) if knob else None
    options = {knob: value} if value is not None else {}
    local = in_process(EMBEDDINGS, cfg)
    n = (run_in_process(cfg, args.k, args.method, **options) if local
         else run(get_session("outlinks_related", cfg=cfg), cfg, args.k, args.method, **options))
    print(f"outlinks_related: {n} pairs -> {RELATED_PAGES.path(cfg)}{IN_PROCESS if local else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
