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
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

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


def weight_of(run_id: str) -> int:
    """Higher for older runs: one point per second between 2026 and the run's time."""
    at = run_time(run_id)
    return _MAX_WEIGHT - int((time.time() if at is None else at) - _EPOCH)


class OldestRunFirst(PriorityWeightStrategy):
    """Priority weight rule: the task of the older DAG run first (registered by ``plugins/focuscrawl_priority.py``)."""

    def get_weight(self, ti) -> int:
        return weight_of(ti.run_id)


# What DAGs put in ``weight_rule``: the rule's import path (an instance fails to serialize on mapped tasks).
OLDEST_RUN_FIRST = f"{OldestRunFirst.__module__}.{OldestRunFirst.__qualname__}"
