"""WARC archives of the live processes, every engine real (issue 20, point 1): the FUE explorer (posts
through Kafka and ``consumer.py --sink fue_posts`` into ``reddit_posts``) and the revisitor (straight into
``page_snapshots``) fetch the world over HTTP with ``--warc``; the revisitor is SIGKILLed at the end.

Asserted: every file warcio's checker validates, one set of files per process (pid in the name); for a
sample of the Delta rows the record at the stored offset, read back with ``ArchiveIterator``, is the
response of the row's URL whose body gives the row's content digest (snapshots) or holds the row's post
(posts); robots.txt fetches are archived too. The README's Spark SQL join is tests/fetch/test_warc_spark.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from focuscrawl.services.process import wait_until
from helpers import fetch_spec

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
SAMPLE = 10


def _spawn(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=env)


def _rows(table: Path) -> list[dict]:
    from deltalake import DeltaTable

    try:
        return DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    except Exception:  # noqa: BLE001 - not created yet
        return []


def _record_at(folder: Path, row: dict):
    """What a user does with a row: open its file, seek to its offset, read one record."""
    with open(folder / row["warc_file"], "rb") as f:
        f.seek(row["warc_offset"])
        record = next(iter(ArchiveIterator(f)))
        return record.rec_headers, record.http_headers, record.content_stream().read()


def test_live_fetches_are_archived_and_rows_lead_to_their_records(cfg, kafka_broker, tmp_path):
    from focuscrawl.outlinks.revisit import snapshot
    from focuscrawl.outlinks.urls import virtual_host_domain
    from focuscrawl.parse.listing import parse_listing
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    world = build_world(8, data_dir=None, users=300, cache_dir=Path(cfg.var_dir), paused=True, rate_limit=0,
                        events_per_minute=5.0, web=True)
    world.clock.advance(3600)
    run, warc = uuid.uuid4().hex[:8], tmp_path / "warc"
    posts_table, snapshots_table = tmp_path / "reddit_posts", tmp_path / "page_snapshots"
    logs = tmp_path / "logs"
    logs.mkdir()
    with WorldServer(world, cfg.bind_host) as server:
        env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": server.url.removeprefix("http://")}
        topic = f"fp-{run}"
        procs = {
            "explorer": _spawn(["streaming/fue/explorer.py", "--base-url", server.url, "--topic", topic,
                                "--interval", "0.5", "--warc", str(warc)], logs / "explorer.log", env),
            "consumer": _spawn(["streaming/consumer.py", "--sink", "fue_posts", "--topic", topic, "--group", f"g{run}",
                                "--table-uri", str(posts_table), "--batch-seconds", "1"], logs / "consumer.log", env),
            "revisitor": _spawn(["streaming/revisitor.py", "--seed", server.url + world.web.page_path(0),
                                 "--discover", "/site/[^/]+/wiki/", "--max-pages", "12",
                                 "--fetch-spec", fetch_spec(tmp_path, server.url, 0.02),
                                 "--idle", "0.5", "--flush-every", "4", "--table", str(snapshots_table),
                                 "--priority-topic", f"focuscrawl.test.prio.{run}", "--warc", str(warc)],
                                logs / "revisitor.log", env),
        }
        try:
            wait_until(lambda: len(_rows(snapshots_table)) >= 12, 300,
                       f"page_snapshots short; see {logs}/revisitor.log")
            wait_until(lambda: len(_rows(posts_table)) >= 30, 300,
                       f"reddit_posts short; see {logs}/explorer.log and consumer.log")
            os.killpg(procs["revisitor"].pid, signal.SIGKILL)  # a killed process must leave valid files
        finally:
            for name, proc in procs.items():
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
            for proc in procs.values():
                proc.wait(timeout=60)
    assert procs["explorer"].returncode == 0, (logs / "explorer.log").read_text()[-3000:]
    assert procs["revisitor"].returncode == -signal.SIGKILL

    files = sorted(warc.iterdir())
    by_process = {name: [f for f in files if f.name.startswith(f"{name}-")] for name in ("fue-explorer", "revisitor")}
    assert all(by_process.values()) and sum(map(len, by_process.values())) == len(files), files
    assert {f.name.split("-")[-2] for f in by_process["revisitor"]} == {str(procs["revisitor"].pid)}
    done = subprocess.run([sys.executable, "-m", "warcio.cli", "check", *map(str, files)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr

    robots = 0
    for path in by_process["revisitor"]:
        with open(path, "rb") as f:
            robots += sum(r.rec_type == "response" and r.rec_headers.get_header("WARC-Target-URI").endswith("/robots.txt")
                          for r in ArchiveIterator(f))
    assert robots >= 1

    snapshots = _rows(snapshots_table)
    assert all(r["warc_file"] for r in snapshots)
    for row in snapshots[:SAMPLE]:
        rec, http, body = _record_at(warc, row)
        assert rec.get_header("WARC-Record-ID") == row["warc_record_id"] and rec.get_header("WARC-Type") == "response"
        assert rec.get_header("WARC-Target-URI") == row["url"] and http.get_statuscode() == "200"
        again = snapshot(row["url"], body, row["period"], 0.0, domain_of=virtual_host_domain("/site/"))
        assert again["content_digest"] == row["content_digest"]
        assert again["internal_outlinks"] == row["internal_outlinks"]

    posts = _rows(posts_table)
    assert all(r["warc_file"] for r in posts)
    step = max(1, len(posts) // SAMPLE)
    for row in posts[::step][:SAMPLE]:
        rec, http, body = _record_at(warc, row)
        assert rec.get_header("WARC-Record-ID") == row["warc_record_id"]
        listed = parse_listing(body, rec.get_header("WARC-Target-URI")).records
        assert row["name"] in {r["name"] for r in listed} and "/r/" in rec.get_header("WARC-Target-URI")
    print(json.dumps({"files": len(files), "snapshots": len(snapshots), "posts": len(posts),
                      "bytes": sum(f.stat().st_size for f in files)}))
