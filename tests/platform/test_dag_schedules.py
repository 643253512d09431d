"""DAG schedules come from the active project (focuscrawl.orchestration.schedules, dags/common.schedule)."""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import pytest

from focuscrawl.config import settings
from focuscrawl.orchestration.schedules import (CRON_PRESETS, DEFAULT_SCHEDULES, dag_schedule, dag_schedules, pseudo_methods,
                                      timetable_matches)
from focuscrawl.fue.params import DEFAULT as FUE
from helpers import parse_dags


def test_a_bad_schedule_in_the_active_project_names_the_grammar(tmp_path, monkeypatch):
    cfg = _with_project(tmp_path, monkeypatch, {"schedules": {"graph_estimation": "5 minutes"}})
    with pytest.raises(ValueError, match="cron expression"):
        dag_schedule(cfg, "graph_estimation")


def _with_project(tmp_path, monkeypatch, project: dict | None):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    if project is not None:
        (tmp_path / "run").mkdir(exist_ok=True)
        (tmp_path / "run" / "project.json").write_text(json.dumps(project))
    return settings()


def test_defaults_without_a_project_and_the_project_over_them(tmp_path, monkeypatch):
    cfg = _with_project(tmp_path, monkeypatch, None)
    assert dag_schedules(cfg) == DEFAULT_SCHEDULES and pseudo_methods(cfg) == list(FUE.pseudo_methods)
    cfg = _with_project(tmp_path, monkeypatch, {"schedules": {"fue_pseudo_training": "1m", "graph_estimation": "10m"},
                                                "loops": {"fue": {"enabled": True, "method": "HCP-POS"}}})
    assert dag_schedule(cfg, "fue_pseudo_training") == timedelta(minutes=1)
    assert dag_schedule(cfg, "graph_estimation") == timedelta(minutes=10)
    assert dag_schedule(cfg, "source_schedule") == "@hourly"  # not in the project: the default
    assert dag_schedule(cfg, "outlinks_train") == "assets"
    with pytest.raises(KeyError, match="DEFAULT_SCHEDULES"):
        dag_schedule(cfg, "no_such_dag")


@pytest.mark.parametrize("method,retrained", [("HCP-POS", ["HCP-POS"]), ("hcp-0.5-0.5", ["HCP-0.5-0.5"]),
                                               ("HAS", [])])  # HAS ranks by itself: nothing to pseudo-train
def test_the_batch_side_retrains_the_method_the_project_resolved(tmp_path, monkeypatch, method, retrained):
    from focuscrawl.platform.up import Platform
    from focuscrawl.project.loading import parse_project

    cfg = _with_project(tmp_path, monkeypatch, None)
    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    project = parse_project({"name": "t", "target": "world", "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
                             "sites": [{"name": "w", "world": True, "user_agent": "t/1 (+mailto:ops@example.org)"}],
                             "loops": {"fue": {"method": method}}}, base_dir=tmp_path)
    Platform(project, cfg).write_active_project()
    assert pseudo_methods(cfg) == retrained


def test_dag_files_take_their_schedule_from_the_project(tmp_path, monkeypatch):
    from airflow.sdk import AssetOrTimeSchedule

    cfg = _with_project(tmp_path, monkeypatch, {"schedules": {"fue_pseudo_training": "1m", "outlinks_features": "2m",
                                                        "delta_maintenance": "none"},
                                          "loops": {"sources": {"enabled": True, "fetches_per_second": 0.05,
                                                                "freshness_half_life_s": 7200.0},
                                                    "graph": {"enabled": True, "estimators": ["SCE", "WCE"]}}})
    saved = {m: sys.modules.pop(m) for m in ("common", "assets") if m in sys.modules}  # re-read the settings
    try:
        dags = parse_dags()  # not the run's cached dag_bag: this parse reads the project above
    finally:
        for m in ("common", "assets"):
            sys.modules.pop(m, None)
        sys.modules.update(saved)
    assert dags["fue_pseudo_training"].schedule == timedelta(minutes=1)
    assert dags["delta_maintenance"].schedule is None
    # a cron preset runs once on the first unpause (the default @hourly of source_schedule here)
    assert dags["source_schedule"].schedule.timetable.run_immediately is True
    feats = dags["outlinks_features"].schedule
    assert isinstance(feats, AssetOrTimeSchedule) and feats.timetable.delta == timedelta(minutes=2)
    assert [a.name for a in feats.asset_condition.objects] == ["delta.page_snapshots"]
    assert [a.name for a in dags["outlinks_train"].timetable.asset_condition.objects] == ["delta.outlink_features"]
    assert not isinstance(dags["outlinks_train"].schedule, AssetOrTimeSchedule)  # "assets": the Asset alone
    # the batch side plans with the running processes' budgets and names
    assert dags["source_schedule"].params["budget"] == 0.05
    assert dags["source_schedule"].params["freshness_half_life_s"] == 7200.0
    assert dags["graph_estimation"].params["estimators"] == "SCE,WCE"
    # what `up` waits for before unpausing: Airflow's own summary of each parsed timetable, as REST shows it
    from airflow.serialization.encoders import coerce_to_core_timetable

    summaries = {i: coerce_to_core_timetable(d.timetable).summary for i, d in dags.items()}
    assert summaries["delta_maintenance"] == "None" and summaries["outlinks_features"] == "Asset or 0:02:00"
    rest = {i: None if s == "None" else s for i, s in summaries.items()}
    assert all(timetable_matches(cfg, i, s) for i, s in rest.items()), rest
    assert not timetable_matches(cfg, "delta_maintenance", "@daily")  # the default, parsed before `up`
    assert not timetable_matches(cfg, "outlinks_features", "Asset")
    assert not timetable_matches(cfg, "source_schedule", "Asset")  # the project's default here is @hourly
    from airflow.utils.dates import cron_presets

    assert CRON_PRESETS == cron_presets


def test_every_spark_task_runs_in_the_spark_pool(dag_bag):
    """Every task whose jobs may open a Spark session; outlinks_train's train never does (it fits in its process and
    appends with delta-rs), so it takes no spark slot."""
    from focuscrawl.orchestration.spark_task import SparkConnectJobOperator
    from focuscrawl.services.airflow import DEFAULT_POOL, SPARK_POOL

    spark_tasks = [t for dag in dag_bag().values() for t in dag.tasks if isinstance(t, SparkConnectJobOperator)]
    # source_schedule, graph_estimation, outlinks_features' one chain task (embed, related, features), score
    assert len(spark_tasks) >= 5
    assert {f"{t.dag_id}.{t.task_id}": t.pool for t in spark_tasks if t.pool != SPARK_POOL} == {
        "outlinks_train.train": DEFAULT_POOL}


def test_stream_dags_are_the_dags_a_stream_landed_table_starts(dag_bag):
    """``[asset_events.min_interval]`` accepts exactly the DAGs streaming/asset_events.py starts: on a
    ``delta`` Asset no task produces (``focuscrawl.orchestration.asset_events.watched_assets``)."""
    from focuscrawl.project.values import STREAM_DAGS

    dags = dag_bag()
    produced = {o.name for dag in dags.values() for t in dag.tasks for o in t.outlets}
    started = {dag_id for dag_id, dag in dags.items()
               if any(a.name.startswith("delta.") and a.name not in produced
                      for a in getattr(getattr(dag.timetable, "asset_condition", None), "objects", ()))}
    assert started == set(STREAM_DAGS)
