"""Spark job: recrawl and click-feedback tables -> per-source estimates -> recrawl schedule (seed 001).

    spark-submit spark_jobs/source_schedule.py [--budget B] [--host-min-interval-s S] [--optimism O]
        (defaults: focuscrawl.ephemeral.params.EphemeralParams)

Extract ``source_recrawls`` and ``page_clicks``; transform with
``focuscrawl.ephemeral.tables.estimate_in_spark`` (groupBy + applyInPandas over the pure
estimators) and ``schedule_sources`` (the Lagrangian optimiser); load ``source_estimates`` and
``source_schedule`` (overwrite, ``focuscrawl.lake``). The session comes from ``focuscrawl.lake.spark.get_session``.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.ephemeral.params import DEFAULT, SCHEDULE_KNOBS
from focuscrawl.ephemeral.tables import (PAGE_CLICKS, SOURCE_ESTIMATES, SOURCE_RECRAWLS, SOURCE_SCHEDULE,
                                         estimate_in_spark, schedule_sources)
from focuscrawl.core.params import add_arguments
from focuscrawl.lake.tables import TableSpec


def _overwrite(spark, frame, spec: TableSpec, cfg: Settings) -> int:
    # The pandas frame takes the column types of the table made from the spec (int32, timestamps).
    lake.ensure(spec, cfg)
    lake.overwrite(spark.createDataFrame(frame[spec.column_names], schema=lake.read(spark, spec, cfg).schema), spec, cfg)
    return len(frame)


def run(spark, cfg: Settings, budget: float = DEFAULT.budget, host_min_interval_s: float = DEFAULT.host_min_interval_s,
        optimism: float = DEFAULT.optimism) -> int:
    """Recompute estimates and schedule; returns the number of sources scheduled."""
    # The DAG runs on either table's Asset: a young platform has recrawls before its first click
    # (or the reverse); the missing one is an empty table of its spec, not a failed run.
    for spec in (SOURCE_RECRAWLS, PAGE_CLICKS):
        lake.ensure(spec, cfg)
    recrawls, clicks = lake.read(spark, SOURCE_RECRAWLS, cfg), lake.read(spark, PAGE_CLICKS, cfg)
    estimates = estimate_in_spark(recrawls, clicks)
    schedule = schedule_sources(estimates, estimates["host"], budget, host_min_interval_s, optimism)
    _overwrite(spark, estimates, SOURCE_ESTIMATES, cfg)
    return _overwrite(spark, schedule, SOURCE_SCHEDULE, cfg)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, SCHEDULE_KNOBS)
    args = ap.parse_args(argv)
    cfg = settings()
    spark = get_session("source_schedule", cfg=cfg)
    n = run(spark, cfg, args.budget, args.host_min_interval_s, args.optimism)
    print(f"source_schedule: {n} sources -> {SOURCE_SCHEDULE.path(cfg)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
