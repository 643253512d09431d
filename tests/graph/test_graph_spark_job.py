"""The graph-estimation job over a real Delta ``graph_sample`` table (seed 003), on Spark and in process."""

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


@pytest.fixture(params=["spark", "in_process"])
def engine(request):
    """The job's session: the tests' Spark, or None (in this process, on pandas)."""
    return request.getfixturevalue("spark") if request.param == "spark" else None


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


def test_job_writes_estimates_with_bootstrap_intervals(engine, cfg, tmp_path, crawls):
    lake = dataclasses.replace(cfg, lake=str(tmp_path / "lake"))
    for name, sample in crawls.items():
        append_sample(GRAPH_SAMPLE.path(lake), sample, f"crawl-{name}", name)
    job = _job(cfg)

    params = dataclasses.replace(DEFAULT, targets=("label",), replicates=30, block_length=5)
    n = job.run(engine, lake, params=params)
    assert job.run(engine, lake, params=params) == n  # a rerun replaces, not appends
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


def test_a_crawl_landed_in_parts_is_estimated_again_when_the_rest_lands(engine, cfg, tmp_path, crawls):
    """The sink commits at most a batch of rows at a time, so a round's crawl can land in two commits with a
    DAG run between them: the estimate of the first part records its rows, and the crawl is pending again
    until an estimate covers every landed row; a complete crawl is pending no more."""
    import pyarrow as pa
    from deltalake import write_deltalake

    lake = dataclasses.replace(cfg, lake=str(tmp_path / "lake"))
    uri, job = GRAPH_SAMPLE.path(lake), _job(cfg)
    rows = sample_to_frame(crawls["RW"], "crawl-RW", "RW")
    half = rows["draw"] < rows["draw"].max() // 2

    def land(part):
        write_deltalake(uri, pa.Table.from_pandas(part, schema=GRAPH_SAMPLE.arrow_schema(), preserve_index=False),
                        mode="append")

    land(rows[half])
    params = dataclasses.replace(DEFAULT, targets=("label",), replicates=10, block_length=5)
    assert job.pending_crawls(engine, lake) == ["crawl-RW"]
    job.run(engine, lake, crawl_ids=job.pending_crawls(engine, lake), params=params)
    first = DeltaTable(GRAPH_ESTIMATES.path(lake)).to_pandas()
    assert set(first.sample_rows) == {int(half.sum())}
    assert job.pending_crawls(engine, lake) == []

    land(rows[~half])
    assert job.pending_crawls(engine, lake) == ["crawl-RW"]
    job.run(engine, lake, crawl_ids=job.pending_crawls(engine, lake), params=params)
    whole = DeltaTable(GRAPH_ESTIMATES.path(lake)).to_pandas()
    assert set(whole.sample_rows) == {len(rows)} and job.pending_crawls(engine, lake) == []
    wce = ESTIMATORS.create("WCE", target="label").estimate(sample_from_frame(rows))
    assert whole[whole.estimator == "WCE"].set_index("value").estimate.to_dict() == pytest.approx(wce)


def test_both_engines_write_the_same_estimates(spark, cfg, tmp_path, crawls):
    """On pandas in the task's process or on Spark, the same rows: the same replicates (each seeded by its id) and
    the same summaries."""
    import pandas as pd

    params = dataclasses.replace(DEFAULT, replicates=25, block_length=5)
    job, written = _job(cfg), {}
    for name, session in (("spark", spark), ("in_process", None)):
        lake = dataclasses.replace(cfg, lake=str(tmp_path / name))
        for sampler, sample in crawls.items():
            append_sample(GRAPH_SAMPLE.path(lake), sample, f"crawl-{sampler}", sampler)
        assert job.pending_crawls(session, lake) == ["crawl-RW", "crawl-UNI"]
        job.run(session, lake, crawl_ids=job.pending_crawls(session, lake), params=params)
        assert job.pending_crawls(session, lake) == []
        key = ["crawl_id", "estimator", "target", "value"]
        written[name] = DeltaTable(GRAPH_ESTIMATES.path(lake)).to_pandas().sort_values(key).reset_index(drop=True)
    assert len(written["spark"]) > 50
    pd.testing.assert_frame_equal(written["spark"], written["in_process"], check_dtype=False, rtol=1e-12)
