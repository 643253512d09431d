"""Spark job: page_snapshots -> page_embeddings (TF-IDF + LSA per page), seed 002 Section 7.

Each page's vector is of its latest text before the held-out (last) period, as the pandas path
(``experiment.prepare``) builds them: that period's texts never reach training or model selection.

    spark-submit spark_jobs/outlinks_embed.py [--dimensions N] [--sample-size N] (defaults: OutlinksParams)
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.lake.spark import IN_PROCESS
from focuscrawl.outlinks import frame_transforms, spark_transforms
from focuscrawl.outlinks.params import DEFAULT, EMBED_KNOBS
from focuscrawl.outlinks.tables import EMBEDDINGS, SNAPSHOTS
from focuscrawl.core.params import add_arguments


def run(spark, cfg: Settings, dimensions: int = DEFAULT.dimensions, sample_size: int = DEFAULT.sample_size) -> int:
    snapshots = lake.read(spark, SNAPSHOTS, cfg)
    # Texts strictly before the held-out period only: its vectors must not reach training.
    out = spark_transforms.embed(snapshots, dimensions, sample_size,
                                 before_period=spark_transforms.held_out_period(snapshots)).cache()
    lake.overwrite(out, EMBEDDINGS, cfg)
    n = out.count()
    out.unpersist()
    return n


def run_in_process(cfg: Settings, dimensions: int = DEFAULT.dimensions, sample_size: int = DEFAULT.sample_size) -> int:
    """:func:`run` on pandas in this process (``focuscrawl.outlinks.frame_transforms``), for a small lake."""
    snapshots = lake.to_pandas(SNAPSHOTS, cfg)
    out = frame_transforms.embed(snapshots, dimensions, sample_size,
                                 before_period=frame_transforms.held_out_period(snapshots))
    return lake.replace_frame(out, EMBEDDINGS, cfg)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session, in_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, EMBED_KNOBS)
    args = ap.parse_args(argv)
    cfg = settings()
    local = in_process(SNAPSHOTS, cfg)
    n = (run_in_process(cfg, args.dimensions, args.sample_size) if local
         else run(get_session("outlinks_embed", cfg=cfg), cfg, args.dimensions, args.sample_size))
    print(f"outlinks_embed: {n} pages -> {EMBEDDINGS.path(cfg)}{IN_PROCESS if local else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
