"""What every focuscrawl DAG shares: the retry policy, its schedule, and how a Spark job is submitted.

A DAG file states its tasks and its Assets; its schedule comes from the active project through
:func:`schedule` (``focuscrawl.orchestration.schedules``: ``$FOCUSCRAWL_VAR/run/project.json`` written by
``focuscrawl up``, defaults when absent), read here and nowhere else. A Spark task runs its job on the
warm Spark (``focuscrawl.orchestration.spark_task``: a Spark Connect client of the server ``services up``
starts, conn ``spark_connect_default``), so a Spark task is one call: ``spark_job("x", "x.py", args,
inlets, outlets)``, or ``spark_chain`` for several jobs in one task. A DAG's Params come from its area's parameter object
(``focuscrawl.core.params``) through :func:`dag_params`, so their defaults are the ones the jobs' flags have.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import AssetOrTimeSchedule, CronTriggerTimetable, DeltaTriggerTimetable, Param

from focuscrawl.orchestration.airflow_priority import OLDEST_RUN_FIRST
from focuscrawl.config import settings
from focuscrawl.orchestration.schedules import dag_schedule
from focuscrawl.core.params import param_schemas
from focuscrawl.services.airflow import SPARK_POOL
from focuscrawl.orchestration.spark_task import SparkConnectJobOperator

cfg = settings()

DEFAULT_ARGS = {
    "owner": "focuscrawl",
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "execution_timeout": timedelta(hours=2),
    # First come, first served in the spark pool, by DAG run: Airflow's own weight rules each
    # starved one loop on two cores (focuscrawl.orchestration.airflow_priority says which and how long).
    "weight_rule": OLDEST_RUN_FIRST,
}


def schedule(dag_id: str, assets=None):
    """``dag_id``'s schedule: the project's time schedule, OR'd with ``assets`` (the DAG's Assets) when given."""
    when = dag_schedule(cfg, dag_id)
    if when == "assets":
        if assets is None:
            raise ValueError(f"schedule of {dag_id} is 'assets' but the DAG runs on no Asset; give it a time schedule")
        return assets
    if when is None or when in ("@once", "@continuous") or (assets is None and isinstance(when, timedelta)):
        return when
    # A cron line or preset runs once when first unpaused, as a duration does: else `up` leaves a
    # daily DAG without a run until midnight (make demo, 2026-12-01: delta_maintenance had none).
    timetable = (DeltaTriggerTimetable(when) if isinstance(when, timedelta)
                 else CronTriggerTimetable(when, timezone="UTC", run_immediately=True))
    return timetable if assets is None else AssetOrTimeSchedule(timetable=timetable, assets=assets)


def dag_params(params, names=None, bounds=None) -> dict[str, Param]:
    """Airflow Params of the knobs ``names`` (all when None) of a parameter object: its values are the
    defaults, each field's help the description and its bounds the schema (``focuscrawl.core.params.knob``),
    plus ``bounds`` ``{knob: {...}}`` from the caller."""
    return {name: Param(default, **schema) for name, (default, schema) in param_schemas(params, names, bounds).items()}


def spark_job(task_id: str, application: str, application_args: list[str] | None = None,
              **kwargs) -> SparkConnectJobOperator:
    """A task running ``spark_jobs/<application>`` on the warm Spark, in the ``spark`` pool
    (``focuscrawl.services.airflow.SPARK_POOL``: two jobs at a time on the embedded default)."""
    return spark_chain(task_id, [(application, application_args or [])], **kwargs)


def spark_chain(task_id: str, steps: list[tuple[str, list[str]]], pool: str = SPARK_POOL,
                **kwargs) -> SparkConnectJobOperator:
    """One task running several jobs one after another (``spark_jobs/chain.py``): ``[("a.py", args), ...]`` in order.
    ``pool``: the ``spark`` pool, unless no job of the task ever opens a Spark session."""
    args: list[str] = []
    for application, application_args in steps:
        args += [*(["--"] if args else []), application, *application_args]
    return SparkConnectJobOperator(task_id=task_id, jobs_dir=str(cfg.home / "spark_jobs"), steps=args,
                                   pool=pool, **kwargs)
