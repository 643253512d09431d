"""Airflow Asset events for the tables the stream processes land: the lake tells the scheduler.

A DAG task that writes a table emits its Asset event itself (``outlets``). The stream processes
(consumers into Delta, the revisitor, the graph sampler) are no Airflow tasks, so the DAGs
scheduled on their tables (``outlinks_features`` on ``page_snapshots``, ``source_schedule`` on
``source_recrawls``/``page_clicks``, ``graph_estimation`` on ``graph_sample``) would never run.
:class:`LakeEventPoster` closes that gap, in one place:

1. it asks Airflow which Assets to watch (:func:`watched_assets`): every ``delta`` Asset that a DAG
   is scheduled on and no task produces. So ``dags/assets.py`` stays the only list; a new DAG on
   a new stream table is watched without touching this module;
2. every ``interval`` seconds it reads each watched table's Delta version (delta-rs: the log only);
3. when the version advanced since the last event it posts one (``POST /api/v2/assets/events``,
   ``extra`` = table, version), at most one per DAG per minimum interval: a consumer committing
   every 2 s would otherwise queue a DAG run per commit. The interval counts from when the poster first saw
   the version the DAG's last event announced, not from the post: an event held back (point 4) would otherwise
   push every later one back as far, for good when the table lands once per interval (the revisitor's 30 s
   periods with ``outlinks_features``' 30 s: 22.9 s from commit to event at p50 in the loaded freshness run
   at f351af8, every closing, after one event was held). The interval is the project's
   ``[asset_events.min_interval]`` of the DAG (:data:`MIN_INTERVAL` when it names none), counted
   per DAG, not per table: ``source_schedule`` waits on two tables, and two clocks would start it
   twice per interval. The first event of a DAG posts at once, and the tables of a DAG that is due
   post in the same pass (one run takes them all). A table several DAGs wait on is announced as
   often as the most eager of them asks (an event starts every DAG on its Asset);
4. and not while every DAG it is due for has a run queued or running: that run reads
   the table as it is when it starts, so the event waits until one of them is free. Posted at
   once, it would queue a run behind the active one, with the time of the event in its run id;
   the spark pool serves older runs first (``focuscrawl.orchestration.airflow_priority``), and such early-queued
   runs of the busy DAGs went before the first run of ``outlinks_train``, whose Asset a task posts
   (2026-12-01: its train task waited behind a whole second outlinks chain);
5. nor while every DAG it is due for is paused: Airflow queues no run of a paused DAG for an event, so one
   posted then would be spent, and the DAG's first run after ``up`` unpauses it would wait for the next
   version and the minimum interval (``up`` starts the stream processes before Airflow holds the project's
   schedules: ``focuscrawl.platform.up``).

6. It also releases an asset-scheduled DAG that Airflow holds back with no run of its own active
   (:meth:`LakeEventPoster.release_held`, every DAG scheduled on an Asset, a task's or the lake's). Airflow 3.3
   keeps "at ``max_active_runs``" per DAG in ``DagModel.exceeds_max_non_backfill``; the DAG processor sets it from
   the runs active when it parses the file, and a parse during a run that is about to end can leave it set after
   the run ended. The scheduler then creates no run for the DAG's queued events until the file's next parse
   (apache/airflow#56050, #73032): 327 s for ``outlinks_train`` in the loaded freshness run at 2e7fd60, where
   each file is parsed every 5 minutes (``focuscrawl.services.airflow``). A DAG seen with queued events and
   no run queued or running for :data:`HELD_AFTER` seconds (looked at every :data:`HELD_CHECK`) has its file
   re-parsed, which sets the flag again from the runs then active.

The last version posted per Asset is kept in a small JSON file, so a restarted poster neither
re-posts an old version nor misses one that landed while it was down (when it last posted is not
kept: a restarted poster's first events post at once).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse

log = logging.getLogger("focuscrawl.orchestration.asset_events")

STATE_FILE = "asset_events.json"  # under $FOCUSCRAWL_VAR
# A DAG on a stream-landed table re-runs at most once a minute by default: the landings commit
# every few seconds, and a Spark DAG run takes a minute or more on the embedded default anyway.
MIN_INTERVAL = 60.0
# The scheduler creates a free DAG's run for its queued events within a loop or two (seconds); a DAG with queued
# events and nothing active for this long is held by the stale flag of point 6 of the module docstring.
HELD_AFTER = 15.0
HELD_CHECK = 10.0  # seconds between two looks (a GET per asset-scheduled DAG) at the API server


@dataclass(frozen=True, slots=True)
class WatchedAsset:
    id: int
    name: str
    uri: str
    dags: tuple[str, ...]

    @property
    def location(self) -> str:
        """The Delta table's location as delta-rs opens it (a path for ``file://``, the URI otherwise)."""
        parsed = urlparse(self.uri)
        return unquote(parsed.path) if parsed.scheme == "file" else self.uri


def watched_assets(assets: list[dict]) -> list[WatchedAsset]:
    """Of ``assets`` (Airflow's ``GET /api/v2/assets``), the ``delta`` ones a DAG is scheduled on and no task produces:
    the stream side must announce them."""
    return [WatchedAsset(a["id"], a["name"], a["uri"], tuple(sorted(d["dag_id"] for d in a["scheduled_dags"])))
            for a in assets
            if a.get("group") == "delta" and a["scheduled_dags"] and not a["producing_tasks"]]


def table_version(location: str, storage_options: dict[str, str] | None = None) -> int | None:
    """The table's latest Delta version, ``None`` while it does not exist yet or holds no data files.

    A consumer creates its table, empty, when it starts (``lake.delta_sink``): a run started on that
    computes nothing, takes the Spark slot, and counts as the loop's run (the CI runs of 2026-12-02 and
    -03 ended with an empty ``graph_estimates`` that way). delta-rs loads the active files with the
    table anyway, so asking costs nothing more.
    """
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(location, storage_options=storage_options):
        return None
    table = DeltaTable(location, storage_options=storage_options)
    return table.version() if table.file_uris() else None


@dataclass
class LakeEventPoster:
    """Posts an Asset event when a watched table's version advances (see the module docstring)."""

    client: object
    state_path: Path
    min_interval: float = MIN_INTERVAL  # seconds, for a DAG that ``dag_min_interval`` does not name
    storage_options: dict[str, str] | None = None
    clock: Callable[[], float] = time.monotonic
    dag_min_interval: dict[str, float] = field(default_factory=dict)  # DAG id -> seconds
    versions: dict[str, int] = field(default_factory=dict)  # asset name -> last version posted
    posted: int = 0
    assets: list[WatchedAsset] = field(default_factory=list)
    _announced: dict[str, float] = field(default_factory=dict)  # DAG id -> when its last event's version was seen
    _landed: dict[str, tuple[int, float]] = field(default_factory=dict)  # asset -> (newest version, when first seen)
    scheduled: tuple[str, ...] = ()  # every DAG scheduled on an Asset (point 6)
    released: int = 0
    _free_since: dict[str, float] = field(default_factory=dict)  # DAG id -> first seen with events and nothing active
    _checked: float = float("-inf")  # when release_held last looked

    def __post_init__(self) -> None:
        try:
            self.versions = {k: int(v) for k, v in json.loads(Path(self.state_path).read_text()).items()}
        except FileNotFoundError:
            self.versions = {}

    def refresh(self) -> list[WatchedAsset]:
        """Re-read the watch list and the asset-scheduled DAGs (DAGs appear as the DAG processor parses them)."""
        assets = self.client.assets()
        self.assets = watched_assets(assets)
        self.scheduled = tuple(sorted({d["dag_id"] for a in assets for d in a["scheduled_dags"]}))
        return self.assets

    def _save(self) -> None:
        path = Path(self.state_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.versions, sort_keys=True))
        os.replace(tmp, path)

    def interval(self, dag_id: str) -> float:
        """The least seconds between two events that start ``dag_id``."""
        return self.dag_min_interval.get(dag_id, self.min_interval)

    def poll(self) -> list[tuple[str, int]]:
        """One pass over the watched tables; returns the ``(asset, version)`` events posted."""
        now = self.clock()
        due = {dag for asset in self.assets for dag in asset.dags
               if dag not in self._announced or now - self._announced[dag] >= self.interval(dag)}
        held: dict[str, bool] = {}  # asked once per pass: a DAG's first table must not hold back its second
        started: dict[str, float] = {}
        events = []
        for asset in self.assets:
            version = table_version(asset.location, self.storage_options)
            if version is None or version <= self.versions.get(asset.name, -1):
                continue
            if self._landed.get(asset.name, (None,))[0] != version:
                self._landed[asset.name] = (version, now)
            waiting = [dag for dag in asset.dags if dag in due]
            if not waiting:
                continue  # rate limit: the first pass after the interval posts the newest version
            for dag in waiting:
                if dag not in held:
                    held[dag] = self._held(dag)
            if all(held[dag] for dag in waiting):
                continue  # held until a run ends or the DAG is unpaused (points 4 and 5 of the module docstring)
            self.client.post_asset_event(asset.id, {"table": asset.name.removeprefix("delta."), "delta_version": version,
                                                    "posted_by": "focuscrawl.orchestration.asset_events"})
            self.versions[asset.name] = version
            self._save()
            self.posted += 1
            events.append((asset.name, version))
            seen = self._landed[asset.name][1]
            for dag in asset.dags:  # a DAG's tables post in one pass: its clock starts at the latest of their versions
                started[dag] = max(seen, started.get(dag, seen))
            log.info("asset event %s version %d -> %s", asset.name, version, ", ".join(asset.dags))
        self._announced.update(started)
        return events

    def release_held(self) -> list[str]:
        """Re-parse the file of each asset-scheduled DAG held back with queued events, though neither paused nor with a
        run of its own queued or running (:meth:`_held`), for :data:`HELD_AFTER` seconds (point 6 of the module
        docstring); the DAG ids released."""
        now, released = self.clock(), []
        if now - self._checked < HELD_CHECK:
            return released
        self._checked = now
        for dag_id in self.scheduled:
            if not self.client.queued_asset_events(dag_id) or self._held(dag_id):
                self._free_since.pop(dag_id, None)
                continue
            since = self._free_since.setdefault(dag_id, now)
            if now - since < HELD_AFTER:
                continue
            self.client.reparse(self.client.dag(dag_id)["file_token"])
            self._free_since[dag_id] = now  # asked again only if still held another HELD_AFTER later
            self.released += 1
            released.append(dag_id)
            log.warning("%s: asset events queued and no run active for %.0f s; its file is re-parsed so that Airflow "
                        "sees it below max_active_runs (apache/airflow#56050)", dag_id, now - since)
        return released

    def _held(self, dag_id: str) -> bool:
        """``dag_id`` is paused, or has a run queued or running."""
        return bool(self.client.dag(dag_id)["is_paused"]
                    or self.client.dag_runs(dag_id, state=["queued", "running"], limit=1))

    def status(self) -> dict:
        return {"watched": {a.name: list(a.dags) for a in self.assets}, "versions": dict(self.versions),
                "min_interval_s": {dag: self.interval(dag) for a in self.assets for dag in a.dags},
                "events_posted": self.posted, "held_dags_released": self.released}
