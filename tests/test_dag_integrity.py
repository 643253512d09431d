"""Every DAG file in dags/ parses cleanly and follows the house policy (STYLE.md, Airflow section).

Parsed offline with BundleDagBag, like the DAG processor: no running Airflow, no secrets.
Helper modules (assets.py, common.py) define no DAG and are skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPER_MODULES = {"assets.py", "common.py"}
HOUSE_OWNER = "focuscrawl"
# Data-quality gates (focuscrawl.lake.quality.gx_gate's quality_<table>) may skip retries.
DATA_QUALITY_GATE = "quality_"
DAG_FILES = sorted(p for p in (ROOT / "dags").glob("*.py") if p.name not in HELPER_MODULES)


@pytest.fixture(scope="module", params=DAG_FILES, ids=lambda p: p.name)
def dags(request, dag_bag):
    found = dag_bag(request.param.name)  # fails naming the file on an import error
    assert found, f"{request.param.name} defines no DAG (a helper module belongs in HELPER_MODULES)"
    return list(found.values())


def test_no_cycles(dags):
    for dag in dags:
        dag.check_cycle()  # raises AirflowDagCycleException naming the cycle


def test_documented_and_tagged(dags):
    for dag in dags:
        title = f"# {Path(dag.fileloc).stem}"
        assert dag.doc_md and dag.doc_md.startswith(title), f"{dag.dag_id}: doc_md must open with {title!r}, its file's name"
        assert "focuscrawl" in dag.tags, f"{dag.dag_id}: tags {sorted(dag.tags)} lack 'focuscrawl'"


def test_owner_and_retries_with_exponential_back_off(dags):
    for dag in dags:
        for t in dag.tasks:
            where = f"{dag.dag_id}.{t.task_id}"
            assert t.owner == HOUSE_OWNER, f"{where}: owner {t.owner!r}, not {HOUSE_OWNER!r} (dags/common.py's default_args)"
            if t.task_id.startswith(DATA_QUALITY_GATE):
                continue  # a data-quality gate fails for good: a retry cannot repair the data
            assert t.retries >= 1, f"{where}: retries={t.retries}"
            assert t.retry_exponential_backoff, f"{where}: retries without exponential back-off"


def test_runs_are_bounded_in_time(dags):
    for dag in dags:
        untimed = [t.task_id for t in dag.tasks if t.execution_timeout is None]
        assert dag.dagrun_timeout is not None or not untimed, f"{dag.dag_id}: no dagrun_timeout and {untimed} have no execution_timeout"


def test_params_are_documented(dags):
    for dag in dags:
        for name, param in dag.params.items():
            param = dag.params.get_param(name)
            assert param.description or param.schema.get("description"), f"{dag.dag_id}: param {name!r} has no description"


def test_every_task_serializes_with_the_oldest_run_first_rule(dags):
    """The DAG processor stores each DAG serialized: the custom weight rule must survive it
    (it does only with plugins/ loaded; without, serialization fails naming the rule)."""
    from airflow.serialization.serialized_objects import DagSerialization

    from focuscrawl.orchestration.airflow_priority import OldestRunFirst

    for dag in dags:
        back = DagSerialization.from_dict(DagSerialization.to_dict(dag))
        rules = {t.task_id: type(t.weight_rule) for t in back.tasks}
        assert set(rules.values()) == {OldestRunFirst}, f"{dag.dag_id}: {rules}"
