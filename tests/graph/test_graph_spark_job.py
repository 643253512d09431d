"""The graph-estimation Spark job over a real Delta ``graph_sample`` table (seed 003)."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
from deltalake import DeltaTable

from focuscrawl.graph.estimators import ESTIMATORS
from focuscrawl.graph.params import DEFAULT
from focuscrawl.graph.samplers import SAMPLERS
from focuscrawl.graph.synthetic import synthetic_graph
from focuscrawl.graph.tables import GRAPH_ESTIMATES, GRAPH_SAMPLE, append_sample, sample_from_frame, sample_to_frame

pytestmark = pytest.mark.integration


def _job(cfg):
    spec = importlib.util.spec_from_file_location("graph_estimation_job", cfg.home / "spark_jobs" / "graph_estimation.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return job


@pytest.fixture(scope="module")
def crawls():
    graph = synthetic_graph(num_vertices=300, num_contents=400, seed=3)
    out = {}
    for name in ("UNI", "RW"):
        rng = np.random.default_rng(11)
        out[name] = SAMPLERS.create(name).sample(graph.access(80, rng), rng)
    return out


def test_sample_rows_round_trip(crawls):
    sample = crawls["RW"]
    back = sample_from_frame(sample_to_frame(sample, "c", "RW"))
    assert back.vertices.tolist() == sample.vertices.astype(str).tolist()
    assert back.copy_ptr.tolist() == sample.copy_ptr.tolist()
    assert back.weights.tolist() == sample.weights.tolist()
    wce = ESTIMATORS.create("WCE", target="label")
    assert wce.estimate(back) == pytest.approx(wce.estimate(sample))


def test_job_writes_estimates_with_bootstrap_intervals(spark, cfg, tmp_path, crawls):
    lake = dataclasses.replace(cfg, lake=str(tmp_path / "lake"))
    for name, sample in crawls.items():
        append_sample(GRAPH_SAMPLE.path(lake), sample, f"crawl-{name}", name)
    job = _job(cfg)

    params = dataclasses.replace(DEFAULT, targets=("label",), replicates=30, block_length=5)
    n = job.run(spark, lake, params=params)
    assert job.run(spark, lake, params=params) == n  # a rerun replaces, not appends
    dt = DeltaTable(GRAPH_ESTIMATES.path(lake))
    assert dt.metadata().description == GRAPH_ESTIMATES.comment
    rows = dt.to_pyarrow_table().to_pandas()
    assert len(rows) == n
    # MLE only on the uniform crawl; four labels per (crawl, estimator).
    assert sorted(rows.groupby(["crawl_id", "estimator"]).size().items()) == [
        (("crawl-RW", e), 4) for e in ("NAIVE", "SCE", "WCE")
    ] + [(("crawl-UNI", e), 4) for e in ("MLE", "NAIVE", "SCE", "WCE")]
    # Point estimates are the pure estimators on the whole crawl, inside their intervals.
    wce = ESTIMATORS.create("WCE", target="label").estimate(sample_from_frame(sample_to_frame(crawls["RW"], "x", "RW")))
    got = rows[(rows.crawl_id == "crawl-RW") & (rows.estimator == "WCE")].set_index("value")
    assert got.estimate.to_dict() == pytest.approx(wce)
    assert (got.ci_low <= got.estimate + 1e-12).all() and (got.estimate <= got.ci_high + 1e-12).all()
    assert (got.ci_high - got.ci_low > 0).all() and set(got.replicates) == {30}
