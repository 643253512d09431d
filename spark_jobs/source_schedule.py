"""Spark job: recrawl and feedback tables -> per-source estimates -> recrawl schedule (seed 001).

    spark-submit spark_jobs/source_schedule.py [--budget B] [--host-min-interval-s S] [--optimism O]
        [--feedback CLICKS|RELEVANCE] [--freshness-half-life-s S]
        (defaults: focuscrawl.ephemeral.params.EphemeralParams)

Extract ``source_recrawls`` and the table of the ``--feedback`` profit signal
(``focuscrawl.ephemeral.feedback``: ``page_clicks`` for CLICKS, ``source_pages`` for RELEVANCE); transform
with ``focuscrawl.ephemeral.tables.estimate_in_spark`` (groupBy + applyInPandas over the pure
estimators) and ``schedule_sources`` (the Lagrangian optimiser); load ``source_estimates`` and
``source_schedule`` (overwrite, ``focuscrawl.lake``). The estimates are stored as the next version of the sources
model store (``focuscrawl.ephemeral.fitted``) with the Delta versions read. The session comes from ``focuscrawl.lake.spark.get_session``;
a DAG's task on a small lake (``focuscrawl.lake.spark.in_process``) runs the same steps in its own process on pandas
(``estimate_in_process``) and writes with delta-rs, with no Spark.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.ephemeral.params import DEFAULT, SCHEDULE_KNOBS
from focuscrawl.ephemeral.feedback import profit_signal
from focuscrawl.ephemeral.fitted import model_store, plan_estimates
from focuscrawl.ephemeral.tables import (BULKY_COLUMNS, HISTORY_TABLES, SOURCE_ESTIMATES, SOURCE_RECRAWLS,
                                         SOURCE_SCHEDULE, estimate_in_process, estimate_in_spark, schedule_sources)
from focuscrawl.core.params import add_arguments
from focuscrawl.lake.tables import TableSpec


def _overwrite(spark, frame, spec: TableSpec, cfg: Settings) -> int:
    if spark is None:
        return lake.replace_frame(frame[spec.column_names], spec, cfg)
    # The pandas frame takes the column types of the table made from the spec (int32, timestamps).
    lake.ensure(spec, cfg)
    lake.overwrite(spark.createDataFrame(frame[spec.column_names], schema=lake.read(spark, spec, cfg).schema), spec, cfg)
    return len(frame)


def run(spark, cfg: Settings, budget: float = DEFAULT.budget, host_min_interval_s: float = DEFAULT.host_min_interval_s,
        optimism: float = DEFAULT.optimism, feedback: str = DEFAULT.feedback,
        freshness_half_life_s: float = DEFAULT.freshness_half_life_s) -> int:
    """Recompute estimates and schedule; returns the number of sources scheduled. ``spark`` None: in this process,
    on pandas."""
    signal = profit_signal(feedback, freshness_half_life_s)
    rows_spec = HISTORY_TABLES[signal.table]
    # The DAG runs on either table's Asset: a young platform has recrawls before its first feedback
    # (or the reverse); the missing one is an empty table of its spec, not a failed run.
    for spec in (SOURCE_RECRAWLS, rows_spec):
        lake.ensure(spec, cfg)
    read = {spec.name: lake.version(spec, cfg) for spec in (SOURCE_RECRAWLS, rows_spec)}

    def estimate():
        if spark is None:
            recrawls = lake.to_pandas(SOURCE_RECRAWLS, cfg, ["source_url", "host", "elapsed_s", "new_links"],
                                      read[SOURCE_RECRAWLS.name])
            columns = [c for c in rows_spec.column_names if c not in BULKY_COLUMNS]
            return estimate_in_process(recrawls, lake.to_pandas(rows_spec, cfg, columns, read[rows_spec.name]), signal)
        return estimate_in_spark(lake.read(spark, SOURCE_RECRAWLS, cfg, read[SOURCE_RECRAWLS.name]),
                                 lake.read(spark, rows_spec, cfg, read[rows_spec.name]), signal)

    # the fitted λ, P, μ are a versioned model (the registry records it); a rollback plans with the champion's
    estimates, done = plan_estimates(model_store(cfg), estimate, {
        "feedback": feedback, "freshness_half_life_s": freshness_half_life_s}, read)
    print(f"source_schedule: estimates {done}")
    schedule = schedule_sources(estimates, estimates["host"], budget, host_min_interval_s, optimism)
    _overwrite(spark, estimates, SOURCE_ESTIMATES, cfg)
    return _overwrite(spark, schedule, SOURCE_SCHEDULE, cfg)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import IN_PROCESS, get_session, in_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, SCHEDULE_KNOBS)
    args = ap.parse_args(argv)
    cfg = settings()
    rows_spec = HISTORY_TABLES[profit_signal(args.feedback, args.freshness_half_life_s).table]
    local = in_process(SOURCE_RECRAWLS, cfg) and in_process(rows_spec, cfg)
    n = run(None if local else get_session("source_schedule", cfg=cfg), cfg, args.budget, args.host_min_interval_s,
            args.optimism, args.feedback, args.freshness_half_life_s)
    print(f"source_schedule: {n} sources ({args.feedback} feedback) -> {SOURCE_SCHEDULE.path(cfg)}"
          + (IN_PROCESS if local else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
