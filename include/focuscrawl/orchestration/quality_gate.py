"""The data-quality gate as an Airflow task: :func:`focuscrawl.lake.quality.gate` before a job reads a table."""

from __future__ import annotations

from typing import Sequence

from focuscrawl.lake.quality import gate
from focuscrawl.lake.tables import TableSpec


def gx_gate(spec: TableSpec, keys: Sequence[str] = ()):
    """An Airflow task ``quality_<table>`` that gates downstream tasks on ``spec``'s suite.

    Use as ``gx_gate(POSTS_TABLE)() >> spark_task``. The summary goes to the task log, the result
    to ``quality_results`` and the task's XCom; a failing table fails the task with the list of
    failed expectations (no retry can fix the data, so it does not retry).
    """
    from airflow.sdk import task

    @task(task_id=f"quality_{spec.name}", retries=0)
    def quality() -> dict:
        return gate(spec, keys).to_dict()

    return quality


__all__ = ["gx_gate"]
