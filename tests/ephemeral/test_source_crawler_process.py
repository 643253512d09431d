"""streaming/source_crawler.py on the stream scaffold (focuscrawl.stream.process): the command line the platform's
plan passes, and as a process against the world on the real broker: its fetches counted on --metrics-port, its
status file, a clean SIGTERM. Its sleep until the next deadline (SiteClock.wall_until) is tested with the
other site-clock tests, tests/live/test_live_site_clock.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from helpers import fetch_spec, free_port


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "streaming"))

import source_crawler  # noqa: E402


def test_the_plans_command_line_parses_with_the_project_site_and_the_scaffolds_arguments(tmp_path):
    from focuscrawl.config import settings
    from focuscrawl.platform.plan import Models, plan
    from focuscrawl.project.loading import load_project

    cfg = settings()
    project_file = ROOT / "projects" / "world.toml"
    project = load_project(project_file)
    specs = {s.name: s for s in plan(project, cfg, models=Models(Path("/m/r.joblib"), Path("/m/c.joblib")))}
    spec = specs["source-crawler"]
    assert spec.metrics_port and spec.command[spec.command.index("--metrics-port") + 1] == str(spec.metrics_port)
    args = source_crawler.parse(list(spec.command[2:]), cfg)
    assert args.command == "crawl" and args.metrics_port == spec.metrics_port
    assert args.site and all("://" in s for s in args.site)  # the roots
    assert args.project_site == project.site(project.loops.sources.site)  # from the plan's --fetch-spec
    assert str(args.status_file) == spec.status_file and args.bootstrap == cfg.kafka_bootstrap


def test_the_plan_hands_the_crawler_the_projects_profit_signal(tmp_path):
    """world.toml (target world): clicks from the world's click log; on real sites the pages' relevance, a
    declared click log's URL when the project names one, and no click log when it names a clicks topic."""
    from focuscrawl.config import settings
    from focuscrawl.platform.plan import Models, plan
    from tests.platform.conftest import derived_project

    cfg = settings()
    models = Models(Path("/m/r.joblib"), Path("/m/c.joblib"))

    def crawler_args(project):
        spec = {s.name: s for s in plan(project, cfg, models=models)}["source-crawler"]
        return source_crawler.parse(list(spec.command[2:]), cfg)

    world = crawler_args(derived_project(overrides={}))
    assert (world.feedback, world.clicks_url) == ("clicks", None)
    sites = crawler_args(derived_project(overrides={"target": "sites"}))
    assert (sites.feedback, sites.clicks_url) == ("relevance", None)
    url = "http://127.0.0.1:9/search/clicks.json"
    told = crawler_args(derived_project(overrides={"target": "sites", ("loops", "sources", "feedback"): "clicks",
                                                   ("loops", "sources", "clicks_url"): url}))
    assert (told.feedback, told.clicks_url, told.no_click_log) == ("clicks", url, False)
    # clicks on the project's own topic: a site with no click log, and the crawler polls none
    topic = crawler_args(derived_project(overrides={"target": "sites", ("loops", "sources", "feedback"): "clicks",
                                                    ("loops", "sources", "clicks_topic"): "shop.clicks"}))
    assert (topic.feedback, topic.clicks_url, topic.no_click_log) == ("clicks", None, True)


def test_sites_bootstrap_and_land_parse_as_before():
    from focuscrawl.config import settings

    cfg = settings()
    args = source_crawler.parse(["--bootstrap", "h:1", "crawl", "--site", "http://a/", "--site", "http://b/x/"], cfg)
    assert (args.bootstrap, args.site, args.project_site, args.metrics_port) == ("h:1", ["http://a/", "http://b/x/"],
                                                                                None, 0)
    assert args.status_file == cfg.var_dir / "status" / "source-crawler.json"
    assert source_crawler.parse(["crawl", "--site", "http://a/", "--bootstrap", "h:2"], cfg).bootstrap == "h:2"
    land = source_crawler.parse(["--bootstrap", "h:1", "land", "--table", "page_clicks"], cfg)
    assert (land.command, land.table, land.bootstrap, land.batch_seconds) == ("land", "page_clicks", "h:1", 2.0)
    with pytest.raises(SystemExit):
        source_crawler.parse(["crawl"], cfg)  # neither a root nor a project



def main_thread_switches(pid: int) -> int:
    """Voluntary context switches of the process's main thread: one per wake-up of its loop."""
    for line in Path(f"/proc/{pid}/task/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def main_thread_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of the process's main thread (/proc's utime and stime, in clock ticks)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.parametrize("feedback", ["clicks", "relevance"])
def test_the_process_serves_its_fetch_counters_on_the_metrics_port_and_sleeps_between_slots(cfg, kafka_broker,
                                                                                             tmp_path, feedback):
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    from focuscrawl.services.process import wait_until
    from focuscrawl.core.status_file import read_status
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    world = build_world(6, data_dir=None, users=300, cache_dir=cfg.var_dir, paused=True, rate_limit=0)
    world.clock.advance(12 * 3600)  # half a day of content: sources are found by the dated links they list
    world.clock.resume()
    run = uuid.uuid4().hex[:8]
    name, port, status = f"sc-{run}", free_port(), tmp_path / "sources.json"
    log = Path(cfg.var_dir) / "logs" / f"source-crawler-{run}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with WorldServer(world, cfg.bind_host, 0, 0) as server:
        env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": server.url.removeprefix("http://")}
        # One slot per 100 s of the wall clock: the first fires at once, then the loop only waits.
        proc = subprocess.Popen(
            [sys.executable, "streaming/source_crawler.py", "crawl", "--site", f"{server.url}/site/{world.web.hosts[0]}/",
             "--clock", "wall", "--budget", "0.01", "--max-sources", "6",
             "--fetch-spec", fetch_spec(tmp_path, server.url, 0.02),
             "--feedback", feedback, "--feedback-every", "60", "--schedule-topic", f"focuscrawl.test.schedule.{run}", "--name", name,
             "--bootstrap", kafka_broker.url, "--status-file", str(status), "--metrics-port", str(port)],
            cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            # discovery, the first slot and (clicks) the first click-log read: three transactions, else two
            transactions = 3 if feedback == "clicks" else 2
            wait_until(lambda: read_status(status).get("transactions", 0) >= transactions, 300,
                       f"no slot committed; see {log}")
            text = requests.get(f"http://{cfg.bind_host}:{port}/metrics", timeout=10).text
            samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
            assert [s.labels["process"] for s in samples if s.name == "focuscrawl_process_info"] == [name]
            ok = [s for s in samples if s.name == "focuscrawl_fetches_total" and s.labels["status"] == "200"]
            assert ok and {s.labels["host"] for s in ok} == {server.url}, ok
            fetched = sum(s.value for s in ok)
            assert fetched >= 2  # the front page and its sources at least (discovery, then a slot)
            state = read_status(status)
            assert state["process"] == name and state["metrics"]["fetches_total"] >= fetched
            assert state["sources"] >= 1 and "intervals" in state and "transactions" in state
            # Between slots the main thread wakes for the status writes (1 s), not every 10 ms, and does not spin:
            # without a click log to poll, a feedback deadline left in the past made it wait 0 s on end (0.44 of a
            # core in the e2e of 64e4d23).
            before, cpu_before = main_thread_switches(proc.pid), main_thread_cpu_seconds(proc.pid)
            time.sleep(5)
            woke = main_thread_switches(proc.pid) - before
            busy = main_thread_cpu_seconds(proc.pid) - cpu_before
            assert woke < 60, f"the main loop woke {woke} times in 5 s"
            assert busy < 0.5, f"the main loop ran {busy:.2f} CPU-s in 5 s between slots"
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
        assert code == 0, log.read_text()[-3000:]
        final = read_status(status)
        assert final["metrics"]["fetches_total"] >= fetched and final["process"] == name
