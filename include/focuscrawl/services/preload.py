"""The libraries Airflow's DAG files and tasks import, imported once in its long-lived processes.

Airflow runs every task in a process forked from a LocalExecutor worker, itself forked from the scheduler
(``airflow.sdk.execution_time.supervisor``: ``os.fork`` on Linux), and parses each DAG file in a process
forked from the DAG processor. A fork inherits every module its parent imported; whatever the parent did not
import, each task imports again: pandas, pyarrow and SciPy for the DAG files (``dags/assets.py`` names tables
whose modules need them), Spark Connect's client for every Spark task, scikit-learn and NGBoost for the
outlink models, Great Expectations for each quality gate, MLflow for the model registry's tasks. Measured here with 13 processes runnable on the 2
cores (2026-12-05): those imports took 30.5 s of wall time in one process (Great Expectations alone 25 s
wall, 4.6 s of CPU), and the DAG processor re-parsed the 8 DAG files 94 times in 5 minutes of the live
platform (51 s of CPU). In a fork of a process that imported them, parsing the six loop DAG files took
0.94 s of CPU against 3.8-4.0 s, and the tasks' imports 0.01 s against 4.0 s
(``tests/services/test_preload.py`` checks the inheritance). :func:`preload` imports them in the scheduler and the DAG processor
(``focuscrawl.services.airflow`` sets :data:`ENV` for those two only), before they fork.

Airflow imports ``airflow_local_settings`` (``include/airflow_local_settings.py``) in each of its processes
as it starts, before the scheduler's executor forks its workers; that module calls :func:`preload` when
:data:`ENV` is set. Importing these libraries starts no Python thread and opens no connection, so the forks
stay safe; the native thread pool OpenBLAS starts as numpy loads is shut down and re-formed around each fork
by OpenBLAS's own fork handler, as for any ``multiprocessing`` fork of a process that imported numpy.
"""

from __future__ import annotations

import importlib
import logging
import time

log = logging.getLogger(__name__)

ENV = "FOCUSCRAWL_AIRFLOW_PRELOAD"

# What the DAG files and the tasks import that costs seconds: pandas, pyarrow, SciPy and delta-rs for the
# DAG files and every job; the Spark Connect client for every Spark task; scikit-learn and NGBoost for the
# outlink and relevance models; Great Expectations for the quality gates; MLflow's client for the model
# registry's four tasks, which run after every push (2 s of CPU each to import).
MODULES = (
    "pandas",
    "pyarrow",
    "scipy.stats",
    "deltalake",
    "pyspark.sql.connect.session",
    "sklearn.ensemble",
    "ngboost",
    "great_expectations",
    "mlflow",
)


# What a DAG file's parse loads beyond its imports, called once here so that the forks find it cached: the active
# project's validation checks its languages against the language identifier's model (focuscrawl.parse.text,
# 0.5 s of CPU to load), in every parse of dags/outlinks.py (active_relevance_args) and so in every one of its
# tasks. That made its parse 0.9 s of CPU against 0.2 s for the other DAG files, and 14 s p50 of wall time in
# its tasks against 3.4 s for source_schedule's in the loaded freshness run at 6afc487.
WARM = (("focuscrawl.parse.text", "known_languages"),)


def preload(modules: tuple[str, ...] = MODULES, warm: tuple[tuple[str, str], ...] = WARM) -> dict[str, float]:
    """Imports ``modules``, then calls each ``(module, function)`` of ``warm``; returns the seconds each took. One
    that fails is logged and skipped: its tasks do it themselves (and fail with its own error), the Airflow process
    starts regardless."""
    took: dict[str, float] = {}
    # Great Expectations logs a line per public function it cannot document as it is imported: ~700 lines at
    # INFO under Airflow's logging, in the scheduler's log.
    logging.getLogger("great_expectations._docs_decorators").setLevel(logging.WARNING)
    steps = [(name, lambda name=name: importlib.import_module(name)) for name in modules]
    steps += [(f"{module}.{function}", lambda module=module, function=function:
               getattr(importlib.import_module(module), function)()) for module, function in warm]
    for name, step in steps:
        began = time.monotonic()
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - a preload never stops Airflow from starting
            log.warning("preload: %s not done (%s: %s); its tasks do it themselves", name, type(exc).__name__, exc)
            continue
        took[name] = round(time.monotonic() - began, 2)
    return took


__all__ = ["ENV", "MODULES", "WARM", "preload"]
