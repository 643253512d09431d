"""Spark job: page_snapshots + related_pages -> outlink_features (targets and LBLA features), seed 002 Sections 5-6.

    spark-submit spark_jobs/outlinks_features.py [--history-size N] (default: OutlinksParams)
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.outlinks import spark_transforms
from focuscrawl.outlinks.params import DEFAULT, FEATURE_KNOBS
from focuscrawl.outlinks.tables import FEATURES, RELATED_PAGES, SNAPSHOTS
from focuscrawl.core.params import add_arguments


def run(spark, cfg: Settings, history_size: int = DEFAULT.history_size) -> int:
    out = spark_transforms.features(lake.read(spark, SNAPSHOTS, cfg), lake.read(spark, RELATED_PAGES, cfg),
                                    history_size)
    lake.overwrite(out, FEATURES, cfg)
    return lake.read(spark, FEATURES, cfg).count()


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, FEATURE_KNOBS)
    args = ap.parse_args(argv)
    cfg = settings()
    n = run(get_session("outlinks_features", cfg=cfg), cfg, args.history_size)
    print(f"outlinks_features: {n} rows -> {FEATURES.path(cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
