"""Which waiting task gets a free slot of the ``spark`` pool: the one of the oldest DAG run.

On the embedded default the pool has one slot (two cores), and the platform's data-aware DAGs
always have a run waiting (each new Delta version of the stream tables queues one). Airflow
orders waiting tasks by priority weight only, ties in no stated order, and its built-in weight
rules rank by position in the DAG, so some loop always lost (2026-12-01, platform test on 2 cores):

* ``downstream`` (the default): each new run's first job outranks the last jobs of runs in flight;
  ``outlinks_train``'s ``score``, the task that pushes to the revisitor, waited 15+ minutes;
* ``upstream``: the deep tasks of the outlinks chains outrank every one-job DAG;
  ``source_schedule`` waited 14 minutes behind them;
* ``absolute`` (all equal): a newer ``graph_estimation`` task went before a ``source_schedule``
  task queued a minute earlier, so the tie order is not first-come either.

:class:`OldestRunFirst` makes the pool first-come, first-served by DAG run: a task's weight falls
with its run's timestamp, so the tasks of a run in flight go before those of runs created after
it, and every loop's run waits at most for the runs queued before it. The timestamp is read from
the run id (Airflow's ``<run type>__<ISO time>[_suffix]``: stable over retries and re-computations
of the weight); a run id of another shape gets the time the weight is computed.

A run that continues a loop's chain is dated by where the chain began (:func:`origin_time`): an
asset-triggered run's id carries the time of its first queued event, and for ``outlinks_train`` that is
the end of the ``outlinks_features`` run it trains on, later than the first snapshot event of the next
``outlinks_features`` run, which was queued while the first ran. Dated by its id, each first train run
waited behind newer features runs: 134 s for a slot in the freshness bench at 22c53f3. Dated by the
features run that produced its triggering event, it goes first, as the oldest data should.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timezone
from functools import lru_cache
from typing import Callable

from airflow.task.priority_strategy import PriorityWeightStrategy

_RUN_TIME = re.compile(r"__(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?)")
# Weights are 32-bit in Airflow's database: seconds since 2026 counted down from its maximum stay
# positive until 2094 (and ordered correctly until 2162).
_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
_MAX_WEIGHT = 2**31 - 1


def run_time(run_id: str) -> float | None:
    """The timestamp in an Airflow run id (``scheduled__2026-12-01T12:09:27.18+00:00``), else ``None``."""
    found = _RUN_TIME.search(run_id or "")
    if not found:
        return None
    stamp = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()


def weight_of(run_id: str, at: float | None = None) -> int:
    """Higher for older runs: one point per second between 2026 and ``at`` (default: the run id's time)."""
    at = run_time(run_id) if at is None else at
    return _MAX_WEIGHT - int((time.time() if at is None else at) - _EPOCH)


# (dag_id, its run's time) -> (dag_id, run_id) of the DAG run whose asset event triggered that run, or None
Trigger = Callable[[str, float], "tuple[str, str] | None"]


def origin_time(dag_id: str, run_id: str, trigger: Trigger, depth: int = 3) -> float | None:
    """The time a run's data began waiting: its run id's time or, for a run triggered by an asset event
    another DAG run produced, that run's origin when earlier (followed up to ``depth`` DAGs back)."""
    at = run_time(run_id)
    if at is None or depth == 0 or not run_id.startswith("asset_triggered__"):
        return at
    source = trigger(dag_id, at)
    earlier = origin_time(*source, trigger, depth - 1) if source else None
    return at if earlier is None else min(at, earlier)


@lru_cache(maxsize=4096)
def triggering_run(dag_id: str, at: float) -> tuple[str, str] | None:
    """From Airflow's database: the producing run of the newest event, at or before ``at``, on an Asset
    ``dag_id`` is scheduled on (the event that queued the run; a stream's REST event names no run)."""
    from airflow import settings
    from airflow.models.asset import AssetEvent, DagScheduleAssetReference
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    # A session of its own: the scheduler computes weights inside its open transaction.
    with Session(settings.engine) as session:
        row = session.execute(
            select(AssetEvent.source_dag_id, AssetEvent.source_run_id)
            .where(AssetEvent.asset_id.in_(select(DagScheduleAssetReference.asset_id)
                                           .where(DagScheduleAssetReference.dag_id == dag_id)),
                   AssetEvent.timestamp <= datetime.fromtimestamp(at, timezone.utc))
            .order_by(AssetEvent.timestamp.desc()).limit(1)).first()
    return (row.source_dag_id, row.source_run_id) if row and row.source_dag_id and row.source_run_id else None


class OldestRunFirst(PriorityWeightStrategy):
    """Priority weight rule: the task of the DAG run with the older data first (registered by
    ``plugins/focuscrawl_priority.py``)."""

    def get_weight(self, ti) -> int:
        try:
            at = origin_time(ti.dag_id, ti.run_id, triggering_run)
        except Exception as exc:  # noqa: BLE001 - where no database is at hand (a task's own process): the run id's time
            logging.getLogger(__name__).debug("weight of %s from its run id only: %s", ti.run_id, exc)
            at = None
        return weight_of(ti.run_id, at)


# What DAGs put in ``weight_rule``: the rule's import path (an instance fails to serialize on mapped tasks).
OLDEST_RUN_FIRST = f"{OldestRunFirst.__module__}.{OldestRunFirst.__qualname__}"
