"""The fue_pseudo_training DAG parses, documents itself, runs every 5 minutes: one task refreshes and publishes."""

from __future__ import annotations

from datetime import timedelta

import pytest


@pytest.fixture(scope="module")
def dag(dag_bag):
    return dag_bag("fue_pseudo_training.py")["fue_pseudo_training"]


def test_dag_runs_every_five_minutes(dag):
    # Its doc title, owner, retries and back-off: tests/test_dag_integrity.py, for every DAG.
    assert set(dag.tags) == {"focuscrawl", "fue", "pseudo-training", "priorities"}
    assert dag.schedule == timedelta(minutes=5)
    assert dag.params["methods"] == ["HCP-0.9-0.1", "HCP-0.5-0.5", "HCP-POS"] and dag.params["top_n"] == 50_000


def test_one_task_refreshes_and_publishes_and_declares_its_assets(dag):
    assert set(dag.task_dict) == {"refresh"}  # a task process per step costs a start, a parse and the imports
    refresh = dag.get_task("refresh")
    assert {a.name for a in refresh.inlets} == {"delta.fue_extractions", "delta.reddit_posts"}
    assert {a.name for a in refresh.outlets} == {"delta.fue_candidate_scores"} | {
        f"kafka.focuscrawl.fue.scores.{m}" for m in ("HCP-0.9-0.1", "HCP-0.5-0.5", "HCP-POS")}
