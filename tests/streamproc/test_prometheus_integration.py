"""A live run scraped by a real Prometheus: the crawler against a rate-limited world with a robots.txt rule,
the consumer landing its posts, both on the real broker; Prometheus (Debian's binary, ``make sysdeps``)
scrapes them through a file_sd targets file, and its HTTP API answers with the named metrics."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from focuscrawl.stream.metrics import prometheus_config, write_targets
from helpers import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# Every family a stream process exposes (focuscrawl.stream.metrics), whether or not it has counted yet.
NAMED = ["focuscrawl_fetches", "focuscrawl_fetch_failures", "focuscrawl_fetch_seconds", "focuscrawl_http_429",
         "focuscrawl_retry_after_seconds", "focuscrawl_fetch_retries", "focuscrawl_robots_denied",
         "focuscrawl_records_consumed", "focuscrawl_records_produced", "focuscrawl_record_errors",
         "focuscrawl_consumer_lag", "focuscrawl_rows_written", "focuscrawl_dead_letters",
         "focuscrawl_duplicates_dropped", "focuscrawl_frontier_size", "focuscrawl_candidates",
         "focuscrawl_pushed_scores_applied", "focuscrawl_extracted_users", "focuscrawl_relevant_users",
         "focuscrawl_harvest_ratio", "focuscrawl_process_info"]



@pytest.fixture
def limited_world(serve_world):
    """One request per 2 s per client (429 with Retry-After beyond), robots.txt disallowing every listing
    page after the first."""
    from focuscrawl.world.faults import Faults

    return serve_world(rate_limit=1, rate_window=2.0, faults=Faults(robots_disallow=["/r/all/new.json?limit=100&after="]))


def spawn(args: list[str], log: Path, **env: str) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, *args], cwd=ROOT, env={**os.environ, **env},
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def query(prom: str, expr: str) -> list[dict]:
    got = requests.get(f"{prom}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert got["status"] == "success", got
    return got["data"]["result"]


def test_prometheus_scrapes_the_named_metrics_of_a_live_run(kafka_broker, limited_world, cfg, tmp_path):
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("no prometheus binary (`make sysdeps` installs Debian's package)")
    topic = f"pm-{uuid.uuid4().hex[:8]}"
    crawler_port, consumer_port, prom_port = free_port(), free_port(), free_port()
    lake = tmp_path / "lake"
    procs = {
        "crawler-listing": spawn(
            ["streaming/crawler.py", "--base-url", limited_world, "--topic", topic, "--dead-letter-topic", topic + "-dl",
             "--priority-topic", topic + "-prio", "--interval", "0.5", "--max-pages", "4", "--politeness-delay", "0.1",
             "--metrics-port", str(crawler_port), "--status-file", str(tmp_path / "crawler.json")],
            tmp_path / "crawler.log"),
        "consumer-reddit_posts": spawn(
            ["streaming/consumer.py", "--sink", "reddit_posts", "--topic", topic, "--group", topic,
             "--batch-seconds", "0.3", "--metrics-port", str(consumer_port),
             "--status-file", str(tmp_path / "consumer.json")], tmp_path / "consumer.log", FOCUSCRAWL_LAKE=str(lake)),
    }
    targets = tmp_path / "prometheus-targets.json"
    write_targets(targets, [("crawler-listing", f"127.0.0.1:{crawler_port}"),
                            ("consumer-reddit_posts", f"127.0.0.1:{consumer_port}")])
    config = tmp_path / "prometheus.yml"
    config.write_text(prometheus_config(targets, scrape_interval="1s"))
    prom_log = tmp_path / "prometheus.log"
    with open(prom_log, "wb") as out:
        prom = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{prom_port}"
    # What must arrive: one series per expression (the second page is denied by robots.txt, so each pass
    # reads the front page again; four reads 0.5 s apart put two in one of the world's 2-second rate-limit
    # slices, so one is a 429 with its Retry-After wait and retry; the frontier, the consumer's rows and lag).
    wanted = ['focuscrawl_fetches_total{process="crawler-listing",status="200"}',
              'focuscrawl_fetches_total{process="crawler-listing",status="429"}',
              "focuscrawl_http_429_total", "focuscrawl_retry_after_seconds_total", "focuscrawl_fetch_retries_total",
              "focuscrawl_robots_denied_total", 'focuscrawl_candidates{process="crawler-listing"} > 0',
              'focuscrawl_frontier_size{process="crawler-listing"} > 0', "focuscrawl_records_produced_total",
              'focuscrawl_rows_written_total{process="consumer-reddit_posts",table="reddit_posts"} > 0',
              'focuscrawl_consumer_lag{process="consumer-reddit_posts"}',
              'up{job="focuscrawl"} == 1']
    got: dict[str, list] = {}
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            for name, p in procs.items():
                assert p.poll() is None, f"{name} exited:\n{(tmp_path / (name.split('-')[0] + '.log')).read_text()[-3000:]}"
            assert prom.poll() is None, prom_log.read_text()[-3000:]
            try:
                got = {expr: query(url, expr) for expr in wanted}
            except requests.RequestException:
                got = {}
            if got and all(got.values()):
                break
            time.sleep(1)
        missing = [e for e in wanted if not got.get(e)]
        assert not missing, (missing, (tmp_path / "crawler.log").read_text()[-2000:])
        assert len(got['up{job="focuscrawl"} == 1']) == 2
        assert got["focuscrawl_retry_after_seconds_total"][0]["metric"]["host"] == limited_world

        # The endpoints themselves, parsed as Prometheus text: every named family is there.
        for port in (crawler_port, consumer_port):
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            families = {f.name for f in text_string_to_metric_families(text)}
            assert set(NAMED) <= families, sorted(set(NAMED) - families)

        # `focuscrawl status` reads the same numbers: the status file's snapshot against Prometheus's, on a
        # count that stops moving once the crawler has read its four pages.
        deadline = time.monotonic() + 30
        while True:
            status = json.loads((tmp_path / "crawler.json").read_text())
            stored = sum(float(r["value"][1]) for r in query(url, "focuscrawl_http_429_total"))
            if status.get("pages") == 4 and status["metrics"]["http_429_total"] == stored or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert status["metrics"]["http_429_total"] == stored >= 1, (status, stored)
    finally:
        for p in (*procs.values(), prom):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for name, p in procs.items():
            assert p.wait(40) == 0, name
        prom.wait(30)
