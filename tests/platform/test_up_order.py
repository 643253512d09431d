"""``Platform.start`` starts the processes once Kafka and the world answer, while Airflow, the warm Spark and MLflow
still start (their start and the DAG processor's parse took most of the minute before the processes at a680215),
and unpauses the DAGs once every service is up; the FUE classifiers are trained while the services start. Over
fakes of the services and the supervisor."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from focuscrawl.config import settings
from focuscrawl.platform.up import Platform

SERVICES = ["kafka", "spark-connect", "mlflow", "airflow", "world"]


class Record:
    def __init__(self, slow: str = "airflow", fail: str | None = None):
        self.events, self.slow, self.fail = [], slow, fail
        self.processes_started = threading.Event()
        self.lock = threading.Lock()

    def note(self, what: str) -> None:
        with self.lock:
            self.events.append(what)


@pytest.fixture
def record(monkeypatch):
    record = Record()

    class Manager:
        def __init__(self, cfg, **_):
            self.services = {name: SimpleNamespace(name=name) for name in SERVICES}

        def up(self, names, log=print):
            for name in names:
                if name == record.fail:
                    record.note(f"{name} failed")
                    raise RuntimeError(f"{name} did not start")
                if name == record.slow:  # Airflow: up only after the processes started (10 s at most)
                    record.note(f"{name} waits: processes started {record.processes_started.wait(10)}")
                record.note(f"{name} up")
            return {name: 0.0 for name in names}

    class Supervisor:
        def __init__(self, specs, var_dir, **_):
            pass

        def start(self, held=frozenset()):
            record.held = held
            record.note("processes started")
            record.processes_started.set()

        def release(self, loop):
            record.note(f"{loop} released")
            return []

        def run(self):
            pass

    class Watch:
        def __init__(self, services, var_dir):
            record.note(f"watch {sorted(services)}")

        def start(self):
            pass

    monkeypatch.setattr("focuscrawl.services.manager.ServiceManager", Manager)
    monkeypatch.setattr("focuscrawl.platform.up.Supervisor", Supervisor)
    monkeypatch.setattr("focuscrawl.platform.service_watch.ServiceWatch", Watch)
    return record


def platform(tmp_path, monkeypatch, record) -> Platform:
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    project = SimpleNamespace(name="t", world=SimpleNamespace(serve_args=lambda: []), profile=SimpleNamespace(pages=None))
    p = Platform(project, settings(), services=SERVICES, log=lambda _: None)
    p.specs = []
    monkeypatch.setattr(p, "write_active_project", lambda: None)
    monkeypatch.setattr(p, "unpause_dags", lambda: record.note("DAGs unpaused"))
    return p


def test_the_processes_start_while_the_dags_services_still_start(tmp_path, monkeypatch, record):
    platform(tmp_path, monkeypatch, record).start()
    events = record.events
    assert "airflow waits: processes started True" in events
    assert events.index("kafka up") < events.index("processes started") < events.index("airflow up")
    assert events.index("world up") < events.index("processes started")
    assert events[-2:] == [f"watch {sorted(SERVICES)}", "DAGs unpaused"]


def test_a_service_that_fails_starts_no_process_and_is_raised_once_the_others_have_started(tmp_path, monkeypatch,
                                                                                             record):
    record.fail, record.slow = "kafka", None
    with pytest.raises(RuntimeError, match="kafka did not start"):
        platform(tmp_path, monkeypatch, record).start()
    assert "processes started" not in record.events and "airflow up" in record.events


def _training(record, fail: bool = False):
    """A stand-in for the classifiers' training that notes whether Kafka came up while it ran (10 s at most):
    trained before the services start, as `up` once did, it would wait in vain."""
    def train():
        deadline = time.monotonic() + 10
        while "kafka up" not in record.events and time.monotonic() < deadline:
            time.sleep(0.01)
        record.note(f"trained, kafka up meanwhile: {'kafka up' in record.events}")
        if fail:
            raise ValueError("profile: the examples hold one class only")
    return train


def test_the_classifiers_are_trained_while_the_services_start_and_only_the_fue_processes_wait_for_them(
        tmp_path, monkeypatch, record):
    p = platform(tmp_path, monkeypatch, record)
    p.models = SimpleNamespace()  # the FUE loop is on: its classifiers are planned
    monkeypatch.setattr(p, "train_classifiers", _training(record))
    p.start()
    events = record.events
    assert record.held == {"fue"}  # the other loops' processes start once Kafka and the world answer
    assert events.index("processes started") < events.index("fue released")
    assert events.index("trained, kafka up meanwhile: True") < events.index("fue released")


def test_a_training_that_fails_starts_no_fue_process_and_is_raised_once_the_services_have_started(
        tmp_path, monkeypatch, record):
    p = platform(tmp_path, monkeypatch, record)
    p.models = SimpleNamespace()
    monkeypatch.setattr(p, "train_classifiers", _training(record, fail=True))
    with pytest.raises(ValueError, match="one class only"):
        p.start()
    assert "fue released" not in record.events and "airflow up" in record.events
