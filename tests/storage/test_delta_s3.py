"""Delta on object storage (issue 10, point 3): consumers write with delta-rs, Spark reads via s3a.

The unit tests pin the client settings; the integration tests run a local S3 server (moto), two
concurrent delta-rs writer processes, a commit race staged by hand, and a Spark read of the result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

from focuscrawl.config import settings
from focuscrawl.services.object_store import ObjectStore
from focuscrawl.lake.spark import session_conf
from focuscrawl.lake.storage import s3a_conf, storage_options
from helpers import free_port

BUCKET = "focuscrawl-test"
WRITERS, BATCHES, ROWS = 2, 5, 3


def _s3_cfg(cfg, endpoint="http://127.0.0.1:19000"):
    return dataclasses.replace(cfg, lake=f"s3://{BUCKET}/lake", s3_endpoint=endpoint)


# --- settings (fast) ---------------------------------------------------------------------------

def test_endpoint_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_S3_ENDPOINT", "http://127.0.0.1:19000")
    assert settings().s3_endpoint == "http://127.0.0.1:19000"
    monkeypatch.delenv("FOCUSCRAWL_S3_ENDPOINT")
    assert settings().s3_endpoint is None  # AWS S3 itself


def test_local_lake_needs_no_object_store_settings(cfg):
    local = dataclasses.replace(cfg, lake="/data/lake", s3_endpoint="http://127.0.0.1:19000")
    assert storage_options(local) == {}
    assert s3a_conf(local) == {}
    assert not any(k.startswith("spark.hadoop.fs.s3") for k in session_conf(local))


def test_deltalake_options_for_a_local_endpoint(cfg):
    assert storage_options(_s3_cfg(cfg)) == {
        "conditional_put": "etag", "endpoint_url": "http://127.0.0.1:19000", "allow_http": "true",
    }
    # AWS itself: only the safe-commit setting; endpoint, region and keys are the SDK's defaults.
    assert storage_options(dataclasses.replace(_s3_cfg(cfg), s3_endpoint=None)) == {"conditional_put": "etag"}


def test_spark_session_gets_s3a_settings_without_credentials(cfg, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-in-conf")
    conf = session_conf(_s3_cfg(cfg, "https://s3.example.test:9000"))
    assert {k: v for k, v in conf.items() if k.startswith("spark.hadoop.fs.s3")} == {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": "https://s3.example.test:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "true",
    }
    assert "never-in-conf" not in json.dumps(conf)
    assert any("hadoop-aws" in jar for jar in conf["spark.jars"].split(","))


@pytest.mark.parametrize("lake, endpoint", [
    ("s3://b/lake", None),  # AWS itself: nothing to run locally
    ("s3://b/lake", "http://s3.example.test:9000"),  # not this machine
    ("/tmp/lake", "http://127.0.0.1:19000"),  # not an object-store lake
])
def test_object_store_service_refuses_what_it_cannot_serve(cfg, lake, endpoint):
    with pytest.raises(ValueError):
        ObjectStore(dataclasses.replace(cfg, lake=lake, s3_endpoint=endpoint))


# --- real engines ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3(cfg):
    """A moto S3 server with the bucket, and the settings/credentials env pointing at it."""
    s3_cfg = _s3_cfg(cfg, f"http://{cfg.bind_host}:{free_port(cfg.bind_host)}")
    env = {
        "FOCUSCRAWL_LAKE": s3_cfg.lake, "FOCUSCRAWL_S3_ENDPOINT": s3_cfg.s3_endpoint,
        # moto takes any keys; the clients still sign, so they need some.
        "AWS_ACCESS_KEY_ID": "focuscrawl-test", "AWS_SECRET_ACCESS_KEY": "focuscrawl-test", "AWS_REGION": "us-east-1",
    }
    store = ObjectStore(s3_cfg)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        started = time.monotonic()
        store.start()
        print(f"object store up in {time.monotonic() - started:.1f}s")
        try:
            yield s3_cfg, store
        finally:
            store.stop()


WRITER = textwrap.dedent("""
    import pathlib, sys, time
    import pyarrow as pa
    from deltalake import write_deltalake
    from focuscrawl.config import settings
    from focuscrawl.lake.storage import storage_options

    writer, barrier, writers, batches, rows = int(sys.argv[1]), pathlib.Path(sys.argv[2]), *map(int, sys.argv[3:])
    cfg = settings()
    (barrier / f"ready-{writer}").touch()
    while len(list(barrier.glob("ready-*"))) < writers:  # start appending together
        time.sleep(0.01)
    for batch in range(batches):
        ids = [writer * 1000 + batch * 10 + i for i in range(rows)]
        data = pa.table({"id": pa.array(ids, pa.int64()), "writer": pa.array([writer] * rows, pa.int32())})
        write_deltalake(cfg.table_path("events"), data, mode="append", storage_options=storage_options(cfg))
""")


def _expected_ids(writers=WRITERS, batches=BATCHES, rows=ROWS):
    return sorted(w * 1000 + b * 10 + i for w in range(writers) for b in range(batches) for i in range(rows))


@pytest.fixture(scope="module")
def events(s3, tmp_path_factory):
    """The ``events`` table after two consumer processes appended to it at the same time."""
    from deltalake import DeltaTable, write_deltalake

    s3_cfg, _ = s3
    uri, options = s3_cfg.table_path("events"), storage_options(s3_cfg)
    schema = pa.schema([("id", pa.int64()), ("writer", pa.int32())])
    write_deltalake(uri, schema.empty_table(), mode="append", storage_options=options)  # version 0
    barrier = tmp_path_factory.mktemp("barrier")
    started = time.monotonic()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(w), str(barrier), str(WRITERS), str(BATCHES), str(ROWS)],
                         stderr=subprocess.PIPE, text=True)
        for w in range(WRITERS)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
    print(f"{WRITERS} writers x {BATCHES} appends in {time.monotonic() - started:.1f}s")
    return uri, DeltaTable(uri, storage_options=options)


@pytest.mark.integration
@pytest.mark.timeout(420)
def test_concurrent_consumers_both_land_every_commit(events):
    _, table = events
    assert table.version() == WRITERS * BATCHES  # one version per append, none overwritten
    assert sorted(table.to_pyarrow_table()["id"].to_pylist()) == _expected_ids()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_taken_commit_slot_is_never_overwritten(s3):
    """Stage the race by hand: another writer takes version v+1 while ours still reads version v."""
    import boto3
    from deltalake import CommitProperties, DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    s3_cfg, store = s3
    uri, options = s3_cfg.table_path("race"), storage_options(s3_cfg)
    write_deltalake(uri, pa.table({"id": pa.array([1], pa.int64())}), mode="append", storage_options=options)
    client = boto3.client("s3", endpoint_url=s3_cfg.s3_endpoint, region_name="us-east-1")
    other = json.dumps({"commitInfo": {"timestamp": 0, "operation": "WRITE", "isBlindAppend": True,
                                       "operationParameters": {"mode": "Append"}}}) + "\n"

    def take_next_slot(stale):
        key = f"lake/race/_delta_log/{stale.version() + 1:020d}.json"
        client.put_object(Bucket=store.bucket, Key=key, Body=other.encode())
        return key

    stale = DeltaTable(uri, storage_options=options)
    key = take_next_slot(stale)
    with pytest.raises(CommitFailedError):  # put-if-absent refused our commit at the taken version
        write_deltalake(stale, pa.table({"id": pa.array([2], pa.int64())}), mode="append",
                        commit_properties=CommitProperties(max_commit_retries=0))
    assert client.get_object(Bucket=store.bucket, Key=key)["Body"].read().decode() == other

    stale = DeltaTable(uri, storage_options=options)
    key = take_next_slot(stale)
    write_deltalake(stale, pa.table({"id": pa.array([3], pa.int64())}), mode="append")  # retries past it
    assert client.get_object(Bucket=store.bucket, Key=key)["Body"].read().decode() == other
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == 3  # 0 ours, 1 and 2 the other writer's, 3 ours after the retry
    assert sorted(table.to_pyarrow_table()["id"].to_pylist()) == [1, 3]


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_spark_reads_what_the_consumers_wrote_through_s3a(s3, events, spark):
    """The shared session was built for a local lake: give it the same s3a settings an s3:// lake's
    session starts with (session_conf), then read the table at the URI delta-rs wrote."""
    s3_cfg, _ = s3
    uri, table = events
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in s3a_conf(s3_cfg).items():
        hadoop.set(key.removeprefix("spark.hadoop."), value)
    # The shared JVM may predate the fixture's AWS_* environment, where a real session finds them;
    # hand it moto's throwaway keys directly.
    for key, env in (("fs.s3a.access.key", "AWS_ACCESS_KEY_ID"), ("fs.s3a.secret.key", "AWS_SECRET_ACCESS_KEY"),
                     ("fs.s3a.endpoint.region", "AWS_REGION")):
        hadoop.set(key, os.environ[env])
    started = time.monotonic()
    rows = spark.read.format("delta").load(uri).orderBy("id").collect()
    print(f"Spark read over s3a in {time.monotonic() - started:.1f}s")
    assert [r.id for r in rows] == _expected_ids()
    assert [r.writer for r in rows] == [i // 1000 for i in _expected_ids()]
    latest = spark.sql(f"DESCRIBE HISTORY delta.`{uri}` LIMIT 1").first()
    assert latest.version == table.version() == WRITERS * BATCHES
