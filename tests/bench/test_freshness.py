"""The loop-freshness benchmark's analysis (bench/freshness.py): stages, percentiles, pushes, on made-up
closings whose every figure is written out here."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def fb(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # the benchmarks import each other as scripts do
    return importlib.import_module("freshness")


def run(dag, queued, start, end):
    return {"dag": dag, "run_id": f"{dag}-{start}", "queued": queued, "start": start, "end": end, "run_type": "x"}


def test_one_closing_splits_into_its_stages_and_they_add_up_to_the_total(fb):
    c = {"commit": 100.0, "trigger": 104.0, "oldest_unserved": 70.0, "push": 150.0, "applied": 151.5,
         "runs": [run("source_schedule", 104.5, 110.0, 152.0)]}
    s = fb.stages(c)
    assert s == {"commit→trigger": 4.0, "trigger→queued": 0.5, "queued→start": 5.5, "job": 40.0,
                 "push→applied": 1.5, "total": 51.5, "stale": 81.5}
    assert sum(s[k] for k in fb.STAGES) == s["total"]


def test_a_two_dag_loop_splits_its_job_by_run_and_the_graph_loop_ends_at_its_run(fb):
    revisits = {"commit": 0.0, "trigger": 5.0, "push": 200.0, "applied": 203.0,
                "runs": [run("outlinks_features", 6.0, 10.0, 70.0), run("outlinks_train", 71.0, 90.0, 205.0)]}
    s = fb.stages(revisits)
    assert s["job"] == 190.0 and s["total"] == 203.0 and s["stale"] is None
    assert (s["job: outlinks_features run"], s["job: wait for outlinks_train"], s["job: outlinks_train to push"]) == (
        60.0, 20.0, 110.0)
    graph = {"commit": 0.0, "trigger": 2.0, "runs": [run("graph_estimation", 3.0, 4.0, 30.0)]}
    g = fb.stages(graph)
    assert g["push→applied"] is None and g["job"] == 26.0 and g["total"] == 30.0


def test_percentiles_interpolate_between_ranks_and_the_summary_skips_missing_stages(fb):
    assert fb.percentile([], 50) is None
    assert fb.percentile([3.0, 1.0, 2.0, 4.0], 50) == 2.5
    assert fb.percentile(list(map(float, range(1, 12))), 90) == 10.0  # 11 values: rank 9 of 0..10
    assert fb.percentile([5.0], 90) == 5.0
    closings = [{"commit": 0.0, "trigger": 1.0, "runs": [run("g", 1.0, 1.0 + i, 10.0 + 2 * i)]} for i in range(10)]
    summary = fb.summarize(closings)
    assert summary["queued→start"] == {"n": 10, "p50": 4.5, "p90": 8.1, "max": 9.0}
    assert summary["total"] == {"n": 10, "p50": 19.0, "p90": 26.2, "max": 28.0}
    assert summary["push→applied"] == {"n": 0, "p50": None, "p90": None, "max": None}


def test_pushes_from_status_samples_keep_the_last_sample_of_a_push_and_its_first_application(fb):
    partial = {"topic": "t", "records": 2, "first_record_ms": 1000, "last_record_ms": 1500,
               "first_applied_ms": 1600, "last_applied_ms": 1700}
    whole = {**partial, "records": 5, "last_record_ms": 2000, "last_applied_ms": 2600}
    reread = {**whole, "first_applied_ms": 90_000, "last_applied_ms": 90_100}  # a restarted follower, later
    later = {"topic": "t", "records": 1, "first_record_ms": 60_000, "last_record_ms": 60_000,
             "first_applied_ms": 60_400, "last_applied_ms": 60_400}
    samples = [{"pid": 1, "applied_pushes": [partial]}, {"pid": 1, "applied_pushes": [whole, later]},
               {"pid": 2, "applied_pushes": [reread]}]
    assert fb.merge_pushes(samples) == [whole, later]
    assert fb.match_push([whole, later], start=1.0, end=2.5) == whole
    assert fb.match_push([whole, later], start=3.0, end=50.0) is None
    assert fb.match_push([whole, later], start=3.0, end=56.0) == later  # within the slack after the run's end


def test_the_time_until_every_loop_closed_is_the_latest_first_closing(fb):
    closings = {"fue": [{"applied": 130.0, "runs": []}, {"applied": 110.0, "runs": []}],
                "graph": [{"push": None, "runs": [run("g", 0, 0, 150.0)]}], "sources": []}
    assert fb.first_closed(closings, up_at=100.0) == {"fue": 10.0, "graph": 50.0, "sources": None}


def test_a_time_scheduled_run_starts_its_closing_at_the_commit_its_reading_task_read(fb):
    c = {"commit": 50.0, "trigger": 10.0, "reader_started": 52.0, "push": 100.0, "applied": 101.0,
         "oldest_unserved": 20.0, "runs": [run("fue_pseudo_training", 10.0, 11.0, 102.0)]}
    s = fb.stages(c)
    assert (s["commit→trigger"], s["trigger→queued"], s["queued→start"], s["job"], s["push→applied"]) == (
        2.0, None, None, 48.0, 1.0)
    assert s["total"] == 51.0 and s["stale"] == 81.0 and s["job: run queued→start (before the commit)"] == 1.0


def test_commit_times_number_a_table_loaded_before_its_newest_commit_right(fb, tmp_path):
    """delta-rs lists commits up to the newest but numbers them from the version it loaded: the race the
    competing-load run hit (every page_snapshots commit one version late)."""
    import pandas as pd
    from deltalake import DeltaTable, write_deltalake

    for n in range(3):
        write_deltalake(str(tmp_path), pd.DataFrame({"n": [n]}), mode="append")
    truth = [(h["version"], h["timestamp"] / 1000) for h in reversed(DeltaTable(str(tmp_path)).history())]
    assert [v for v, _ in truth] == [0, 1, 2]
    loaded_early = DeltaTable(str(tmp_path), version=1).history()  # as if commit 2 landed after the load
    assert [h["version"] for h in loaded_early] == [1, 0, -1]
    assert fb.commit_times(loaded_early) == truth
