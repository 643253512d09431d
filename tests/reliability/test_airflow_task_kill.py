"""Issue 8, point 4: exactly-once across the SIGKILL of an Airflow task process.

A real Airflow runs ``graph_estimation`` over a crawl with hand-worked estimates
(tests/graph/test_graph_estimation_hand.py); while its task runs the Spark job on the warm Spark, the
task process and everything it started get SIGKILL, as the OOM killer or a lost node would do (the
warm Spark itself stays up: the server ends the killed client's queries). Airflow's retry runs the task again, and at the end ``graph_estimates`` holds exactly one
row per (estimator, target, value) of that crawl with the hand-worked values: nothing lost, nothing
doubled. (It ran on ``thin_loop`` until that DAG folded into the FUE loop.)

Soak only (``make soak``): the Airflow start, two runs of the Spark job and the 30 s retry delay of
the shared retry policy take 4-8 minutes on a 2-core machine, above the short form's 2-minute budget.
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from pathlib import Path

import pytest

from harness import wait_for
from helpers import load_module

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

def hand_module():
    """The hand-worked crawl and its estimates (tests/graph/test_graph_estimation_hand.py)."""
    return load_module(Path(__file__).resolve().parents[1] / "graph" / "test_graph_estimation_hand.py")


def process_tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def task_instance(airflow, path: str) -> dict | None:
    """The task instance, or None while the API server (SQLite, a loaded machine) does not answer in time."""
    import requests

    from focuscrawl.services.airflow import AirflowError

    try:
        return airflow._call("GET", path).json()
    except (requests.RequestException, AirflowError):
        return None


def test_sigkill_of_a_running_airflow_task_neither_loses_nor_doubles(request, cfg, soak):
    if not soak:
        pytest.skip("soak only (make soak): an Airflow start, two Spark runs and a retry delay take minutes")
    from deltalake import DeltaTable

    from focuscrawl.graph.tables import GRAPH_ESTIMATES, GRAPH_SAMPLE, append_sample

    hand = hand_module()
    request.getfixturevalue("warm_spark")  # only now: a skipped run must not start the engines
    airflow = request.getfixturevalue("airflow")
    crawl = f"kill-{uuid.uuid4().hex[:6]}"
    append_sample(GRAPH_SAMPLE.path(cfg), hand._alternating_crawl(20), crawl, "RW")
    dag, task = "graph_estimation", "graph_estimation"
    airflow.wait_for_dag(dag)
    airflow.unpause(dag)
    run_id = airflow.trigger(dag, {"crawl_ids": crawl, "replicates": hand.REPLICATES, "block_length": 1})
    ti_path = f"/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances/{task}"
    # The first try's process is titled with its task-instance id (Airflow 3's task runner).
    runner_title = "airflow worker -- " + wait_for(lambda: (task_instance(airflow, ti_path) or {}).get("id"), 300,
                                                   "the run's graph_estimation task instance")

    asked = [time.monotonic()]

    def spark_job_running() -> list[int]:
        runners = [int(p.name) for p in Path("/proc").glob("[0-9]*") if cmdline(int(p.name)).startswith(runner_title)]
        tree = [pid for runner in runners for pid in process_tree(runner)]
        # The job runs in the task's own process, a client of the warm Spark: it has started once the
        # runner has a child (the task process it forks).
        if len(tree) > 1:
            return tree
        if time.monotonic() - asked[0] > 15:  # now and then (the API server is slow), fail fast on an ended run
            asked[0] = time.monotonic()
            ti = task_instance(airflow, ti_path) or {}
            assert ti.get("state") not in ("success", "failed", "upstream_failed"), f"no Spark job to kill: {ti}"
        return []

    wait_for(spark_job_running, 900, "the graph_estimation task to start its Spark job")
    time.sleep(random.Random(8).uniform(1.0, 6.0))  # a random point of the job
    victims = spark_job_running()
    assert victims, "the Spark job ended before the kill: nothing was tested"
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    state = airflow.wait(dag, run_id, timeout=900)
    ti = wait_for(lambda: task_instance(airflow, ti_path), 300, "the task instance after the run")
    assert state == "success", airflow.task_log(dag, run_id, task, ti["try_number"])[-3000:]
    assert ti["try_number"] >= 2  # the killed try failed and the retry finished the work

    rows = DeltaTable(GRAPH_ESTIMATES.path(cfg)).to_pandas()
    rows = rows[rows.crawl_id == crawl]
    keys = list(zip(rows.estimator, rows.target, rows.value))
    assert len(keys) == len(set(keys)) == 12  # one row per estimate: none lost or doubled (MLE skipped on a walk)
    assert rows.set_index(["estimator", "target", "value"]).estimate.to_dict() == pytest.approx(hand.HAND_WORKED)
