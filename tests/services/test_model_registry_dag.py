"""The ``model_registry`` DAG: one task recording every model family, started by the loops' pushes and model stores,
never a task of a loop's run; a registry that is down costs the record (a warning with the fix), not the task."""

from __future__ import annotations

from focuscrawl.config import settings
from focuscrawl.orchestration.model_families import FAMILIES
import pytest

from focuscrawl.orchestration.registry_task import NICENESS, record_families, record_family


def test_one_task_records_every_family_on_the_loops_pushes(dag_bag):
    dags = dag_bag("model_registry.py")
    dag = dags["model_registry"]
    assert {t.task_id for t in dag.tasks} == {"record"}  # a process per family paid a start, a parse, the imports
    from focuscrawl.services.airflow import REGISTRY_POOL, POOLS

    # one at a time, so the loops' tasks keep the executor's other slots
    assert {t.pool for t in dag.tasks} == {REGISTRY_POOL} and POOLS[REGISTRY_POOL][0] == 1
    started_by = {a.name for a in dag.timetable.asset_condition.objects}  # any of them (AssetAny)
    assert {"kafka.focuscrawl.page_priorities", "kafka.focuscrawl.source_schedule", "models.pages"} <= started_by
    assert any(name.startswith("kafka.focuscrawl.fue.scores.") for name in started_by)


def test_no_loop_dag_records_in_the_registry(dag_bag):
    for dag_id, dag in dag_bag().items():
        if dag_id != "model_registry":
            assert not [t.task_id for t in dag.tasks if t.task_id.startswith("record") or t.task_id == "register"], dag_id


def test_a_registry_that_is_down_costs_the_record_not_the_task(monkeypatch, tmp_path):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    said: list[str] = []
    assert record_family(settings(), "sources", said.append) == []  # nothing listens on the MLflow port here
    assert len(said) == 1 and said[0].startswith("WARNING: the model registry (MLflow at ")
    assert "`focuscrawl services up --only mlflow` starts it" in said[0]


def test_a_record_task_yields_the_cpu_to_the_loops(dag_bag, monkeypatch):
    """Each record task runs at NICENESS at least in its own process (run here in a forked child, as Airflow runs a
    task); a process already nicer (make test's unit phase runs at 19) stays so."""
    import multiprocessing
    import os

    from focuscrawl.orchestration import registry_task

    before = os.nice(0)
    monkeypatch.setattr(registry_task, "record_family", lambda cfg, name, log: [f"{name} at {os.nice(0)}"])
    record = dag_bag("model_registry.py")["model_registry"].get_task("record").python_callable
    fork = multiprocessing.get_context("fork")
    said = fork.SimpleQueue()
    child = fork.Process(target=lambda: said.put(record()))
    child.start()
    child.join(60)
    assert said.get() == {name: [f"{name} at {max(NICENESS, before)}"] for name in FAMILIES}
    assert os.nice(0) == before  # this process is not the task's


def test_a_family_that_fails_spares_the_others_and_the_task_fails_naming_it(monkeypatch):
    from focuscrawl.orchestration import registry_task

    def record(cfg, name, log):
        if name == "pages":
            raise KeyError("meta.json")
        return [f"{name}: v1 logged"]

    monkeypatch.setattr(registry_task, "record_family", record)
    said: list[str] = []
    with pytest.raises(RuntimeError, match=r"1 of 4 families failed to record \(pages: KeyError: 'meta.json'\); "
                                           r"the others were recorded"):
        record_families(None, FAMILIES, said.append)
    assert said == ["ERROR: record_pages: KeyError: 'meta.json'"]
    monkeypatch.setattr(registry_task, "record_family", lambda cfg, name, log: [name])
    assert record_families(None, ["fue", "sources"]) == {"fue": ["fue"], "sources": ["sources"]}
