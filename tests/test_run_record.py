"""``run.json`` names the code a run loaded, not what the checkout holds when a long run rewrites it."""

from __future__ import annotations

import json

import pytest

from focuscrawl.experiments import run_record


def test_a_record_rewritten_later_keeps_the_code_the_run_started_with(tmp_path, monkeypatch):
    at_start = {"commit": "a" * 40, "dirty": False}
    monkeypatch.setattr(run_record, "git_commit", lambda cwd=None: {"commit": "b" * 40, "dirty": True})
    path = run_record.write_run_json(tmp_path, "fue", {"duration": "7d"}, {"seed": 0}, code=at_start, complete=False)
    path = run_record.write_run_json(tmp_path, "fue", {"duration": "7d"}, {"seed": 0}, code=at_start, complete=True)
    record = json.loads(path.read_text())
    assert record["code"] == at_start and record["complete"] is True
    # without one, the record asks git (short runs write it once, at their end)
    plain = json.loads(run_record.write_run_json(tmp_path / "x", "fue", {}, {}).read_text())
    assert plain["code"] == {"commit": "b" * 40, "dirty": True}


def test_a_run_from_a_dirty_tree_may_not_publish_under_bench_results_unless_a_draft(tmp_path):
    published = tmp_path / "bench" / "results" / "003-graph-estimation"
    dirty, clean = {"commit": "c" * 40, "dirty": True}, {"commit": "c" * 40, "dirty": False}
    with pytest.raises(SystemExit, match="--draft.*write elsewhere with --output$"):
        run_record.refuse_unpublishable(published, dirty, draft=False)
    with pytest.raises(SystemExit, match="write elsewhere with --out$"):  # the caller's own flag
        run_record.refuse_unpublishable(published, dirty, draft=False, out_flag="--out")
    with pytest.raises(SystemExit, match="not a git checkout"):
        run_record.refuse_unpublishable(published, {"commit": None, "dirty": None}, draft=False)
    run_record.refuse_unpublishable(published, dirty, draft=True)      # declared a draft
    run_record.refuse_unpublishable(published, clean, draft=False)     # a clean commit publishes
    run_record.refuse_unpublishable(tmp_path / "var" / "x", dirty, draft=False)  # not a published folder
    record = json.loads(run_record.write_run_json(published, "x", {}, {}, code=dirty, draft=True).read_text())
    assert record["draft"] is True and record["code"] == dirty


@pytest.mark.parametrize("name", ["ephemeral", "ephemeral_focus", "fue", "graph_estimation", "outlinks",
                                  "outlinks_relevant", "page_relevance"])
def test_every_experiment_refuses_before_it_runs(name, tmp_path, monkeypatch):
    import importlib

    experiment = importlib.import_module(f"focuscrawl.experiments.{name}")
    monkeypatch.setattr(run_record, "git_commit", lambda cwd=None: {"commit": "d" * 40, "dirty": True})
    out = tmp_path / "bench" / "results" / "x"
    with pytest.raises(SystemExit, match="refusing to write"):
        experiment.main(["--output", str(out)])
    assert not out.exists()
