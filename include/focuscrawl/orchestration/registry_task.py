"""The model registry's record of one model family as an Airflow task of the ``model_registry`` DAG.

:func:`registry_task` runs :func:`focuscrawl.orchestration.model_families.mirror` for one family: every stored
version the registry (MLflow) lacks is logged, and the ``champion`` alias follows the store's champion. It runs in
a DAG of its own, never inside a loop's run, so no push waits for MLflow. A registry that is down costs the record,
not the loop: the task says so with the fix and succeeds, and the next run logs what this one could not (the
stores keep every version).
"""

from __future__ import annotations

import os

# The niceness a record task's process takes before it records (its own process: Airflow runs each task in one).
# The loops' tasks get the CPU first: measuring a FUE refresh's held-out figures is a cross-validation, and
# record_fue was the third-largest CPU user of the loaded freshness run at 6afc487 (559 s over 13 runs, up to
# 137 s each), beside the loops it never holds up.
NICENESS = 10


def record_family(cfg, name: str, log=print) -> list[str]:
    """Mirror the family ``name`` into the registry; what was done, a line per model (none when the registry is
    down, or ``pages`` has no active project)."""
    from focuscrawl.orchestration.model_families import family, mirror
    from focuscrawl.services.model_registry import FIX, connect

    found = family(cfg, name)
    if found is None:
        log(f"record_{name}: no active project, so no {name} model store to record")
        return []
    registry = connect(cfg, log)
    if registry is None:
        return []
    from mlflow.exceptions import MlflowException

    try:
        done = mirror(found, registry)
    except (MlflowException, OSError) as exc:  # went down mid-way: what was logged stays, the next run goes on
        log(f"WARNING: record_{name}: the model registry failed ({str(exc).splitlines()[0]}); {FIX}. "
            "The next run records what this one could not.")
        return []
    for line in done:
        log(f"record_{name}: {line}")
    return done


def registry_task(cfg, name: str):
    """An Airflow task ``record_<name>`` for the model family ``name``, in the registry's one-slot pool
    (``focuscrawl.services.airflow.REGISTRY_POOL``): the families are recorded one after another, beside the loops,
    at :data:`NICENESS` at least."""
    from airflow.sdk import task

    from focuscrawl.services.airflow import REGISTRY_POOL

    @task(task_id=f"record_{name}", retries=1, pool=REGISTRY_POOL)
    def record() -> list[str]:
        os.nice(max(0, NICENESS - os.nice(0)))  # never lowered: that needs privileges a worker may not have
        return record_family(cfg, name, log=lambda line: print(line, flush=True))

    return record()


__all__ = ["NICENESS", "record_family", "registry_task"]
