"""``up`` unpauses a DAG only once Airflow holds it with the active project's schedule
(``Platform.unpause_dags``; the CI run of 2026-12-01 ran DAGs on the defaults for 21-23 s)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from focuscrawl.config import settings
from focuscrawl.platform.up import Platform

# what Airflow shows before its DAG processor re-parses (the defaults) and after (the project below)
DEFAULTS = {"fue_pseudo_training": "0:05:00", "delta_maintenance": "@daily", "model_registry": "Asset"}
PROJECT = {"fue_pseudo_training": "0:02:00", "delta_maintenance": None, "model_registry": "Asset"}


class FakeAirflow:
    """The REST calls ``unpause_dags`` makes; the DAG processor re-parses after ``stale_polls`` polls."""

    def __init__(self, stale_polls: int | None, listed=("fue_pseudo_training", "delta_maintenance", "model_registry"),
                 refuse_reparse: bool = False, parsed_at: dict[str, str] | None = None):
        self.stale_polls, self.listed, self.polls, self.unpaused = stale_polls, listed, 0, []
        self.reparsed, self.refuse_reparse, self.parsed_at = [], refuse_reparse, parsed_at or {}

    def summaries(self) -> dict:
        fresh = self.stale_polls is not None and self.polls > self.stale_polls
        return {i: (PROJECT if fresh else DEFAULTS)[i] for i in self.listed}

    def dags(self) -> list[dict]:
        self.polls += 1
        return [{"dag_id": i, "timetable_summary": s, "file_token": f"file-of-{i}",
                 "last_parsed_time": self.parsed_at.get(i)} for i, s in self.summaries().items()]

    def reparse(self, file_token: str) -> None:
        from focuscrawl.services.airflow import AirflowError

        if self.refuse_reparse:
            raise AirflowError(f"PUT /api/v2/parseDagFile/{file_token} -> 403: Forbidden", 403)
        self.reparsed.append(file_token)

    def unpause(self, dag_id: str) -> None:
        self.unpaused.append((dag_id, self.summaries()[dag_id]))


@pytest.fixture
def platform(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "project.json").write_text(json.dumps(
        {"schedules": {"fue_pseudo_training": "2m", "delta_maintenance": "none"}}))
    project = SimpleNamespace(enabled_loops=lambda: [("fue", None, None)], profile=SimpleNamespace(pages=None))
    return Platform(project, settings(), services=["airflow"], log=lambda _: None)


def test_no_dag_is_unpaused_before_airflow_holds_the_projects_schedules(platform):
    client = FakeAirflow(stale_polls=1)
    assert platform.unpause_dags(timeout=30, client=client) == ["fue_pseudo_training", "delta_maintenance",
                                                                "model_registry"]
    assert client.polls == 2 and client.unpaused == [(i, PROJECT[i]) for i in PROJECT]
    # the files of the DAGs on another schedule were asked to be re-parsed, each once (model_registry's matched)
    assert client.reparsed == ["file-of-delta_maintenance", "file-of-fue_pseudo_training"]


def test_a_dag_parsed_before_the_project_was_written_is_parsed_again_whatever_its_schedule(platform, tmp_path):
    """A DAG file reads the active project (its Params, the page focus), not only its schedule: on an Airflow that
    parsed the files before this `up`, each is asked to be parsed again, once, even when its schedule matches."""
    import os

    os.utime(tmp_path / "run" / "project.json", (1_800_000_000, 1_800_000_000))
    client = FakeAirflow(stale_polls=0, parsed_at={"model_registry": "2027-01-15T07:59:00Z",   # before the project
                                                   "delta_maintenance": "2027-01-15T08:01:00Z"})  # after it
    platform.unpause_dags(timeout=30, client=client)
    assert client.reparsed == ["file-of-model_registry"]


def test_a_refused_reparse_request_is_said_and_the_wait_goes_on(platform):
    lines = []
    platform.log = lines.append
    client = FakeAirflow(stale_polls=2, refuse_reparse=True)
    assert platform.unpause_dags(timeout=30, client=client) == ["fue_pseudo_training", "delta_maintenance",
                                                                "model_registry"]
    assert client.polls == 3 and client.unpaused == [(i, PROJECT[i]) for i in PROJECT]
    assert sum("re-parse a DAG file failed" in line and "403" in line for line in lines) == 2, lines


def test_a_schedule_that_never_matches_is_an_error_naming_the_fix_and_nothing_is_unpaused(platform):
    client = FakeAirflow(stale_polls=None)
    with pytest.raises(RuntimeError, match=r"delta_maintenance on '@daily' \(the project: 'none'\).*dag-processor.*services down"):
        platform.unpause_dags(timeout=0.1, client=client)
    assert client.unpaused == []


def test_a_dag_airflow_does_not_list_is_left_alone(platform):
    client = FakeAirflow(stale_polls=0, listed=("delta_maintenance",))
    assert platform.unpause_dags(timeout=0.1, client=client) == ["delta_maintenance"]
    assert client.unpaused == [("delta_maintenance", None)]


class Recording:
    """The session's real REST client, noting each DAG's schedule in Airflow when it is unpaused."""

    def __init__(self, client):
        self.client, self.unpaused = client, []

    def dags(self):
        return self.client.dags()

    def reparse(self, file_token):
        self.client.reparse(file_token)

    def unpause(self, dag_id):
        self.unpaused.append((dag_id, self.client.dag(dag_id)["timetable_summary"]))
        self.client.unpause(dag_id)


@pytest.mark.integration
def test_on_a_running_airflow_a_dag_is_unpaused_only_with_the_projects_schedule(airflow, cfg):
    """The CI run's case: delta_maintenance parsed on @daily, then `up` of a project saying "none"."""
    from focuscrawl.core.status_file import write_status

    from focuscrawl.services.process import wait_until

    active = Path(cfg.var_dir) / "run" / "project.json"
    assert not active.exists()  # no project is active: the DAG files read the defaults

    def on_the_defaults():
        """A project an earlier test brought up may still be what Airflow last parsed (an unchanged file is parsed
        again every 5 minutes): asked, the DAG processor parses the defaults again."""
        if airflow.dag("delta_maintenance")["timetable_summary"] != "0 0 * * *":
            airflow.reparse(airflow.dag("delta_maintenance")["file_token"])
            wait_until(lambda: airflow.dag("delta_maintenance")["timetable_summary"] == "0 0 * * *", 300,
                       "delta_maintenance back on its default @daily", interval=2.0)

    on_the_defaults()
    write_status(active, {"schedules": {"delta_maintenance": "none"}})
    client, lines = Recording(airflow), []
    platform = Platform(SimpleNamespace(enabled_loops=lambda: [], profile=SimpleNamespace(pages=None)), cfg, services=["airflow"], log=lines.append)
    began = datetime.now(timezone.utc)
    try:
        assert platform.unpause_dags(timeout=300, client=client) == ["delta_maintenance", "model_registry"]
        assert client.unpaused == [("delta_maintenance", None), ("model_registry", "Asset")]
        # "none": the scheduler plans no run (on @daily it would run once at once: run_immediately)
        assert airflow.dag("delta_maintenance")["next_dagrun_run_after"] is None
        # (a run another test triggered by hand, or queued before this test, is not this unpause's)
        assert [r["dag_run_id"] for r in airflow.dag_runs("delta_maintenance")
                if r["run_type"] != "manual" and datetime.fromisoformat(r["queued_at"] or r["run_after"]) >= began] == []
        print(lines[-1])  # how long the wait for the DAG processor took
    finally:
        airflow.pause("delta_maintenance")
        active.unlink()
        # the session's Airflow as this test found it: the next test on it (the browser's, on the same xdist
        # worker: tests/scheduling.py) reads the default schedules, not this project's
        on_the_defaults()


def test_the_progress_line_reads_the_loops_figures_from_the_status_files(platform, tmp_path):
    # `up` printed this line every minute and died on it when the figures' signature changed
    (tmp_path / "status").mkdir()
    (tmp_path / "status" / "fue-chooser-x.json").write_text(json.dumps({"process": "fue-chooser-x", "pid": 1}))
    platform.project.to_json = lambda: {"name": "t", "loops": {"fue": {"enabled": True}}}
    line = platform.progress_line(61.0, 539.0)
    assert line.startswith("[61s, 539s left] 0/0 up, 0 restarts"), line
