"""When each focuscrawl DAG runs: the active project's ``schedules``, else the defaults below.

``focuscrawl up`` writes the active project to ``$FOCUSCRAWL_VAR/run/project.json``; every DAG file
asks :func:`dag_schedule` for its time schedule, so editing the project's ``[schedules]`` and
running ``up`` again changes when the DAGs run (the DAG processor re-parses within 30 s). No
project file (a bare ``services up``, the unit tests) means the defaults.

A schedule is one string in the project file's grammar (``focuscrawl.project.values.check_schedule``,
which validates ``[schedules]``; :func:`focuscrawl.project.values.airflow_schedule` turns it into what
Airflow takes): a duration (``"5m"``), a cron line (``"*/10 * * * *"``), a preset (``"@hourly"``),
``"assets"`` (a data-aware DAG runs on its Assets only) or ``"none"`` (only when triggered).
For the data-aware DAGs (``outlinks_*``, ``source_schedule``, ``graph_estimation``) a time schedule
is OR'd with their Assets (``dags/common.schedule``): they run when new rows land *and* when the
period passes. What else the DAGs take from the active project is read here too: its pseudo-trained
variants, its loops' settings and its example set (:func:`active_example_set`).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from focuscrawl.config import Settings
from focuscrawl.fue.params import DEFAULT as FUE

if TYPE_CHECKING:
    from focuscrawl.fue.examples import ExampleSet
    from focuscrawl.project.model import Project

ACTIVE_PROJECT = Path("run") / "project.json"  # under $FOCUSCRAWL_VAR, written by `focuscrawl up`

DEFAULT_SCHEDULES: dict[str, str] = {
    "fue_pseudo_training": FUE.pseudo_every,
    # the data-aware DAGs run on their Assets; source_schedule also re-plans as estimates age
    "outlinks_features": "assets",
    "outlinks_train": "assets",
    "source_schedule": "@hourly",
    "graph_estimation": "assets",
    "delta_maintenance": "@daily",
    # the example pages are refetched and the page relevance model refitted (focuscrawl.relevance.train)
    "page_relevance": "@daily",
    # records every loop's new model versions in MLflow when a loop pushed or stored one (off the loops' runs)
    "model_registry": "assets",
}

# Airflow's airflow.utils.dates.cron_presets: a cron timetable's summary shows a preset as its line.
# Copied, not imported: importing airflow in `up` costs 3 s and sets up Airflow's config in the CLI
# process. tests/platform/test_dag_schedules.py checks the copy against Airflow's.
CRON_PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *",
                "@quarterly": "0 0 1 */3 *", "@yearly": "0 0 1 1 *"}


def active_project(cfg: Settings) -> dict:
    """The project ``focuscrawl up`` last wrote (``Project.to_json()``), or ``{}`` when none is active."""
    from focuscrawl.core.status_file import read_status

    return read_status(Path(cfg.var_dir) / ACTIVE_PROJECT)


def running_project(cfg: Settings) -> "Project | None":
    """The project ``focuscrawl up`` runs, as it resolved it then (run/project.json through
    :func:`focuscrawl.project.loading.load_active`), not as its file reads now: the file may have been edited since, or,
    as in the live platform test, overridden when it was brought up (another name, so other model stores). None when
    no project is active. Every task and command that acts on the running project reads it here."""
    from focuscrawl.project.loading import load_active

    active = active_project(cfg)
    return load_active(active) if active.get("project_file") else None


def active_example_set(cfg: Settings) -> "ExampleSet":
    """The example set (:func:`focuscrawl.fue.examples.example_set`) of the project ``focuscrawl up`` made active:
    the original training set its pseudo-trained refreshes start from. Without an active project there is no focus
    to learn, so it says how to get one rather than train on anything else."""
    from focuscrawl.fue.examples import example_set

    project = running_project(cfg)
    if project is None:
        raise LookupError(f"no project is active in {cfg.var_dir} ({ACTIVE_PROJECT} names no project file), so there "
                          "are no example users to pseudo-train on: start the platform with `focuscrawl up PROJECT` "
                          "(its [profile] positives and negatives are the example users)")
    return example_set(project, cfg)


def dag_schedules(cfg: Settings) -> dict[str, str]:
    """Every DAG's schedule string: the active project's ``schedules`` over the defaults."""
    chosen = active_project(cfg).get("schedules") or {}
    return {**DEFAULT_SCHEDULES, **{k: str(v) for k, v in chosen.items() if v is not None}}


def dag_schedule(cfg: Settings, dag_id: str) -> timedelta | str | None:
    """``dag_id``'s schedule as Airflow takes it: a timedelta, a cron line or preset, ``"assets"`` or ``None``."""
    from focuscrawl.project.values import airflow_schedule, check_schedule

    schedules = dag_schedules(cfg)
    if dag_id not in schedules:
        raise KeyError(f"no schedule known for DAG {dag_id!r}; add it to DEFAULT_SCHEDULES")
    return airflow_schedule(check_schedule(schedules[dag_id]))


def pseudo_methods(cfg: Settings) -> list[str]:
    """The pseudo-trained HCP variants ``fue_pseudo_training`` refreshes: those the active project resolved
    (:attr:`focuscrawl.project.model.FueLoop.pseudo_methods`, written by ``focuscrawl up``), every variant
    (:class:`focuscrawl.fue.params.FueParams` ``pseudo_methods``) when no project is active.

    A project whose FUE loop runs another method (HAS, HCP without pseudo-training, ...) gets
    an empty list: the DAG then has nothing to retrain and succeeds at once.
    """
    project = active_project(cfg)
    return list(project.get("pseudo_methods", ())) if project else list(FUE.pseudo_methods)


def loop_setting(cfg: Settings, loop: str, key: str, default):
    """A DAG param's default from the active project's ``[loops.<loop>] <key>`` (``default`` without one),
    so the batch side plans with the budgets and names the running processes were given."""
    value = ((active_project(cfg).get("loops") or {}).get(loop) or {}).get(key)
    return default if value is None else value


def timetable_matches(cfg: Settings, dag_id: str, summary: str | None) -> bool:
    """Whether Airflow's ``timetable_summary`` of ``dag_id`` (REST ``/api/v2/dags``) is the active
    project's schedule, i.e. the DAG processor parsed the DAG file after ``up`` wrote the project.

    The summary is Airflow's ``Timetable.summary`` of what ``dags/common.schedule`` built: a cron line
    as given, a preset as its cron line, ``str(timedelta)`` for a duration, ``Asset`` for ``"assets"``,
    ``Asset or <time>`` for a data-aware DAG with a time schedule; the REST API shows no schedule as null.
    """
    when = dag_schedule(cfg, dag_id)
    wanted = "Asset" if when == "assets" else None if when is None else CRON_PRESETS.get(str(when), str(when))
    return (summary.removeprefix("Asset or ") if summary else None) == wanted
