"""focuscrawl.orchestration.airflow_priority: the spark pool serves the oldest DAG run first."""

from __future__ import annotations

from types import SimpleNamespace

from focuscrawl.orchestration.airflow_priority import OldestRunFirst, origin_time, run_time, weight_of


def test_older_runs_weigh_more_whatever_their_type():
    ids = ["scheduled__2026-12-01T12:09:27.180479+00:00",
           "asset_triggered__2026-12-01T12:10:13.809357+00:00_AK2guMdg",
           "manual__2026-12-01T12:10:14+00:00",
           "asset_triggered__2026-12-01T12:22:53.893125+00:00_X0ThKuVQ"]
    weights = [weight_of(i) for i in ids]
    assert weights == sorted(weights, reverse=True) and len(set(weights)) == len(ids)
    # one point per second
    assert weight_of(ids[0]) - weight_of("scheduled__2026-12-01T12:10:27.180479+00:00") == 60


def test_the_rule_reads_the_task_instance_run_id():
    ti = SimpleNamespace(dag_id="fue_pseudo_training", run_id="scheduled__2026-12-01T12:10:13.809357+00:00")
    assert OldestRunFirst().get_weight(ti) == weight_of(ti.run_id)
    assert 0 < weight_of(ti.run_id) < 2**31 - 1


def test_a_run_id_without_a_time_counts_as_created_now():
    assert run_time("my-own-run") is None
    assert run_time("scheduled__2026-12-01T12:09:27Z") == run_time("scheduled__2026-12-01T12:09:27+00:00")
    # newer than any run of a minute ago, older than none created later
    assert weight_of("my-own-run") < weight_of("scheduled__2026-12-01T12:09:27+00:00")


TRAIN = "asset_triggered__2026-12-04T14:14:48.100000+00:00_Qf6Kg83d"      # outlinks_train, after features N
FEATURES_N = "asset_triggered__2026-12-04T14:13:50.000000+00:00_cfSWrwM0"  # the run whose features it trains on
FEATURES_NEXT = "asset_triggered__2026-12-04T14:14:20.000000+00:00_Kt5veGsi"  # queued while features N ran


def test_a_chain_run_is_dated_by_the_run_that_produced_its_trigger():
    """The freshness bench's case: dated by its id, train N lost the slot to features N+1, whose first
    snapshot event came before features N ended; dated by features N, train N goes first."""
    produced = {("outlinks_train", run_time(TRAIN)): ("outlinks_features", FEATURES_N)}
    trigger = lambda dag, at: produced.get((dag, at))  # noqa: E731
    assert origin_time("outlinks_train", TRAIN, trigger) == run_time(FEATURES_N)
    assert origin_time("outlinks_features", FEATURES_NEXT, trigger) == run_time(FEATURES_NEXT)
    assert weight_of(TRAIN, origin_time("outlinks_train", TRAIN, trigger)) > weight_of(FEATURES_NEXT)
    assert weight_of(TRAIN) < weight_of(FEATURES_NEXT)  # what the run id alone said
    # scheduled and manual runs, and events no run produced, keep their own time
    assert origin_time("graph_estimation", "scheduled__2026-12-01T12:09:27+00:00", trigger) == run_time(
        "scheduled__2026-12-01T12:09:27+00:00")
    assert origin_time("outlinks_train", "asset_triggered__2026-12-04T15:00:00+00:00", lambda d, a: None) == run_time(
        "asset_triggered__2026-12-04T15:00:00+00:00")


def test_the_triggering_run_is_read_from_airflows_asset_events(tmp_path, monkeypatch):
    """Airflow's own tables (asset_event, dag_schedule_asset_reference) on a scratch SQLite database."""
    from datetime import datetime, timezone

    from airflow import settings
    from airflow.models import import_all_models
    from airflow.models.asset import AssetEvent, DagScheduleAssetReference
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from focuscrawl.orchestration import airflow_priority

    engine = create_engine(f"sqlite:///{tmp_path / 'airflow.db'}")
    import_all_models()
    AssetEvent.metadata.create_all(engine)  # SQLite does not enforce the foreign keys to dag and asset
    at = lambda stamp: datetime.fromisoformat(stamp).replace(tzinfo=timezone.utc)  # noqa: E731
    with Session(engine) as s:
        s.add(DagScheduleAssetReference(asset_id=7, dag_id="outlinks_train"))
        s.add_all([
            AssetEvent(asset_id=7, source_dag_id="outlinks_features", source_run_id=FEATURES_N, source_task_id="features",
                       timestamp=at("2026-12-04T14:14:47")),
            AssetEvent(asset_id=7, source_dag_id="outlinks_features", source_run_id=FEATURES_NEXT,
                       source_task_id="features", timestamp=at("2026-12-04T14:16:00")),  # after the run: not its trigger
            AssetEvent(asset_id=8, source_dag_id="elsewhere", source_run_id="x", source_task_id="t",
                       timestamp=at("2026-12-04T14:14:48")),  # an Asset train is not scheduled on
        ])
        s.commit()
    monkeypatch.setattr(settings, "engine", engine)
    airflow_priority.triggering_run.cache_clear()
    assert airflow_priority.triggering_run("outlinks_train", run_time(TRAIN)) == ("outlinks_features", FEATURES_N)
    assert airflow_priority.triggering_run("outlinks_features", run_time(TRAIN)) is None
    ti = SimpleNamespace(dag_id="outlinks_train", run_id=TRAIN)
    assert OldestRunFirst().get_weight(ti) == weight_of(TRAIN, run_time(FEATURES_N))
    airflow_priority.triggering_run.cache_clear()
