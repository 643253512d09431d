"""Spark job: graph crawls (``graph_sample``) -> content estimates with bootstrap intervals (``graph_estimates``).

    spark-submit spark_jobs/graph_estimation.py [--crawl-ids a,b|all] [--estimators ...] [--targets ...]
        [--replicates N] [--block-length N] [--level L] [--seed N]

(defaults: :class:`focuscrawl.graph.params.GraphEstimationParams`)

Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*). A crawl is small by design (a query budget), so each one is
collected to the driver as a :class:`focuscrawl.graph.samplers.Sample`; the bootstrap replicates are
spread over the executors (``mapInPandas`` over replicate ids, each seeded by its id) and summarised
per crawl, estimator and target (``applyInPandas``). While ``graph_sample`` is small
(:func:`focuscrawl.lake.spark.in_process`) the job does the same on pandas in its own process
(``focuscrawl.graph.tables.estimates_in_process``) and writes with delta-rs: ``run(None, ...)``. The estimators are
the pure functions of ``focuscrawl.graph``; this file only wires extract, transform and load.

Without ``--crawl-ids`` it estimates the crawls that have no estimate yet, or whose estimate used fewer
rows than ``graph_sample`` now holds: the DAG runs on every new crawl the live sampler lands, and the
sink may land one round's rows in more than one commit (``all`` re-estimates all).
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.graph.estimators import ESTIMATORS
from focuscrawl.graph.params import DEFAULT, ESTIMATION, GraphEstimationParams
from focuscrawl.graph.tables import (
    GRAPH_ESTIMATES,
    GRAPH_SAMPLE,
    REPLICATE_COLUMNS,
    estimates_in_process,
    pending,
    replicate_estimates,
    sample_from_frame,
    summarise_replicates,
)
from focuscrawl.core.params import add_arguments, from_args

REPLICATE_SCHEMA = "crawl_id string, replicate long, estimator string, target string, value string, share double"
ESTIMATE_SCHEMA = (
    "crawl_id string, estimator string, target string, value string, estimate double, "
    "ci_low double, ci_high double, level double, replicates long, sample_rows long"
)


def extract(spark, cfg: Settings, crawl_ids: list[str] | None = None):
    samples = lake.read(spark, GRAPH_SAMPLE, cfg)
    return samples if not crawl_ids else samples.where(samples.crawl_id.isin(crawl_ids))


def pending_crawls(spark, cfg: Settings) -> list[str]:
    """Crawls in ``graph_sample`` with no estimate yet, or with more rows landed than their estimate used
    (:func:`focuscrawl.graph.tables.pending`); ``spark`` None: read with delta-rs."""
    if spark is None:
        landed = lake.to_pandas(GRAPH_SAMPLE, cfg, columns=["crawl_id"]).crawl_id.value_counts().to_dict()
        used = {} if not lake.exists(GRAPH_ESTIMATES, cfg) else (
            lake.to_pandas(GRAPH_ESTIMATES, cfg, columns=["crawl_id", "sample_rows"]).groupby("crawl_id").sample_rows
            .max().map(lambda n: None if n is None or n != n else int(n)).to_dict())
        return pending(landed, used)
    from pyspark.sql import functions as F

    landed = {r.crawl_id: r.rows for r in extract(spark, cfg).groupBy("crawl_id").agg(F.count("*").alias("rows")).collect()}
    used = {}
    if lake.exists(GRAPH_ESTIMATES, cfg):
        used = {r.crawl_id: r.rows for r in lake.read(spark, GRAPH_ESTIMATES, cfg).groupBy("crawl_id")
                .agg(F.max("sample_rows").alias("rows")).collect()}
    return pending(landed, used)


def transform(samples, params: GraphEstimationParams):
    """``graph_sample`` rows -> ``graph_estimates`` rows (one per crawl, estimator, target, value)."""
    from focuscrawl.lake.spark import parallelism

    spark = samples.sparkSession
    estimators, targets = ESTIMATORS.parse(",".join(params.estimators)), list(params.targets)
    crawl_ids = sorted(r.crawl_id for r in samples.select("crawl_id").distinct().collect())
    parts, sample_rows = [], {}
    for crawl_id in crawl_ids:
        frame = samples.where(samples.crawl_id == crawl_id).toPandas()
        sample, sample_rows[crawl_id] = sample_from_frame(frame), len(frame)

        def run(batches, sample=sample, crawl_id=crawl_id):
            for batch in batches:
                yield replicate_estimates(sample, crawl_id, batch["id"].tolist(), estimators, targets,
                                          params.block_length, params.seed)[REPLICATE_COLUMNS]

        # Replicate -1 is the crawl itself (the point estimate).
        ids = spark.range(-1, params.replicates, numPartitions=max(1, parallelism(spark)))
        parts.append(ids.mapInPandas(run, REPLICATE_SCHEMA))
    if not parts:
        return spark.createDataFrame([], ESTIMATE_SCHEMA)
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return rows.groupBy("crawl_id", "estimator", "target").applyInPandas(
        lambda frame: summarise_replicates(frame, params.level, sample_rows[frame["crawl_id"].iloc[0]]), ESTIMATE_SCHEMA
    )


def load(estimates, cfg: Settings, crawl_ids: list[str]) -> None:
    """Replace the estimates of the crawls just processed (a retried run writes the same rows once)."""
    if not crawl_ids:
        lake.ensure(GRAPH_ESTIMATES, cfg)
        return
    lake.replace_where(estimates, GRAPH_ESTIMATES, cfg, _crawls_predicate(crawl_ids))


def _crawls_predicate(crawl_ids: list[str]) -> str:
    quoted = ", ".join("'" + c.replace("'", "''") + "'" for c in crawl_ids)
    return f"crawl_id IN ({quoted})"


def run(spark, cfg: Settings, crawl_ids: list[str] | None = None, params: GraphEstimationParams = DEFAULT) -> int:
    """Estimate every crawl (or ``crawl_ids``); returns the number of estimate rows written. ``spark`` None: in this
    process, on pandas."""
    if spark is None:
        samples = lake.to_pandas(GRAPH_SAMPLE, cfg)
        samples = samples[samples.crawl_id.isin(crawl_ids)] if crawl_ids else samples
        done = sorted(samples.crawl_id.unique())
        if not done:
            lake.ensure(GRAPH_ESTIMATES, cfg)
            return 0
        rows = estimates_in_process(samples, params)
        return lake.replace_frame_where(rows, GRAPH_ESTIMATES, cfg, _crawls_predicate(done))
    samples = extract(spark, cfg, crawl_ids)
    done = sorted(r.crawl_id for r in samples.select("crawl_id").distinct().collect())
    estimates = transform(samples, params).cache()
    load(estimates, cfg, done)
    n = estimates.count()
    estimates.unpersist()
    return n


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import IN_PROCESS, get_session, in_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crawl-ids", default="", help="comma-separated crawls to estimate, or 'all' "
                                                    "(default: those without estimates yet)")
    add_arguments(ap, DEFAULT, ESTIMATION)
    args = ap.parse_args(argv)
    params = from_args(DEFAULT, args, ESTIMATION)
    cfg = settings()
    local = in_process(GRAPH_SAMPLE, cfg)
    spark = None if local else get_session("graph_estimation", cfg=cfg)
    chosen = [c for c in args.crawl_ids.split(",") if c.strip()]
    crawl_ids = None if chosen == ["all"] else chosen or pending_crawls(spark, cfg)
    if crawl_ids == []:
        print("graph_estimation: every crawl is estimated already")
        return 0
    n = run(spark, cfg, crawl_ids=crawl_ids, params=params)
    print(f"graph_estimation: {n} estimates -> {GRAPH_ESTIMATES.path(cfg)}" + (IN_PROCESS if local else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
