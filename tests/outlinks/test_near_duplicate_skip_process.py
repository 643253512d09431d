"""streaming/revisitor.py --skip-near-duplicates as a process: real HTTP through the fetch layer, real Kafka
for its priority topic, Delta on disk; the skips show on its Prometheus endpoint and in its status file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from focuscrawl.stream.metrics import scrape
from focuscrawl.services.process import wait_until
from focuscrawl.core.status_file import read_status

from helpers import HttpSite, fetch_spec, free_port
from test_near_duplicate_skip import TEXTS, html  # tests/outlinks is on the path (rootdir-less test folders)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def planted(handler) -> tuple[int, dict, bytes]:
    """The planted pages as a site: Original links to the others, each links back to Original."""
    name = handler.path.rsplit("/", 1)[-1]
    if name not in TEXTS:
        return 404, {}, b"not found"
    links = [f"/wiki/{n}" for n in TEXTS if n != "Original"] if name == "Original" else ["/wiki/Original"]
    return 200, {"Content-Type": "text/html; charset=utf-8"}, html(TEXTS[name], links)



def test_the_revisitor_process_counts_its_skips(cfg, kafka_broker, tmp_path):
    from deltalake import DeltaTable

    server = HttpSite(default=planted)
    site = server.host
    port = free_port()
    env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": site}
    log = Path(cfg.var_dir) / "logs" / f"revisitor-neardup-{uuid.uuid4().hex[:6]}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "streaming/revisitor.py", "--seed", f"http://{site}/wiki/Original", "--discover", "/wiki/",
         "--clock", "wall", "--fetch-spec", fetch_spec(tmp_path, f"http://{site}", 0.0), "--idle", "0.2",
         "--skip-near-duplicates",
         "--bootstrap", kafka_broker.url,
         "--table", str(tmp_path / "snapshots"), "--priority-topic", f"focuscrawl.test.prio.{uuid.uuid4().hex[:8]}",
         "--status-file", str(tmp_path / "revisitor.json"), "--metrics-port", str(port)],
        cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: (read_status(tmp_path / "revisitor.json").get("revisits") or 0) >= 3
                   and read_status(tmp_path / "revisitor.json").get("due") == 0, 240, f"no revisits; see {log}")
        status = read_status(tmp_path / "revisitor.json")
        assert (status["revisits"], status["near_duplicates_skipped"], status["known"]) == (3, 2, 3)
        metrics = scrape(f"http://{cfg.bind_host}:{port}/metrics")
        assert metrics["near_duplicates_skipped_total"] == 2.0
        wait_until(lambda: (read_status(tmp_path / "revisitor.json").get("written") or 0) >= 3, 60, "not flushed")
        landed = sorted(u.rsplit("/", 1)[-1] for u in DeltaTable(str(tmp_path / "snapshots")).to_pandas()["url"])
        assert landed == ["Half", "Original", "Other"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        server.stop()
