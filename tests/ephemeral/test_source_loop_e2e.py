"""Seed 001's loop end to end, every engine real (issue 6).

world (HTTP, sped up) -> source crawler process (fetch layer) -> Kafka -> two landing processes ->
Delta ``source_recrawls`` / ``page_clicks`` -> Airflow run of ``source_schedule`` (spark-submit fits
λ, P, μ and the Lagrangian schedule, then publishes it) -> the running crawler follows the
pushed recrawl intervals without a restart.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from focuscrawl.delta_sink import table_rows
from focuscrawl.services.process import wait_until
from focuscrawl.status import read_status

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

SPEEDUP = 120.0  # two simulated minutes per wall second
BUDGET = 0.03  # fetches per simulated second: 3.6 a wall second
DEFAULT_INTERVAL = 1800.0  # simulated seconds between recrawls before a schedule arrives


def _spawn(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=env)


@pytest.fixture()
def world(cfg):
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    w = build_world(6, data_dir=None, users=500, cache_dir=Path(cfg.var_dir), paused=True, rate_limit=0)
    w.clock.advance(12 * 3600)  # half a day of content: the sources have dated links to be found by
    w.clock.set_speedup(SPEEDUP)
    w.clock.resume()
    with WorldServer(w, cfg.bind_host) as server:
        yield server


def test_history_lands_schedule_is_computed_pushed_and_followed(cfg, kafka_broker, airflow, world):
    from deltalake import DeltaTable

    from focuscrawl.ephemeral.tables import PAGE_CLICKS, SOURCE_RECRAWLS, SOURCE_SCHEDULE

    host = world.world.web.hosts[0]
    crawl_port, eval_port = world.crawl.server_address[1], world.eval.server_address[1]
    env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": f"{cfg.bind_host}:{crawl_port},{cfg.bind_host}:{eval_port}"}
    logs = Path(cfg.var_dir) / "logs"
    status_file = Path(cfg.var_dir) / "e2e-sources.json"
    procs = [
        _spawn(["streaming/source_crawler.py", "land", "--table", "source_recrawls", "--group", "e2e-recrawls",
                "--batch-seconds", "1"], logs / "e2e-land-recrawls.log", env),
        _spawn(["streaming/source_crawler.py", "land", "--table", "page_clicks", "--group", "e2e-clicks",
                "--batch-seconds", "1"], logs / "e2e-land-clicks.log", env),
    ]
    crawler = _spawn(["streaming/source_crawler.py", "crawl", "--site", f"{world.url}/site/{host}/",
                      "--budget", str(BUDGET), "--default-interval", str(DEFAULT_INTERVAL), "--min-interval", "60",
                      "--max-sources", "12", "--politeness-delay", "0.02",
                      "--feedback-every", "5", "--status-file", str(status_file)], logs / "e2e-source-crawler.log", env)
    procs.append(crawler)
    try:
        airflow.wait_for_dag("source_schedule", timeout=600)  # a loaded machine parses slowly; the crawl goes on
        # 1. Sources found (feeds and a sitemap among them), history streamed and landed in Delta.
        before = wait_until(lambda: (s := read_status(status_file)).get("recrawls", 0) >= 40 and s, 240,
                            f"source crawler made no progress; see {logs / 'e2e-source-crawler.log'}")
        kinds = set(before["kinds"].values())
        assert {"feed", "sitemap", "hub"} <= kinds, kinds
        assert set(before["intervals"].values()) == {DEFAULT_INTERVAL}
        assert before["errors"] == 0
        wait_until(lambda: table_rows(SOURCE_RECRAWLS.path(cfg)) >= 20 and table_rows(PAGE_CLICKS.path(cfg)) >= 5, 180,
                   f"history did not land; see {logs}/e2e-land-*.log")

        # 2. A real Airflow run: spark-submit fits and schedules, then the publish task pushes.
        airflow.unpause("source_schedule")
        run_id = airflow.trigger("source_schedule", {"budget": BUDGET, "host_min_interval_s": 5.0, "optimism": 0.0})
        state = airflow.wait("source_schedule", run_id, timeout=900)
        assert state == "success", airflow.task_log("source_schedule", run_id, "source_schedule")[-3000:]
        plan = DeltaTable(SOURCE_SCHEDULE.path(cfg)).to_pandas().set_index("source_url")
        assert set(before["kinds"]) <= set(plan.index)
        assert plan.recrawl_rate.sum() + plan.page_rate.sum() == pytest.approx(BUDGET, rel=1e-3)

        # 3. The running crawler (never restarted) follows the pushed intervals.
        def follows():
            s = read_status(status_file)
            if s.get("schedules_applied", 0) < 1:
                return None
            for url, interval in s["intervals"].items():
                want = plan.loc[url, "recrawl_interval_s"]
                if (interval is None) != math.isnan(want) or (interval is not None and abs(interval - want) > 1e-6 * want):
                    return None
            return s

        after = wait_until(follows, 120, f"crawler did not take up the pushed schedule: {read_status(status_file)}")
        assert set(after["intervals"].values()) != {DEFAULT_INTERVAL}  # its recrawl intervals changed
        fastest = plan.recrawl_interval_s.idxmin()
        assert plan.loc[fastest, "recrawl_interval_s"] < DEFAULT_INTERVAL
        pushed_at = after["recrawls"]
        # the most valuable source is now recrawled on its new, shorter interval (plus a few queued slots)
        slack = 3 / BUDGET
        wait_until(lambda: (s := read_status(status_file))["recrawls"] > pushed_at + 20
                   and s["last_gaps"][fastest] <= plan.loc[fastest, "recrawl_interval_s"] + slack, 120,
                   f"{fastest} not recrawled every {plan.loc[fastest, 'recrawl_interval_s']:.0f} s: {read_status(status_file)}")
        assert crawler.poll() is None, "the crawler was restarted or died"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
