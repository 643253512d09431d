"""The graph_estimation job's numbers against values worked out by hand (issue 7, acceptance point 3).

A crawl lands in the ``graph_sample`` Delta table (delta-rs, as a crawler appends it) -> the job the
DAG submits (``spark_jobs/graph_estimation.py``, on the session's Spark) -> ``graph_estimates`` holds
every estimator's shares with bootstrap percentile intervals, checked against hand-worked values.
The DAG itself runs on its asset trigger from the live sampler in tests/platform/test_platform_e2e.py
(which replaced this file's manual Airflow run); MLE on a uniform crawl is covered by test_graph_spark_job.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import uuid

import numpy as np
import pytest
from deltalake import DeltaTable

from focuscrawl.graph.access import ContentCopies
from focuscrawl.graph.params import DEFAULT
from focuscrawl.graph.samplers import Sample
from focuscrawl.graph.tables import GRAPH_ESTIMATES, GRAPH_SAMPLE, append_sample

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

REPLICATES = 100
# Every point estimate of _alternating_crawl worked out by hand, (estimator, target, value) -> share;
# MLE is skipped (the crawl is a walk, not uniform). tests/reliability/test_airflow_task_kill.py checks these too.
HAND_WORKED = {
    ("NAIVE", "label", "x"): 0.5, ("NAIVE", "label", "y"): 0.5,
    ("NAIVE", "copies", "1"): 0.5, ("NAIVE", "copies", "3"): 0.5,
    ("SCE", "label", "x"): 0.5, ("SCE", "label", "y"): 0.5,
    ("SCE", "copies", "1"): 0.5, ("SCE", "copies", "3"): 0.5,
    ("WCE", "label", "x"): 1 / 3, ("WCE", "label", "y"): 2 / 3,
    ("WCE", "copies", "1"): 2 / 3, ("WCE", "copies", "3"): 1 / 3,
}


def _alternating_crawl(pairs: int) -> Sample:
    """A walk alternating two vertices: 7 (weight 2) holds content A (3 copies, special, label x) and
    B (1 copy, special, label y); 9 (weight 4) holds a plain copy of A."""
    copies = ContentCopies(
        content_id=np.array(["A", "B", "A"]),
        label=np.array(["x", "y", "x"]),
        copies=np.array([3, 1, 3]),
        special=np.array([True, True, False]),
    )
    pair = Sample(np.array(["7", "9"]), np.array([2.0, 4.0]), np.array([0, 2, 3]), copies, uniform=False, num_vertices=10)
    return pair.take(np.tile([0, 1], pairs))


def _wce_share_of_y(k: int, pairs: int) -> float:
    """WCE's share of label y on a replicate holding k draws of vertex 7 among 2*pairs draws:
    B weighs 1/(2*1) per draw of 7, A 1/(2*3) per draw of 7 and 1/(4*3) per draw of 9."""
    return (k / 2) / (k / 2 + k / 6 + (2 * pairs - k) / 12)


def _job(cfg):
    spec = importlib.util.spec_from_file_location("graph_estimation_job", cfg.home / "spark_jobs" / "graph_estimation.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return job


def test_job_writes_hand_worked_estimates_with_bootstrap_intervals(spark, cfg, tmp_path):
    lake = dataclasses.replace(cfg, lake=str(tmp_path / "lake"))
    hand = f"hand-{uuid.uuid4().hex[:8]}"
    pairs = 20
    append_sample(GRAPH_SAMPLE.path(lake), _alternating_crawl(pairs), hand, "RW")

    job = _job(cfg)
    assert job.pending_crawls(spark, lake) == [hand]  # what the DAG's default run estimates
    # The DAG's defaults but the replicates and block length of the hand computation below.
    job.run(spark, lake, crawl_ids=[hand], params=dataclasses.replace(DEFAULT, replicates=REPLICATES, block_length=1))
    assert job.pending_crawls(spark, lake) == []  # the next asset-triggered run has nothing to redo
    append_sample(GRAPH_SAMPLE.path(lake), _alternating_crawl(2), "newer", "RW")
    assert job.pending_crawls(spark, lake) == ["newer"]

    rows = DeltaTable(GRAPH_ESTIMATES.path(lake)).to_pandas()
    rows = rows[rows.crawl_id == hand]
    assert set(rows.replicates) == {REPLICATES} and set(rows.level) == {0.95}
    assert ((rows.ci_low <= rows.estimate + 1e-12) & (rows.estimate <= rows.ci_high + 1e-12)).all()

    assert rows.set_index(["estimator", "target", "value"]).estimate.to_dict() == pytest.approx(HAND_WORKED)
    # With block length 1 a replicate holds k ~ Binomial(40, 1/2) draws of vertex 7, so WCE's 95%
    # interval for y is about [f(14), f(26)]; allow the spread of 100 replicates' percentiles.
    y = rows[(rows.estimator == "WCE") & (rows.target == "label") & (rows.value == "y")].iloc[0]
    assert _wce_share_of_y(10, pairs) < y.ci_low < _wce_share_of_y(17, pairs)
    assert _wce_share_of_y(23, pairs) < y.ci_high < _wce_share_of_y(30, pairs)
    # NAIVE and SCE see both contents in every replicate: each share is 1/2 with a zero-width interval.
    flat = rows[rows.estimator.isin(["NAIVE", "SCE"])]
    assert (flat.ci_low == 0.5).all() and (flat.ci_high == 0.5).all()
