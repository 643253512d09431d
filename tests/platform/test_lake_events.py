"""The lake's Asset events (focuscrawl.orchestration.asset_events): what is watched, when an event is posted, restarts.

Real Delta tables (delta-rs); the Airflow REST client is a small in-memory fake with the calls
the poster makes, and the runs it asks about (the real API is exercised by tests/platform/test_platform_e2e.py).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from focuscrawl.orchestration.asset_events import (HELD_AFTER, HELD_CHECK, LakeEventPoster, table_version,
                                                     watched_assets)


class FakeAirflow:
    def __init__(self, assets):
        self._assets = assets
        self.events = []

    def assets(self):
        return self._assets

    def post_asset_event(self, asset_id, extra=None):
        self.events.append((asset_id, extra))
        return {"id": len(self.events)}

    busy: set = set()  # DAG ids with a run queued or running
    paused: set = set()

    def dag(self, dag_id):
        return {"dag_id": dag_id, "is_paused": dag_id in self.paused, "file_token": f"token-of-{dag_id}"}

    queued: set = set()  # DAG ids with asset events queued for their next run
    reparsed: list = []

    def queued_asset_events(self, dag_id):
        return [{"dag_id": dag_id, "asset_id": 1}] if dag_id in self.queued else []

    def reparse(self, file_token):
        self.reparsed.append(file_token)

    def dag_runs(self, dag_id, state=(), limit=100):
        return [{"dag_id": dag_id, "state": "running"}] if dag_id in self.busy and "running" in state else []


def _asset(i, name, uri, scheduled=(), producing=(), group="delta"):
    return {"id": i, "name": name, "uri": uri, "group": group,
            "scheduled_dags": [{"dag_id": d} for d in scheduled],
            "producing_tasks": [{"dag_id": d, "task_id": "t"} for d in producing]}


def _append(path, n=1):
    write_deltalake(str(path), pa.table({"x": list(range(n))}), mode="append")


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_watches_only_stream_landed_tables_that_a_dag_waits_on(tmp_path):
    client = FakeAirflow([
        _asset(1, "delta.page_snapshots", f"file://{tmp_path}/a", scheduled=["outlinks_features"]),
        _asset(2, "delta.outlink_features", f"file://{tmp_path}/b", scheduled=["outlinks_train"],
               producing=["outlinks_features"]),  # a task emits its event
        _asset(3, "delta.fue_extractions", f"file://{tmp_path}/c"),  # nobody scheduled on it
        _asset(4, "kafka.focuscrawl.x", "kafka://h:1/x", scheduled=["d"], group="kafka"),
    ])
    (watched,) = watched_assets(client.assets())
    assert (watched.name, watched.dags, watched.location) == ("delta.page_snapshots", ("outlinks_features",),
                                                              f"{tmp_path}/a")


def test_posts_when_the_version_advances_rate_limited_and_survives_a_restart(tmp_path):
    table = tmp_path / "graph_sample"
    client = FakeAirflow([_asset(7, "delta.graph_sample", f"file://{table}", scheduled=["graph_estimation"])])
    clock, state = Clock(), tmp_path / "state.json"
    poster = LakeEventPoster(client, state, min_interval=60, clock=clock)
    poster.refresh()
    assert poster.poll() == [] and table_version(str(table)) is None  # no table yet: nothing to announce

    _append(table)
    assert poster.poll() == [("delta.graph_sample", 0)]
    assert client.events == [(7, {"table": "graph_sample", "delta_version": 0, "posted_by": "focuscrawl.orchestration.asset_events"})]
    assert poster.poll() == []  # same version: no second event

    _append(table), _append(table)
    clock.now = 30
    assert poster.poll() == []  # within the minimum interval: held back
    clock.now = 61
    assert poster.poll() == [("delta.graph_sample", 2)]  # then one event carries the newest version

    # A restarted poster remembers what it posted, and announces what landed while it was down.
    again = LakeEventPoster(client, state, min_interval=60, clock=clock)
    again.refresh()
    assert again.poll() == []
    _append(table)
    assert again.poll() == [("delta.graph_sample", 3)]
    assert len(client.events) == 3 and again.status()["versions"] == {"delta.graph_sample": 3}


def test_an_unreadable_state_file_is_an_error_not_a_silent_reset(tmp_path):
    state = tmp_path / "state.json"
    state.write_text("{not json")
    with pytest.raises(ValueError):
        LakeEventPoster(FakeAirflow([]), state)



def test_holds_the_event_while_every_dag_on_the_table_has_a_run_in_flight(tmp_path):
    table = tmp_path / "page_snapshots"
    client = FakeAirflow([_asset(3, "delta.page_snapshots", f"file://{table}", scheduled=["outlinks_features", "other"])])
    clock = Clock()
    poster = LakeEventPoster(client, tmp_path / "state.json", min_interval=60, clock=clock)
    poster.refresh()
    client.busy = {"outlinks_features", "other"}
    _append(table)
    assert poster.poll() == [] and client.events == []  # both busy: the next run would only queue
    client.busy = {"other"}
    clock.now = 5
    assert poster.poll() == [("delta.page_snapshots", 0)]  # one of them is free: it runs on the news
    _append(table)
    client.busy = set()
    clock.now = 30
    assert poster.poll() == []  # free, but the rate limit still holds
    clock.now = 66
    assert poster.poll() == [("delta.page_snapshots", 1)]


def test_an_event_held_back_does_not_push_the_next_one_back(tmp_path):
    """The interval counts from when the announced version was first seen, not from its post: a table landing once
    per interval (the revisitor's periods) is announced as each lands, also after one event was held back."""
    table = tmp_path / "page_snapshots"
    client = FakeAirflow([_asset(3, "delta.page_snapshots", f"file://{table}", scheduled=["outlinks_features"])])
    clock = Clock()
    poster = LakeEventPoster(client, tmp_path / "state.json", min_interval=30, clock=clock)
    poster.refresh()
    client.busy = {"outlinks_features"}
    _append(table)
    assert poster.poll() == []  # a run is in flight: held
    client.busy = set()
    clock.now = 23
    assert poster.poll() == [("delta.page_snapshots", 0)]
    _append(table)
    clock.now = 30
    assert poster.poll() == [("delta.page_snapshots", 1)]  # 30 s after version 0 landed, though 7 s after its event
    _append(table)
    clock.now = 31
    assert poster.poll() == []  # the rate limit holds from version 1's landing
    clock.now = 60
    assert poster.poll() == [("delta.page_snapshots", 2)]


def test_holds_the_event_while_the_dag_is_paused_and_posts_the_newest_version_once_it_is_unpaused(tmp_path):
    # `up` starts the stream processes before it unpauses the DAGs: Airflow would queue no run for an event then
    table = tmp_path / "graph_sample"
    client = FakeAirflow([_asset(7, "delta.graph_sample", f"file://{table}", scheduled=["graph_estimation"])])
    client.paused, client.busy = {"graph_estimation"}, set()
    poster = LakeEventPoster(client, tmp_path / "state.json", min_interval=60, clock=Clock())
    poster.refresh()
    _append(table), _append(table)
    assert poster.poll() == [] and client.events == []
    client.paused = set()
    assert poster.poll() == [("delta.graph_sample", 1)]  # at once: the first event of the DAG


def test_the_minimum_interval_is_per_dag_and_a_dags_tables_post_together(tmp_path):
    recrawls, clicks, sample = tmp_path / "source_recrawls", tmp_path / "page_clicks", tmp_path / "graph_sample"
    client = FakeAirflow([_asset(1, "delta.source_recrawls", f"file://{recrawls}", scheduled=["source_schedule"]),
                          _asset(2, "delta.page_clicks", f"file://{clicks}", scheduled=["source_schedule"]),
                          _asset(3, "delta.graph_sample", f"file://{sample}", scheduled=["graph_estimation"])])
    clock = Clock()
    poster = LakeEventPoster(client, tmp_path / "state.json", clock=clock,
                             dag_min_interval={"graph_estimation": 600, "source_schedule": 300})
    poster.refresh()
    client.busy = set()
    for table in (recrawls, clicks, sample):
        _append(table)
    # the first events post at once, both tables of source_schedule in one pass (one run takes them)
    assert poster.poll() == [("delta.source_recrawls", 0), ("delta.page_clicks", 0), ("delta.graph_sample", 0)]
    for table in (recrawls, clicks, sample):
        _append(table)
    clock.now = 299
    assert poster.poll() == []  # past the default minute, within both DAGs' own intervals
    clock.now = 300
    # one clock per DAG: source_schedule is due for both its tables at once, not twice per interval
    assert poster.poll() == [("delta.source_recrawls", 1), ("delta.page_clicks", 1)]
    _append(clicks)
    clock.now = 598
    assert poster.poll() == []  # source_schedule's clock counts from 299, when the poster first saw the versions at 1
    clock.now = 600
    assert poster.poll() == [("delta.page_clicks", 2), ("delta.graph_sample", 1)]
    assert poster.status()["min_interval_s"] == {"source_schedule": 300, "graph_estimation": 600}


def test_a_dag_the_project_does_not_pace_gets_the_default_minute(tmp_path):
    from focuscrawl.orchestration.asset_events import MIN_INTERVAL

    table = tmp_path / "page_snapshots"
    client = FakeAirflow([_asset(1, "delta.page_snapshots", f"file://{table}", scheduled=["outlinks_features"])])
    clock = Clock()
    poster = LakeEventPoster(client, tmp_path / "state.json", clock=clock, dag_min_interval={"graph_estimation": 600})
    poster.refresh()
    client.busy = set()
    _append(table)
    assert poster.poll() == [("delta.page_snapshots", 0)]
    _append(table)
    clock.now = MIN_INTERVAL
    assert MIN_INTERVAL == 60 and poster.poll() == [("delta.page_snapshots", 1)]


def test_a_table_only_created_is_not_announced(tmp_path):
    """The consumer's empty table starts no run; its first rows do."""
    from focuscrawl.lake import ensure_table
    from focuscrawl.lake.tables import Column, TableSpec

    table = tmp_path / "graph_sample"
    client = FakeAirflow([_asset(7, "delta.graph_sample", f"file://{table}", scheduled=["graph_estimation"])])
    poster = LakeEventPoster(client, tmp_path / "state.json", min_interval=60, clock=Clock())
    poster.refresh()
    ensure_table(str(table), TableSpec("graph_sample", "a stream table", (Column("x", pa.int64(), "a value"),)))
    assert table_version(str(table)) is None and poster.poll() == []
    _append(table)
    assert poster.poll() == [("delta.graph_sample", 1)] and len(client.events) == 1


def test_a_dag_held_back_with_queued_events_and_no_active_run_has_its_file_reparsed(tmp_path):
    """Airflow 3.3's stale max_active_runs flag (apache/airflow#56050) held outlinks_train 327 s in a freshness run."""
    client = FakeAirflow([_asset(1, "delta.page_snapshots", f"file://{tmp_path}/a", scheduled=["outlinks_features"]),
                          _asset(2, "delta.outlink_features", f"file://{tmp_path}/b", scheduled=["outlinks_train"],
                                 producing=["outlinks_features"])])
    client.queued, client.busy, client.reparsed = {"outlinks_train", "outlinks_features"}, {"outlinks_features"}, []
    clock = Clock()
    poster = LakeEventPoster(client, tmp_path / "state.json", clock=clock)
    poster.refresh()
    assert poster.scheduled == ("outlinks_features", "outlinks_train")  # a task's Asset too, not only the lake's
    assert poster.release_held() == []  # first seen held: the scheduler may just not have come round to it
    clock.now = HELD_CHECK
    assert poster.release_held() == []
    clock.now = HELD_AFTER + HELD_CHECK
    assert poster.release_held() == ["outlinks_train"]  # outlinks_features has its run: rightly waiting
    assert client.reparsed == ["token-of-outlinks_train"] and poster.status()["held_dags_released"] == 1
    clock.now += HELD_CHECK
    assert poster.release_held() == []  # asked once; again only if still held HELD_AFTER later
    client.paused = {"outlinks_train"}  # a paused DAG is rightly held: Airflow runs it once it is unpaused
    clock.now += HELD_AFTER + HELD_CHECK
    assert poster.release_held() == [] and client.reparsed == ["token-of-outlinks_train"]
    client.paused = set()
    client.queued = set()  # its run was created: the events are consumed
    clock.now += HELD_AFTER
    assert poster.release_held() == [] and client.reparsed == ["token-of-outlinks_train"]
