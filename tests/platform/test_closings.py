"""tests/closings.py: the test of a loop closing that the live platform's test and make chaos share."""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

from closings import closed_after
from focuscrawl.core.status_file import write_status

KILL = 1_800_000_000.0


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


class Runs:
    """Airflow's client as far as ``closed_after`` asks it: the successful runs of a DAG started since a time."""

    def __init__(self, *runs: tuple[str, float, float]) -> None:
        self.runs, self.asked = runs, []

    def dag_runs(self, dag_id: str, state: list[str], start_date_gte: str) -> list[dict]:
        self.asked.append((dag_id, state))
        since = datetime.fromisoformat(start_date_gte).timestamp()
        return [{"dag_run_id": run_id, "start_date": stamp(began), "end_date": stamp(ended), "state": "success"}
                for run_id, began, ended in self.runs if began >= since]


def follower(tmp_path, name: str, *pushes: tuple[float, float]) -> SimpleNamespace:
    """A var folder whose ``name`` process applied ``pushes``: (first record sent, last record applied), epoch s."""
    write_status(tmp_path / "status" / f"{name}.json", {"applied_pushes": [
        {"topic": "t", "records": 5, "first_record_ms": int(sent * 1000), "last_record_ms": int(sent * 1000),
         "first_applied_ms": int(applied * 1000), "last_applied_ms": int(applied * 1000)} for sent, applied in pushes]})
    return SimpleNamespace(var_dir=tmp_path)


def test_a_loop_closes_with_the_first_push_sent_after_a_run_that_started_after_the_moment(tmp_path):
    client = Runs(("before", KILL - 100, KILL - 50), ("after", KILL + 30, KILL + 90))
    # pushes of the run before the kill, applied again by the restarted follower after the run: not a closing
    cfg = follower(tmp_path, "revisitor", (KILL - 60, KILL + 20), (KILL - 60, KILL + 100))
    assert closed_after(cfg, client, "revisits", KILL) is None
    assert client.asked == [("outlinks_train", ["success"])]

    cfg = follower(tmp_path, "revisitor", (KILL - 60, KILL + 20), (KILL + 85, KILL + 95), (KILL + 200, KILL + 201))
    assert closed_after(cfg, client, "revisits", KILL) == (KILL + 95, "a push of 5 records applied after "
                                                                      "outlinks_train after")


def test_no_run_started_after_the_moment_is_no_closing_and_the_graph_loop_closes_when_its_run_ends(tmp_path):
    cfg = follower(tmp_path, "source-crawler", (KILL + 10, KILL + 11))
    assert closed_after(cfg, Runs(("early", KILL - 5, KILL + 40)), "sources", KILL) is None
    assert closed_after(cfg, Runs(("r", KILL + 5, KILL + 40)), "graph", KILL) == (
        KILL + 40, "graph_estimation r succeeded")
