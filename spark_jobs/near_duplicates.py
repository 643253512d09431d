"""Spark job: page_snapshots -> near_duplicates (MinHash + LSH over each page's latest text, checked exactly).

    spark-submit spark_jobs/near_duplicates.py [--threshold 0.7] [--num-perm 128] [--shingle-words 5] [--min-words 20]

The decisions (shingles, permutations, bands, threshold) are :class:`focuscrawl.dedup.NearDuplicateParams`;
the transform is :func:`focuscrawl.outlinks.spark_transforms.near_duplicates`. Issue 20, point 2.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.dedup import DEFAULT, NearDuplicateParams
from focuscrawl.outlinks import spark_transforms
from focuscrawl.outlinks.tables import NEAR_DUPLICATES, SNAPSHOTS


def run(spark, cfg: Settings, params: NearDuplicateParams = DEFAULT) -> int:
    out = spark_transforms.near_duplicates(lake.read(spark, SNAPSHOTS, cfg), params)
    lake.overwrite(out, NEAR_DUPLICATES, cfg)
    return lake.read(spark, NEAR_DUPLICATES, cfg).count()


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.spark import get_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threshold", type=float, default=DEFAULT.threshold, help="Jaccard similarity of a near-duplicate")
    ap.add_argument("--num-perm", type=int, default=DEFAULT.num_perm, help="MinHash permutations")
    ap.add_argument("--shingle-words", type=int, default=DEFAULT.shingle_words, help="words per shingle")
    ap.add_argument("--min-words", type=int, default=DEFAULT.min_words, help="shorter pages are not judged")
    args = ap.parse_args(argv)
    params = NearDuplicateParams(shingle_words=args.shingle_words, num_perm=args.num_perm, threshold=args.threshold,
                                 min_words=args.min_words)
    cfg = settings()
    n = run(get_session("near_duplicates", cfg=cfg), cfg, params)
    print(f"near_duplicates: {n} pairs at Jaccard >= {params.threshold} (bands {params.bands}) -> "
          f"{NEAR_DUPLICATES.path(cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
