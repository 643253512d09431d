"""Steering a running process through real Kafka: streaming/revisitor.py against the world over HTTP takes a seed
page, pauses, comes back from a SIGKILL still paused, resumes at a new budget, and every command lands in the
control_audit table through streaming/consumer.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from focuscrawl.control import Command, send
from focuscrawl.core.status_file import read_status
from focuscrawl.project.loading import parse_project
from focuscrawl.services.process import wait_until
from focuscrawl.stream.spec import FetchSpec
from focuscrawl.world.server import WorldServer
from tests.world.conftest import small_world

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def spawn(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log.open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=40)


def test_a_revisitor_is_paused_resumed_reseeded_and_rebudgeted_without_a_restart(cfg, kafka_broker, tmp_path):
    from deltalake import DeltaTable

    topic, audit = f"focuscrawl.test.control.{uuid.uuid4().hex[:8]}", f"focuscrawl.test.audit.{uuid.uuid4().hex[:8]}"
    with WorldServer(small_world(seed=3, web=True, users=1000)) as world:
        web = world.world.web
        host_a, host_b = web.hosts[0], web.hosts[1]
        seed = world.url + web.page_path(web.pages_of_host[host_a][0])
        added = world.url + web.page_path(web.pages_of_host[host_b][0])  # on another site: known only as a new seed
        site = parse_project({"name": "steer", "target": "sites", "profile": {"query": "x"},
                              "sites": [{"name": "w", "base_url": world.url, "politeness_delay": 0.0,
                                         "user_agent": "focuscrawl-test (+mailto:t@example.org)"}]}).site("w")
        spec = FetchSpec(site=site, pace=0.1).write(tmp_path / "w.json")  # the plan's pace: 10 fetches a second
        env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": world.url.split("//")[1],
               "FOCUSCRAWL_LAKE": str(tmp_path / "lake")}
        status_file, table = tmp_path / "revisitor.json", tmp_path / "snapshots"
        args = ["streaming/revisitor.py", "--seed", seed, "--discover", f"/site/{host_a}/", "--max-pages", "400",
                "--clock", "wall", "--idle", "0.2", "--flush-every", "1", "--bootstrap", kafka_broker.url,
                "--fetch-spec", str(spec), "--table", str(table), "--control-topic", topic,
                "--priority-topic", f"focuscrawl.test.prio.{uuid.uuid4().hex[:8]}", "--status-file", str(status_file)]
        log = tmp_path / "revisitor.log"
        status = lambda: read_status(status_file) or {}  # noqa: E731
        revisits = lambda: status().get("revisits") or 0  # noqa: E731
        commands = []

        def command(*c) -> None:
            commands.append(Command(*c))
            send(kafka_broker.url, [commands[-1]], by="test", topic=topic, audit_topic=audit)

        proc = spawn(args, log, env)
        consumer = spawn(["streaming/consumer.py", "--sink", "control_audit", "--topic", audit, "--group", audit,
                          "--bootstrap", kafka_broker.url, "--batch-seconds", "0.3",
                          "--status-file", str(tmp_path / "consumer.json")], tmp_path / "consumer.log", env)
        try:
            wait_until(lambda: revisits() >= 3, 180, f"the revisitor did not start fetching; see {log}")

            command("seed", "revisits", None, added)
            wait_until(lambda: DeltaTable(str(table)).to_pyarrow_table(columns=["url"]).column("url").to_pylist().count(
                added) == 1, 120, f"the added seed was not fetched; see {log}")
            assert status()["control"]["seeds_added"] == 1

            command("pause", "revisits")
            wait_until(lambda: status()["control"]["paused"], 30, "the pause did not arrive")
            time.sleep(1.5)  # a fetch under way when the command arrived ends first
            paused_at = revisits()
            time.sleep(3)
            assert revisits() == paused_at, "a paused revisitor kept fetching"

            stop(proc, signal.SIGKILL)  # a restart while paused: the new process applies the state before any fetch
            proc = spawn(args, log, env)
            wait_until(lambda: status().get("pid") == proc.pid and status()["control"]["paused"], 120,
                       f"the restarted revisitor did not report itself paused; see {log}")
            time.sleep(3)
            assert revisits() == 0, "the restarted revisitor fetched while its loop was paused"

            command("budget", "revisits", "fetches_per_second", 0.5)
            command("resume", "revisits")
            wait_until(lambda: not status()["control"]["paused"]
                       and status()["control"]["budgets"] == {"fetches_per_second": 0.5}, 30, "the resume did not arrive")
            wait_until(lambda: revisits() >= 1, 60, f"the resumed revisitor did not fetch; see {log}")
            start, at = revisits(), time.monotonic()
            time.sleep(8)
            # at most one fetch every 2 s (plus the one under way), however slow or fast the machine
            assert revisits() - start <= (time.monotonic() - at) / 2 + 2, (start, revisits())

            audit_rows = lambda: (DeltaTable(str(tmp_path / "lake" / "control_audit")).to_pyarrow_table()  # noqa: E731
                                  .sort_by("kafka_offset").to_pylist() if (tmp_path / "lake" / "control_audit").exists() else [])
            wait_until(lambda: len(audit_rows()) == len(commands), 60, "the commands did not land in control_audit")
            landed = sorted(audit_rows(), key=lambda r: r["at_ms"])
            assert [(r["action"], r["loop"], r["knob"], r["value"], r["by"]) for r in landed] == [
                ("seed", "revisits", None, added, "test"), ("pause", "revisits", None, None, "test"),
                ("budget", "revisits", "fetches_per_second", "0.5", "test"), ("resume", "revisits", None, None, "test")]
        finally:
            stop(proc)
            stop(consumer)
