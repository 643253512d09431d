"""Spark job: page_snapshots -> near_duplicates (MinHash + LSH over each page's latest text, checked exactly).

    spark-submit spark_jobs/near_duplicates.py [--threshold 0.7] [--num-perm 128] [--shingle-words 5] [--min-words 20]

The decisions (shingles, permutations, bands, threshold) are :class:`focuscrawl.core.dedup.NearDuplicateParams`;
the transform is :func:`focuscrawl.outlinks.spark_transforms.near_duplicates`.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.lake.spark import IN_PROCESS
from focuscrawl.core.dedup import DEFAULT, KNOBS, NearDuplicateParams
from focuscrawl.outlinks import frame_transforms, spark_transforms
from focuscrawl.outlinks.tables import NEAR_DUPLICATES, SNAPSHOTS
from focuscrawl.core.params import add_arguments, from_args


def run(spark, cfg: Settings, params: NearDuplicateParams = DEFAULT) -> int:
    out = spark_transforms.near_duplicates(lake.read(spark, SNAPSHOTS, cfg), params)
    lake.overwrite(out, NEAR_DUPLICATES, cfg)
    return lake.read(spark, NEAR_DUPLICATES, cfg).count()


def run_in_process(cfg: Settings, params: NearDuplicateParams = DEFAULT) -> int:
    """:func:`run` on pandas in this process (``focuscrawl.outlinks.frame_transforms``), for a small lake."""
    return lake.replace_frame(frame_transforms.near_duplicates(lake.to_pandas(SNAPSHOTS, cfg), params),
                              NEAR_DUPLICATES, cfg)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session, in_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, KNOBS)
    params = from_args(DEFAULT, ap.parse_args(argv), KNOBS)
    cfg = settings()
    local = in_process(SNAPSHOTS, cfg)
    n = run_in_process(cfg, params) if local else run(get_session("near_duplicates", cfg=cfg), cfg, params)
    print(f"near_duplicates: {n} pairs at Jaccard >= {params.threshold} (bands {params.bands}) -> "
          f"{NEAR_DUPLICATES.path(cfg)}{IN_PROCESS if local else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
