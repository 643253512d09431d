"""The outlinks DAGs parse, wire the jobs to their Delta assets, and the GX gate fails on a corrupted snapshot table."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from focuscrawl.outlinks.quality import DataQualityError
from focuscrawl.outlinks.synthetic import generate_snapshots
from focuscrawl.outlinks.tables import SNAPSHOTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dags():
    from airflow.dag_processing.dagbag import BundleDagBag

    bag = BundleDagBag(dag_folder=str(ROOT / "dags" / "outlinks.py"), bundle_path=ROOT / "dags")
    assert bag.import_errors == {}
    return bag.dags


def test_dags_document_themselves_and_retry(dags):
    assert set(dags) == {"outlinks_features", "outlinks_train"}
    for dag in dags.values():
        assert dag.doc_md.startswith("# outlinks") and "seed-002" in dag.tags
        for t in dag.tasks:
            assert t.owner == "focuscrawl"
    train = dags["outlinks_train"]
    assert train.get_task("train").retries == 2 and train.get_task("check_features").retries == 0


def test_data_aware_chain(dags, cfg):
    feats, train = dags["outlinks_features"], dags["outlinks_train"]
    assert [t.task_id for t in feats.topological_sort()] == ["check_snapshots", "embed", "related", "features"]
    assert [t.task_id for t in train.topological_sort()] == ["check_features", "train", "promote", "score"]
    assert [a.name for a in feats.get_task("features").outlets] == ["delta.outlink_features"]
    assert [a.name for a in feats.timetable.asset_condition.objects] == ["delta.page_snapshots"]
    assert [a.name for a in train.timetable.asset_condition.objects] == ["delta.outlink_features"]
    job = train.get_task("train")
    assert job.application == str(cfg.home / "spark_jobs" / "outlinks_train.py")
    assert "--no-promote" in job.application_args and job.conf["spark.pyspark.python"] == sys.executable
    assert [a.name for a in train.get_task("score").outlets] == ["delta.page_priorities",
                                                                  "kafka.focuscrawl.page_priorities"]


def test_gx_gate_fails_the_task_on_a_corrupted_snapshot_table(dags, cfg, tmp_path):
    from deltalake import write_deltalake

    local = dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path)
    check = dags["outlinks_features"].get_task("check_snapshots").python_callable
    check.__globals__["cfg"] = local  # the DAG module's settings, pointed at this test's lake
    snapshots = generate_snapshots(n_pages=30, n_periods=3, n_topics=3, n_sites=3, seed=1)
    write = lambda frame, mode: write_deltalake(  # noqa: E731
        SNAPSHOTS.path(local), pa.Table.from_pandas(frame, schema=SNAPSHOTS.arrow_schema(), preserve_index=False),
        mode=mode)
    write(snapshots, "overwrite")
    assert check() == 90
    corrupted = snapshots.copy()
    corrupted.loc[0:4, "status"] = 999
    corrupted.loc[5, "content_digest"] = None
    write(corrupted, "overwrite")
    with pytest.raises(DataQualityError) as err:
        check()
    assert "page_snapshots failed 2 expectation(s)" in str(err.value)
    assert "expect_column_values_to_be_between{'column': 'status', 'min_value': 100.0, 'max_value': 599.0}: 5 rows" \
        in str(err.value)
