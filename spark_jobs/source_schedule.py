"""Spark job: recrawl and feedback tables -> per-source estimates -> recrawl schedule (seed 001).

    spark-submit spark_jobs/source_schedule.py [--budget B] [--host-min-interval-s S] [--optimism O]
        [--feedback CLICKS|RELEVANCE] [--freshness-half-life-s S]
        (defaults: focuscrawl.ephemeral.params.EphemeralParams)

Extract ``source_recrawls`` and the table of the ``--feedback`` profit signal
(``focuscrawl.ephemeral.feedback``: ``page_clicks`` for CLICKS, ``source_pages`` for RELEVANCE); transform
with ``focuscrawl.ephemeral.tables.estimate_in_spark`` (groupBy + applyInPandas over the pure
estimators) and ``schedule_sources`` (the Lagrangian optimiser); load ``source_estimates`` and
``source_schedule`` (overwrite, ``focuscrawl.lake``). The estimates are stored as the next version of the sources
model store (``focuscrawl.ephemeral.fitted``) with the Delta versions read. The session comes from ``focuscrawl.lake.spark.get_session``.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.ephemeral.params import DEFAULT, SCHEDULE_KNOBS
from focuscrawl.ephemeral.feedback import profit_signal
from focuscrawl.ephemeral.fitted import model_store, plan_estimates
from focuscrawl.ephemeral.tables import (HISTORY_TABLES, SOURCE_ESTIMATES, SOURCE_RECRAWLS, SOURCE_SCHEDULE,
                                         estimate_in_spark, schedule_sources)
from focuscrawl.core.params import add_arguments
from focuscrawl.lake.tables import TableSpec


def _overwrite(spark, frame, spec: TableSpec, cfg: Settings) -> int:
    # The pandas frame takes the column types of the table made from the spec (int32, timestamps).
    lake.ensure(spec, cfg)
    lake.overwrite(spark.createDataFrame(frame[spec.column_names], schema=lake.read(spark, spec, cfg).schema), spec, cfg)
    return len(frame)


def run(spark, cfg: Settings, budget: float = DEFAULT.budget, host_min_interval_s: float = DEFAULT.host_min_interval_s,
        optimism: float = DEFAULT.optimism, feedback: str = DEFAULT.feedback,
        freshness_half_life_s: float = DEFAULT.freshness_half_life_s) -> int:
    """Recompute estimates and schedule; returns the number of sources scheduled."""
    signal = profit_signal(feedback, freshness_half_life_s)
    rows_spec = HISTORY_TABLES[signal.table]
    # The DAG runs on either table's Asset: a young platform has recrawls before its first feedback
    # (or the reverse); the missing one is an empty table of its spec, not a failed run.
    for spec in (SOURCE_RECRAWLS, rows_spec):
        lake.ensure(spec, cfg)
    read = {spec.name: lake.version(spec, cfg) for spec in (SOURCE_RECRAWLS, rows_spec)}
    recrawls = lake.read(spark, SOURCE_RECRAWLS, cfg, read[SOURCE_RECRAWLS.name])
    rows = lake.read(spark, rows_spec, cfg, read[rows_spec.name])
    # the fitted λ, P, μ are a versioned model (the registry records it); a rollback plans with the champion's
    estimates, done = plan_estimates(model_store(cfg), lambda: estimate_in_spark(recrawls, rows, signal), {
        "feedback": feedback, "freshness_half_life_s": freshness_half_life_s}, read)
    print(f"source_schedule: estimates {done}")
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
    n = run(spark, cfg, args.budget, args.host_min_interval_s, args.optimism, args.feedback, args.freshness_half_life_s)
    print(f"source_schedule: {n} sources ({args.feedback} feedback) -> {SOURCE_SCHEDULE.path(cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
