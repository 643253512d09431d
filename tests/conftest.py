"""Shared fixtures: one Kafka broker and one Spark session per test run (they take seconds to start).

Tests run on their own ports and state folder so they never touch services a developer has up:
FOCUSCRAWL_PORT_OFFSET defaults to 1000 here and FOCUSCRAWL_VAR to var/test.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("FOCUSCRAWL_PORT_OFFSET", "1000")
# pytest-xdist's workers (make test runs the unit tests on two) inherit the controller's offset and
# folder, and the controller holds their lock: each worker takes ports and a state folder of its own.
if _worker := os.environ.get("PYTEST_XDIST_WORKER"):
    _offset = int(os.environ["FOCUSCRAWL_PORT_OFFSET"]) + 500 * (int(_worker.removeprefix("gw")) + 1)
    os.environ["FOCUSCRAWL_PORT_OFFSET"] = str(_offset)
    os.environ.pop("FOCUSCRAWL_VAR", None)
# Every JVM a test starts (Spark drivers, spark-submit, the Spark Connect server, Kafka brokers) lives for seconds
# to minutes on small data: C2's compiles never pay back there. With the client compiler only, one run of
# tests/outlinks/test_frame_transforms.py took 80 CPU-s instead of 121, the knn spark-submit smoke 50 instead of
# 72 (2026-12-07, idle). The `java` launcher reads this variable (and says so on stderr); the JIT changes no result.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")
# Airflow parsed in-process (DAG integrity) loads focuscrawl's plugins as the services do.
os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER", str(ROOT / "plugins"))
# One run per port offset at a time: a second run on the same ports would empty the first one's state
# folder and stop its engines under it (seen 2026-12-01: a `pytest --collect-only` wiped a live
# platform test's broker). The lock sits beside the folder, so emptying the folder keeps it.
(ROOT / "var").mkdir(exist_ok=True)
_offset_lock = open(ROOT / "var" / f".test-{os.environ['FOCUSCRAWL_PORT_OFFSET']}.lock", "a")
try:
    fcntl.flock(_offset_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    raise SystemExit(f"another test run uses FOCUSCRAWL_PORT_OFFSET={os.environ['FOCUSCRAWL_PORT_OFFSET']}: "
                     "give this one its own, e.g. FOCUSCRAWL_PORT_OFFSET=5000 FOCUSCRAWL_VAR=var/test-5000") from None
if "FOCUSCRAWL_VAR" not in os.environ:
    # The default test state folder starts empty each run: no topics, tables or Airflow runs
    # left from an earlier run can make a count come out right by accident.
    _test_var = ROOT / "var" / f"test-{os.environ['FOCUSCRAWL_PORT_OFFSET']}"
    shutil.rmtree(_test_var, ignore_errors=True)
    os.environ["FOCUSCRAWL_VAR"] = str(_test_var)

from focuscrawl.config import settings  # noqa: E402


@pytest.fixture(scope="session")
def cfg():
    return settings()


@pytest.fixture(scope="session")
def dag_bag():
    """DAG files parsed offline once per run (``helpers.parse_dags``): ``dag_bag("outlinks.py")`` is
    ``{dag_id: DAG}`` of that file, ``dag_bag()`` of every file in dags/. A test that changes what the
    DAG files read (the active project) parses with ``parse_dags`` itself."""
    from helpers import parse_dags

    parsed: dict = {}

    def bag(dag_file: str | None = None) -> dict:
        if dag_file not in parsed:
            parsed[dag_file] = parse_dags(dag_file)
        return parsed[dag_file]

    return bag


@pytest.fixture(scope="session")
def shared_data(cfg):
    """The real data folder (../shared/data); tests that need it skip with the reason when absent."""
    if cfg.data_dir is None:
        pytest.skip("real data folder ../shared/data not found (set FOCUSCRAWL_DATA)")
    return cfg.data_dir


def _running(service, **start):
    """A service's fixture body: started (``start`` passed on), handed to the tests, stopped after them."""
    service.start(**start)
    yield service
    service.stop()


@pytest.fixture(scope="session")
def kafka_broker(cfg):
    from focuscrawl.services.kafka import KafkaBroker

    yield from _running(KafkaBroker(cfg), timeout=180)  # a loaded 2-core machine can take minutes


@pytest.fixture
def own_kafka_broker(cfg, tmp_path_factory):
    """A broker of the test's own, for a test that stops or kills it (issue 19): the session's broker
    holds every other test's topics and groups, and a restart inside one test must not disturb them.
    Its ports are the session broker's + 100 (within this run's offset), its data a fresh folder;
    the test's processes reach it through ``broker.url`` (``--bootstrap``)."""
    from focuscrawl.services.kafka import KafkaBroker

    port = cfg.kafka_port + 100
    own = dataclasses.replace(cfg, var_dir=tmp_path_factory.mktemp("own-broker"), kafka_port=port,
                              kafka_controller_port=cfg.kafka_controller_port + 100,
                              kafka_bootstrap=f"{cfg.bind_host}:{port}")
    yield from _running(KafkaBroker(own), timeout=180)


@pytest.fixture
def topic():
    """A fresh topic name per test (auto-created by the broker on first use)."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def spark(cfg):
    from focuscrawl.lake.spark import get_session

    session = get_session("focuscrawl-tests", master="local[2]", cfg=cfg)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def world_service(cfg):
    """The world as its own process on the configured ports (what `services up` runs). Module-scoped:
    the tests after the live platform's module start worlds of their own on the same ports (in the
    session scope they found the port taken: 5 failed in CI, 2026-12-01)."""
    from focuscrawl.services.manager import WorldService

    yield from _running(WorldService(cfg))


@pytest.fixture(scope="session")
def warm_spark(cfg):
    """The warm Spark (a Spark Connect server) the DAGs' Spark tasks run on, for tests that run one."""
    from focuscrawl.services.spark_connect import SparkConnect

    yield from _running(SparkConnect(cfg))


@pytest.fixture(scope="session")
def mlflow_server(cfg):
    """The model registry's server (MLflow) the live platform's DAGs record the models in."""
    from focuscrawl.services.mlflow import MlflowServer

    yield from _running(MlflowServer(cfg))


@pytest.fixture(scope="session")
def postgres_cluster(cfg):
    """A throw-away PostgreSQL (tests/postgres.py) for the tests of Airflow's and MLflow's metadata on it."""
    from postgres import running_cluster

    yield from running_cluster(cfg)


# A shared engine's stop, called once the last of its files' tests has run (pytest_runtest_teardown)
_STOP_AFTER_GROUP: dict = {}


@pytest.fixture(scope="session")
def airflow_service(cfg):
    """The session's Airflow service (stopped at the session's end if it still runs); tests ask for ``airflow``."""
    from focuscrawl.services.airflow import AirflowService

    service = AirflowService(cfg)
    yield service
    service.stop()


@pytest.fixture(scope="module")
def airflow(airflow_service):
    """One real Airflow (API server, scheduler, DAG processor, triggerer) over the repo's dags/, for
    every test that runs a DAG; yields a logged-in REST client. Stopped when the last of the files that use it
    (their group in tests/scheduling.py, which runs as one unit) is done, not at the session's end: idle, it took
    ~0.08 of a core for the ~770 s left of the integration phase in the clean-clone run of 8c8534b. Each module
    that asks starts it (nothing to do while it runs), so a module run after the group's end (the group split
    by hand) finds it up, not a client of a stopped one."""
    airflow_service.start()
    _STOP_AFTER_GROUP["airflow"] = airflow_service.stop
    yield airflow_service.client()


@pytest.hookimpl(trylast=True)  # after the test's own fixtures are torn down (the runner's teardown)
def pytest_runtest_teardown(item, nextitem):
    from scheduling import group_ends

    if (engine := group_ends(item, nextitem)) and (stop := _STOP_AFTER_GROUP.pop(engine, None)):
        stop()


def pytest_xdist_make_scheduler(config, log):
    from scheduling import scheduler

    return scheduler(config, log)


@pytest.hookimpl(trylast=True)  # after `-m` has deselected: only the tests that run count
def pytest_collection_modifyitems(config, items):
    """Longest files first, by their seconds in the last `make test` (tests/scheduling.py says why): make test's
    xdist workers take a whole file at a time, and the last ones each takes decide when the phase ends."""
    from scheduling import check_shared_engines, longest_files_first

    if hasattr(config, "workerinput"):  # an xdist worker: make test's phases but the e2e's, which runs alone
        check_shared_engines(items)
    longest_files_first(items)
