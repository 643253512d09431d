"""Spark job: page_snapshots -> page_embeddings (TF-IDF + LSA per page), seed 002 Section 7.

    spark-submit spark_jobs/outlinks_embed.py [--dimensions N] [--sample-size N] (defaults: OutlinksParams)
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.outlinks import spark_transforms
from focuscrawl.outlinks.params import DEFAULT, EMBED_KNOBS
from focuscrawl.outlinks.tables import EMBEDDINGS, SNAPSHOTS
from focuscrawl.params import add_arguments


def run(spark, cfg: Settings, dimensions: int = DEFAULT.dimensions, sample_size: int = DEFAULT.sample_size) -> int:
    out = spark_transforms.embed(lake.read(spark, SNAPSHOTS, cfg), dimensions, sample_size).cache()
    lake.overwrite(out, EMBEDDINGS, cfg)
    n = out.count()
    out.unpersist()
    return n


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.spark import get_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, EMBED_KNOBS)
    args = ap.parse_args(argv)
    cfg = settings()
    n = run(get_session("outlinks_embed", cfg=cfg), cfg, args.dimensions, args.sample_size)
    print(f"outlinks_embed: {n} pages -> {EMBEDDINGS.path(cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
