"""The outlinks DAGs parse, wire the jobs to their Delta assets, and their GX gate (focuscrawl.lake.quality.gx_gate)
fails the task on a corrupted snapshot table."""

from __future__ import annotations

import pyarrow as pa
import pytest

from focuscrawl.outlinks.synthetic import generate_snapshots
from focuscrawl.outlinks.tables import SNAPSHOTS
from focuscrawl.lake.quality import QUALITY_RESULTS_TABLE, DataQualityError


@pytest.fixture(scope="module")
def dags(dag_bag):
    return dag_bag("outlinks.py")


def test_dags_document_themselves_and_retry(dags):
    # Their doc title, owner and back-off: tests/test_dag_integrity.py, for every DAG.
    assert set(dags) == {"outlinks_features", "outlinks_train"}
    for dag in dags.values():
        assert "seed-002" in dag.tags
    train = dags["outlinks_train"]
    assert train.get_task("train").retries == 2 and train.get_task("quality_outlink_features").retries == 0


def test_the_related_method_param_offers_every_registered_method(dags):
    from focuscrawl.outlinks.related import RELATED

    schema = dags["outlinks_features"].params.get_param("method").schema
    assert schema["enum"] == RELATED.names() and schema["type"] == "string"


def test_data_aware_chain(dags, cfg):
    feats, train = dags["outlinks_features"], dags["outlinks_train"]
    assert [t.task_id for t in feats.topological_sort()] == ["quality_page_snapshots", "features"]
    chain = feats.get_task("features")  # four jobs in one task, in this order, once a model could use them
    assert chain.jobs_dir == str(cfg.home / "spark_jobs") and chain.pool == "spark"
    assert [a for a in chain.steps if a.endswith(".py")] == [
        "outlinks_ready.py", "outlinks_embed.py", "outlinks_related.py", "outlinks_features.py", "near_duplicates.py"]
    assert chain.steps.count("--") == 4
    # the gate runs beside train; score (promote, then the champion scores and pushes) waits for both, and
    # has no short circuit: a run that promoted nothing still pushes its new period's scores; the push starts the
    # model_registry DAG, which records the models outside this run (tests/services/test_model_registry_dag.py)
    assert {t.task_id: sorted(t.upstream_task_ids) for t in train.tasks} == {
        "quality_outlink_features": [], "train": [], "score": ["quality_outlink_features", "train"]}
    assert {t.task_id for t in train.tasks if t.pool == "spark"} == {"score"}  # train never opens a session
    assert [a.name for a in chain.outlets] == ["delta.page_embeddings", "delta.related_pages", "delta.outlink_features",
                                              "delta.near_duplicates"]
    assert [a.name for a in feats.timetable.asset_condition.objects] == ["delta.page_snapshots"]
    assert [a.name for a in train.timetable.asset_condition.objects] == ["delta.outlink_features"]
    job = train.get_task("train")
    assert job.steps[0] == "outlinks_train.py" and "--no-promote" in job.steps
    score = train.get_task("score").steps
    assert score[0] == "outlinks_score.py" and {"--promote", "--publish"} <= set(score)
    assert score[score.index("--models") + 1] == "{{ params.models }}"
    assert [a.name for a in train.get_task("score").outlets] == ["delta.page_priorities",
                                                                  "kafka.focuscrawl.page_priorities"]


def test_gx_gate_fails_the_task_on_a_corrupted_snapshot_table(dags, cfg, monkeypatch, tmp_path):
    from deltalake import DeltaTable, write_deltalake

    # The gate reads settings() when it runs: point it at this test's lake.
    monkeypatch.setenv("FOCUSCRAWL_LAKE", str(tmp_path / "lake"))
    gate = dags["outlinks_features"].get_task("quality_page_snapshots").python_callable
    path = str(tmp_path / "lake" / "page_snapshots")
    loose = pa.schema([f.with_nullable(True) for f in SNAPSHOTS.arrow_schema()])  # a careless producer
    snapshots = generate_snapshots(n_pages=30, n_periods=3, n_topics=3, n_sites=3, seed=1)
    write = lambda frame: write_deltalake(  # noqa: E731
        path, pa.Table.from_pandas(frame, schema=loose, preserve_index=False), mode="overwrite")
    write(snapshots)
    assert (gate()["success"], gate()["row_count"]) == (True, 90)
    corrupted = snapshots.copy()
    corrupted.loc[0, "url"] = None
    corrupted.loc[6, ["url", "period"]] = corrupted.loc[7, ["url", "period"]]
    write(corrupted)
    with pytest.raises(DataQualityError) as err:
        gate()
    assert "page_snapshots failed 2 of" in str(err.value)
    assert "expect_column_values_to_not_be_null(column='url'): 1 rows" in str(err.value)
    assert "expect_compound_columns_to_be_unique(column_list=['url', 'period']): 2 rows" in str(err.value)
    results = DeltaTable(str(tmp_path / "lake" / QUALITY_RESULTS_TABLE.name)).to_pyarrow_table().sort_by(
        "checked_at_ms").to_pylist()
    assert [(r["table_name"], r["success"]) for r in results] == [("page_snapshots", True)] * 2 + [
        ("page_snapshots", False)]
