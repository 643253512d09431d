"""``run.json`` names the code a run loaded, not what the checkout holds when a long run rewrites it."""

from __future__ import annotations

import json

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
