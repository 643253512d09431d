"""The stream-process scaffold without Kafka: signals, status file, metrics endpoint, a taken port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests
import pytest
from prometheus_client.parser import text_string_to_metric_families

from focuscrawl.stream.metrics import scrape
from helpers import CHILD_TIMEOUT, free_port

ROOT = Path(__file__).resolve().parents[2]

# A process that only counts: what every stream process does around its own work.
SCRIPT = """
import sys
from focuscrawl.config import settings
from focuscrawl.stream.process import StreamProcess, parser
cfg = settings()
ap = parser("probe", "probe process", cfg)
args = ap.parse_args(sys.argv[1:])
with StreamProcess("probe", args, cfg) as proc:
    ticks = {"n": 0}
    proc.status(lambda: {"ticks": ticks["n"]})
    print("ready", flush=True)
    while proc.running():
        ticks["n"] += 1
        proc.metrics.candidates.set(ticks["n"])
        proc.metrics.fetch_observer.response("http://h:1", 200, 0.01)
        proc.wait(0.05)
"""



def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    """The probe; ``ready`` on stdout, its log in ``tmp_path/probe.log``."""
    with open(tmp_path / "probe.log", "ab") as log:
        return subprocess.Popen([sys.executable, "-c", SCRIPT, *args], cwd=ROOT, env=os.environ.copy(),
                                stdout=subprocess.PIPE, stderr=log, text=True)


def wait_for(check, timeout: float = CHILD_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = check()
        except (OSError, ValueError, requests.RequestException):
            got = None
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_sigterm_stops_cleanly_with_a_last_status_and_metrics_served(tmp_path):
    status_file, port = tmp_path / "status" / "probe.json", free_port()
    proc = start(tmp_path, "--status-file", str(status_file), "--metrics-port", str(port), "--status-every", "0.2")
    try:
        assert proc.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}/metrics"
        text = wait_for(lambda: (t := requests.get(url, timeout=2).text) and "focuscrawl_fetches_total{" in t and t)
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["focuscrawl_process_info"].samples[0].labels["process"] == "probe"
        assert families["focuscrawl_fetches"].samples[0].labels == {"host": "http://h:1", "status": "200"}
        running = wait_for(lambda: (s := json.loads(status_file.read_text()))["ticks"] > 0 and s)
        assert (running["process"], running["pid"]) == ("probe", proc.pid)
        assert running["metrics"]["fetches_total"] >= 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=CHILD_TIMEOUT)
    out = (tmp_path / "probe.log").read_text()
    assert proc.returncode == 0, out
    final = json.loads(status_file.read_text())
    # The last status is written at exit, after the loop ended: it holds the last tick and agrees
    # with the endpoint's numbers (one response counted per tick).
    assert final["metrics"]["fetches_total"] == final["ticks"] == final["metrics"]["candidates"]
    assert final["updated_at_ms"] >= running["updated_at_ms"]
    assert "probe stopped" in out


def test_scrape_reads_the_same_numbers_as_the_status(tmp_path):
    status_file, port = tmp_path / "probe.json", free_port()
    proc = start(tmp_path, "--status-file", str(status_file), "--metrics-port", str(port))
    try:
        assert proc.stdout.readline().strip() == "ready"
        got = wait_for(lambda: (m := scrape(f"http://127.0.0.1:{port}/metrics")).get("fetches_total", 0) >= 3 and m)
        assert {"fetches_total", "candidates", "http_429_total", "robots_denied_total", "fetch_retries_total",
                "retry_after_seconds_total", "frontier_size"} <= set(got)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=CHILD_TIMEOUT)
    assert proc.returncode == 0


def test_a_taken_metrics_port_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start(tmp_path, "--status-file", str(tmp_path / "s.json"), "--metrics-port", str(port))
        proc.communicate(timeout=CHILD_TIMEOUT)
    out = (tmp_path / "probe.log").read_text()
    assert proc.returncode == 1
    assert f"cannot serve metrics on 127.0.0.1:{port}" in out and "--metrics-port" in out


def test_the_fetch_spec_gives_the_fetcher_and_the_base_url(cfg, shared_data, tmp_path):
    """``--fetch-spec FILE``: the site's User-Agent, its politeness owed by every instance (the shared ledger)
    and the loop's own pace, counted in the metrics; the process reads no project file."""
    from focuscrawl.project.loading import load_project
    from focuscrawl.stream.process import StreamProcess, parser
    from focuscrawl.stream.spec import FetchSpec

    site = load_project(ROOT / "projects" / "world.toml").site("world")
    spec = FetchSpec(site=site, pace=0.25).write(tmp_path / "world.json")
    ap = parser("probe", "probe", cfg)
    ap.add_argument("--base-url", default="http://default.invalid")
    args = ap.parse_args(["--fetch-spec", str(spec), "--status-file", str(tmp_path / "s.json")])
    assert (args.project_site, args.base_url) == (site, cfg.world_url)
    with StreamProcess("probe", args, cfg, install_signals=False) as proc:
        fetcher = proc.fetcher()
        assert fetcher.user_agent == site.user_agent
        assert (fetcher.politeness.min_delay, fetcher.politeness.host_delay) == (0.25, site.politeness_delay)
        assert fetcher.politeness.ledger is not None  # the site's pause holds across instances
        assert fetcher.observer is proc.metrics.fetch_observer
    explicit = ap.parse_args(["--fetch-spec", str(spec), "--base-url", "http://x.test"])
    assert explicit.base_url == "http://x.test"


def test_a_bad_fetch_spec_exits_2_naming_the_field(cfg, tmp_path, capsys):
    from focuscrawl.stream.process import parser

    (tmp_path / "bad.json").write_text('{"site": {"name": "w", "world": true}, "pace": 0}')
    with pytest.raises(SystemExit) as exit_:
        parser("probe", "probe", cfg).parse_args(["--fetch-spec", str(tmp_path / "bad.json")])
    assert exit_.value.code == 2 and "site.user_agent" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser("probe", "probe", cfg).parse_args(["--fetch-spec", str(tmp_path / "absent.json")])
    assert "not readable" in capsys.readouterr().err
