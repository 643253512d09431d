"""streaming/revisitor.py against the messy world over real HTTP, with a project's ``[sites.scope]``: every refusal
(a trap the scope refuses, a redirect loop and a soft-404 refused after the fetch) is counted on its Prometheus
endpoint and arrives on the dead-letter topic of real Kafka with its reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from focuscrawl.stream.metrics import scrape
from focuscrawl.services.process import wait_until
from focuscrawl.core.status_file import read_status
from focuscrawl.project.loading import load_project
from focuscrawl.stream.spec import FetchSpec
from focuscrawl.world.mess import Mess
from focuscrawl.world.server import WorldServer
from test_near_duplicate_skip_process import free_port  # tests/outlinks is on the path
from tests.world.conftest import small_world

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PROJECT = """
name = "scope-test"
target = "sites"
[profile]
query = "anything"
[[sites]]
name = "messy"
base_url = "{url}"
user_agent = "focuscrawl-test (+mailto:t@example.org)"
politeness_delay = 0.0
[sites.scope]
max_date_steps = 0
detect_soft404 = true
"""


def dead_letters(bootstrap: str, port: int) -> list[dict]:
    from kafka import KafkaConsumer

    from focuscrawl.crawl.dead_letters import DEAD_LETTER_TOPIC

    consumer = KafkaConsumer(DEAD_LETTER_TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000, group_id=None)
    try:
        rows = [json.loads(m.value) for m in consumer]
    finally:
        consumer.close()
    return [r for r in rows if f":{port}/" in r["url"]]


def test_the_revisitor_process_reports_every_refusal(cfg, kafka_broker, tmp_path):
    mess = Mess(seed=2, redirect_loops=1, soft404=1, calendar=True)
    with WorldServer(small_world(seed=3, web=True, users=1000, mess=mess)) as world:
        host = world.url.split("//")[1]
        (tmp_path / "project.toml").write_text(PROJECT.format(url=world.url))
        # what the platform's plan hands the revisitor for the project's site "messy"
        spec = FetchSpec(site=load_project(tmp_path / "project.toml").site("messy")).write(tmp_path / "messy.json")
        seed = world.url + world.world.web.page_path(world.world.web.pages_of_host[world.world.web.hosts[0]][0])
        port = free_port()
        env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": host}
        log = Path(cfg.var_dir) / "logs" / f"revisitor-scope-{uuid.uuid4().hex[:6]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "streaming/revisitor.py", "--seed", seed, "--discover", "/site/", "--max-pages", "60",
             "--clock", "wall", "--idle", "0.2", "--bootstrap", kafka_broker.url, "--fetch-spec", str(spec),
             "--table", str(tmp_path / "snapshots"), "--priority-topic", f"focuscrawl.test.prio.{uuid.uuid4().hex[:8]}",
             "--status-file", str(tmp_path / "revisitor.json"), "--metrics-port", str(port)],
            cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(lambda: read_status(tmp_path / "revisitor.json").get("due") == 0
                       and (read_status(tmp_path / "revisitor.json").get("revisits") or 0) > 0, 300,
                       f"the revisitor did not finish its period; see {log}")
            status = read_status(tmp_path / "revisitor.json")
            refused = status["scope"]["refused"]
            assert refused.get("trap_date_steps", 0) >= 1, status
            metrics = scrape(f"http://{cfg.bind_host}:{port}/metrics")
            assert metrics["scope_refused_total"] == sum(refused.values())
            assert status["refused"] >= 2  # at least one loop and one soft-404 refused after their fetch
            time.sleep(1)
            letters = dead_letters(kafka_broker.url, world.crawl.server_address[1])
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    by_parser: dict[str, list[dict]] = {}
    for letter in letters:
        by_parser.setdefault(letter["parser"], []).append(letter)
    assert len(by_parser["scope"]) == sum(refused.values())
    assert all(r["reason"].startswith("trap_date_steps: ") and "/calendar?month=" in r["url"] for r in by_parser["scope"])
    assert any("redirects in a loop" in r["reason"] and "/loop/" in r["url"] for r in by_parser["fetch"])
    assert by_parser["soft404"] and all(r["reason"].startswith("soft-404: ") for r in by_parser["soft404"])
    assert {r["source"] for r in letters} == {"revisitor"}
