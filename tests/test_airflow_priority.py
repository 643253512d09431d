"""focuscrawl.orchestration.airflow_priority: the spark pool serves the oldest DAG run first."""

from __future__ import annotations

from types import SimpleNamespace

from focuscrawl.orchestration.airflow_priority import OldestRunFirst, run_time, weight_of


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
    ti = SimpleNamespace(run_id="asset_triggered__2026-12-01T12:10:13.809357+00:00_AK2guMdg")
    assert OldestRunFirst().get_weight(ti) == weight_of(ti.run_id)
    assert 0 < weight_of(ti.run_id) < 2**31 - 1


def test_a_run_id_without_a_time_counts_as_created_now():
    assert run_time("my-own-run") is None
    assert run_time("scheduled__2026-12-01T12:09:27Z") == run_time("scheduled__2026-12-01T12:09:27+00:00")
    # newer than any run of a minute ago, older than none created later
    assert weight_of("my-own-run") < weight_of("scheduled__2026-12-01T12:09:27+00:00")
