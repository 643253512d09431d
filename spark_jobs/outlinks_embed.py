"""Spark job: page_snapshots -> page_embeddings (TF-IDF + LSA per page), seed 002 Section 7.

    spark-submit spark_jobs/outlinks_embed.py [--dimensions 100] [--sample-size 50000]
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.outlinks import spark_transforms
from focuscrawl.outlinks.tables import EMBEDDINGS, SNAPSHOTS


def run(spark, cfg: Settings, dimensions: int = 100, sample_size: int = 50_000) -> int:
    out = spark_transforms.embed(lake.read(spark, SNAPSHOTS, cfg), dimensions, sample_size).cache()
    lake.overwrite(out, EMBEDDINGS, cfg)
    n = out.count()
    out.unpersist()
    return n


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.spark import get_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dimensions", type=int, default=100, help="LSA dimensions")
    ap.add_argument("--sample-size", type=int, default=50_000, help="pages the TF-IDF/SVD is fitted on")
    args = ap.parse_args(argv)
    cfg = settings()
    n = run(get_session("outlinks_embed", cfg=cfg), cfg, args.dimensions, args.sample_size)
    print(f"outlinks_embed: {n} pages -> {EMBEDDINGS.path(cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
