"""The model registry's record of the model families as the one Airflow task of the ``model_registry`` DAG.

:func:`registry_task` runs :func:`focuscrawl.orchestration.model_families.mirror` for each family in turn: every
stored version the registry (MLflow) lacks is logged, and the ``champion`` alias follows the store's champion. It
runs in a DAG of its own, never inside a loop's run, so no push waits for MLflow. A registry that is down costs the
record, not the loop: the task says so with the fix and succeeds, and the next run logs what this one could not
(the stores keep every version).
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


def record_families(cfg, names, log=print) -> dict[str, list[str]]:
    """:func:`record_family` for each of ``names`` in turn, what each did. One family that fails (a defect: a
    registry that is down is not one) spares the others; the error names every one that failed, after all ran."""
    done, failed = {}, {}
    for name in names:
        try:
            done[name] = record_family(cfg, name, log)
        except Exception as exc:  # noqa: BLE001 - the other families are still recorded; raised below
            log(f"ERROR: record_{name}: {type(exc).__name__}: {exc}")
            failed[name] = f"{type(exc).__name__}: {exc}"
    if failed:
        raise RuntimeError(f"model_registry: {len(failed)} of {len(names)} families failed to record "
                           f"({'; '.join(f'{n}: {e}' for n, e in failed.items())}); the others were recorded")
    return done


def registry_task(cfg, names):
    """The Airflow task ``record``: the families ``names`` recorded one after another in one process, in the
    registry's one-slot pool (``focuscrawl.services.airflow.REGISTRY_POOL``), beside the loops, at :data:`NICENESS`
    at least. One process, not a task per family: every push of every loop starts a run, and each task process paid
    Airflow's start, a parse of the DAG file and MLflow's imports (at 9ff44a4, 132 record tasks in the first 14
    minutes of the world project, half the platform's task processes)."""
    from airflow.sdk import task

    from focuscrawl.services.airflow import REGISTRY_POOL

    @task(task_id="record", retries=1, pool=REGISTRY_POOL)
    def record() -> dict[str, list[str]]:
        os.nice(max(0, NICENESS - os.nice(0)))  # never lowered: that needs privileges a worker may not have
        return record_families(cfg, list(names), log=lambda line: print(line, flush=True))

    return record()


__all__ = ["NICENESS", "record_families", "record_family", "registry_task"]
