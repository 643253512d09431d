"""The demo's HTML report (issue 9, point 5; issue 16, point 7; issue 34, point 5): the live run as plots
(harvest over time per loop, DAG runs and pushes on a timeline, order changes, graph estimates with error bars)
with its tables folded behind a link, missing parts named, and a report built from short real runs of the four
experiments whose figures and tables are all there."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pandas as pd
import pytest

from focuscrawl.reports.demo import SECTION_NAMES, SECTIONS, parse_sections, run_sections, write_html

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def figures_and_tables(page: str) -> tuple[dict[str, bytes], list[pd.DataFrame]]:
    """Every embedded figure (by its alt name) and every table of the page."""
    import lxml.html

    doc = lxml.html.fromstring(page)
    figures = {}
    for img in doc.iter("img"):
        prefix, data = img.get("src").split(",", 1)
        assert prefix == "data:image/png;base64", f"{img.get('alt')} is not an embedded PNG"
        figures[img.get("alt")] = base64.b64decode(data)
    tables = pd.read_html(io.StringIO(page)) if doc.find(".//table") is not None else []
    return figures, tables


def assert_drawn_png(name: str, data: bytes) -> None:
    """A valid PNG that decodes to a picture with content, not a blank canvas."""
    import matplotlib.image as mpimg

    assert data[:8] == PNG_SIGNATURE and len(data) > 5_000, f"{name}: not a PNG or nearly empty ({len(data)} bytes)"
    pixels = mpimg.imread(io.BytesIO(data), format="png")[..., :3]
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400, f"{name}: {pixels.shape}"
    ink = (pixels.mean(axis=2) < 0.9).mean()  # share of pixels clearly darker than the white background
    assert 0.01 < ink < 0.9, f"{name}: {ink:.1%} of its pixels drawn"
    colours = np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 20, f"{name}: only {len(colours)} colours (lines of several series expected)"


LIVE_FIGURES = ("harvest.png", "timeline.png", "orders.png", "estimates.png")


def live_run(tmp_path) -> dict:
    """A live.json as ``focuscrawl demo`` writes it, its series made by the demo's own code: the harvest series
    of :func:`focuscrawl.relevance.harvest.harvest_series` over scored items, the push timeline of a
    :class:`PushWatch` polling status files as the processes write them, Airflow-shaped DAG runs, graph
    estimates as the graph loop's table holds them."""
    from focuscrawl.cli.demo import PushWatch
    from focuscrawl.core.status_file import write_status
    from focuscrawl.relevance.harvest import harvest_series
    from focuscrawl.reports.demo import ESTIMATES_KEY, HARVEST_KEY, PUSHES_KEY, RUNS_KEY

    rng = np.random.default_rng(3)
    start = pd.Timestamp("2026-05-01 12:00", tz="UTC")
    items = {loop: pd.DataFrame({"at": start + pd.to_timedelta(np.sort(rng.uniform(0, 600, 200)), unit="s"),
                                 "relevant": rng.random(200) < p})
             for loop, p in (("sources", 0.4), ("revisits", 0.6), ("graph", 0.3), ("fue", 0.5))}
    status, now = tmp_path / "status", [start.timestamp()]
    watch = PushWatch(status, ["fue", "sources", "revisits", "graph"], clock=lambda: now[0])
    users = [f"u{i}" for i in range(8)]
    for k in range(40):  # a poll every 15 s for 10 minutes
        fue_pushes, revisit_pushes = k // 14, k // 3
        write_status(status / "fue-chooser-hcp.json", {"scores_applied": fue_pushes, "top": [
            [u, 1 - i / 10] for i, u in enumerate(users[fue_pushes:] + users[:fue_pushes])]})
        write_status(status / "source-crawler.json", {"schedules_applied": k // 18, "intervals": {
            f"http://w/s{i}": 600 if k < 18 else 100 * (5 - i) for i in range(5)} | {"http://w/new": None}})
        write_status(status / "revisitor.json", {"priorities_applied": revisit_pushes, "order": [
            [f"http://w/p{(i + revisit_pushes) % 9}", 0.5] for i in range(6)]})
        watch.poll()
        now[0] += 15
    at = lambda s: (start + pd.Timedelta(seconds=s)).isoformat()  # noqa: E731
    runs = [{"dag": d, "run_type": t, "state": st, "start_date": at(a), "end_date": at(b) if b else None}
            for d, t, st, a, b in [("fue_pseudo_training", "scheduled", "success", 60, 200),
                                   ("fue_pseudo_training", "scheduled", "success", 360, 480),
                                   ("source_schedule", "asset_triggered", "success", 120, 260),
                                   ("source_schedule", "asset_triggered", "failed", 400, 430),
                                   ("outlinks_refresh", "scheduled", "success", 90, 330),
                                   ("graph_estimation", "asset_triggered", "running", 500, None)]]
    estimates = [{"crawl_id": "c7", "estimator": e, "target": t, "value": v, "estimate": x + d, "ci_low": x + d - .05,
                  "ci_high": x + d + .06}
                 for t, values in (("label", {"news": .4, "sport": .3, "tech": .2, "art": .1}),
                                   ("relevant", {"relevant": .35, "irrelevant": .65}))
                 for e, d in (("MLE", 0), ("SCE", .02), ("WCE", -.02)) for v, x in values.items()]
    return {"project": "projects/world.toml", "minutes": 10,
            "dag_runs": {"fue_pseudo_training": {"scheduled:success": 2},
                         "source_schedule": {"asset_triggered:success": 1, "asset_triggered:failed": 1}},
            RUNS_KEY: runs, PUSHES_KEY: watch.timeline, "followers": watch.seen,
            "order_changed": {loop: watch.changed(loop) for loop in watch.loops},
            "rows": {"reddit_posts": 1200, "graph_sample": 400},
            HARVEST_KEY: json.loads(harvest_series(items, "1min").to_json(orient="records", date_format="iso")),
            ESTIMATES_KEY: estimates,
            "revisits: page priorities pushed to the revisitor (page_priorities)": [{"url": "b", "score": 0.9}]}


def assert_live_plots_with_tables_behind_a_link(out, page: str) -> None:
    """Each live plot is a drawn PNG file under ``out/figures``, linked from the page and embedded in it; the
    live run's tables are all inside the folded ``<details id='live-tables'>`` the page links to."""
    import lxml.html

    figures, _ = figures_and_tables(page)
    doc = lxml.html.fromstring(page)
    links = {a.get("href") for a in doc.iter("a")}
    for name in LIVE_FIGURES:
        path = out / "figures" / name
        assert path.is_file(), f"{name} not drawn"
        assert f"figures/{name}" in links, f"{name} not linked from the page"
        assert figures[name] == path.read_bytes(), f"{name}: the embedded picture is not the file's"
        assert_drawn_png(name, path.read_bytes())
    details = doc.get_element_by_id("live-tables")
    assert details.tag == "details" and details.get("open") is None  # folded until asked for
    assert "#live-tables" in links
    start, end = page.index("id='live'"), page.index("id='fue'")
    assert page[start:end].count("<table") == len(details.findall(".//table")) >= 5  # no live table outside it


# -- fast: the parts -------------------------------------------------------------------------


def test_unknown_section_names_the_known_ones():
    assert parse_sections(" fue , outlinks ") == ["fue", "outlinks"]
    with pytest.raises(ValueError, match="unknown section.*nope.*known: fue, outlinks, ephemeral, graph-estimation"):
        parse_sections("fue,nope")


def test_page_names_every_part_not_run(tmp_path, cfg):
    page = write_html(tmp_path, cfg).read_text()
    figures, _ = figures_and_tables(page)
    for name in SECTION_NAMES:
        if name != "fue":
            assert f"missing: {name} was not run (focuscrawl report demo --only {name})" in page
    # FUE falls back to the committed disjoint-fold run: a short run cannot tell the methods apart.
    assert "Not run here: the committed result in bench/results/fue-folds." in page
    assert set(figures) == {"harvest_ratio.png"}
    assert "Not run here: <code>make demo</code>" in page
    assert f"{cfg.catalog_db}.page_priorities" in page and cfg.airflow_url in page
    assert "focuscrawl up projects/world.toml" in page  # how to keep it running


def test_every_section_says_the_command_that_runs_it(tmp_path, cfg):
    page = write_html(tmp_path, cfg).read_text()
    for section in SECTIONS:
        assert section.cli().startswith(("focuscrawl experiment ", "focuscrawl report "))
        assert f"Run it: <code>{section.cli()}</code>" in page
    fue = next(s for s in SECTIONS if s.name == "fue")
    assert fue.cli() == ("focuscrawl experiment fue --methods RND,HCP,LCP,HAC,N06 --duration 1d --step 10m "
                         "--pseudo-every 10m")


def test_live_run_becomes_tables(tmp_path, cfg):
    (tmp_path / "live.json").write_text(json.dumps({
        "minutes": 10, "dag_runs": {"graph_estimation": {"asset_triggered:success": 2},
                                    "fue_pseudo_training": {"scheduled:success": 1, "scheduled:failed": 1}},
        "followers": {"revisits": {"process": "revisitor", "pushes": 60, "before": [["a", -1.0]],
                                   "after": [["b", 0.9]]}},
        "order_changed": {"revisits": True},
        "rows": {"page_snapshots": 420, "graph_sample": 1000},
        "revisits: page priorities pushed to the revisitor (page_priorities)": [{"url": "b", "score": 0.9},
                                                                                {"url": "a", "score": 0.1}]}))
    _, tables = figures_and_tables(write_html(tmp_path, cfg).read_text())
    runs, follow, rows, prio = tables[:4]
    assert runs.set_index("dag").loc["graph_estimation", "asset_triggered:success"] == 2
    assert runs.set_index("dag").loc["graph_estimation", "scheduled:failed"] == 0
    assert follow.loc[0, "process"] == "revisitor" and bool(follow.loc[0, "order changed"])
    assert dict(zip(rows.table, rows.rows)) == {"page_snapshots": 420, "graph_sample": 1000}
    assert prio.url.tolist() == ["b", "a"]


def test_live_run_becomes_plots_with_the_tables_behind_a_link(tmp_path, cfg):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "live.json").write_text(json.dumps(live_run(tmp_path)))
    page = write_html(out, cfg).read_text()
    assert "missing:" not in page[page.index("id='live'"):page.index("id='fue'")]
    assert_live_plots_with_tables_behind_a_link(out, page)
    assert "10 minutes; 3 DAG runs succeeded by themselves; pushes followed: fue 2, sources 2, revisits 13" in page


@pytest.mark.integration
def test_report_renders_in_a_browser_with_its_plots_loaded(tmp_path, cfg):
    """Headless Chromium (the UI tests' browser) opens the page as a file: every picture decodes, the live
    tables are folded, and the link above the plots unfolds them. A screenshot goes to ``artifacts/demo/``."""
    import shutil
    from pathlib import Path

    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_bin):
        pytest.skip("chromium and chromedriver not installed (make sysdeps)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    out = tmp_path / "demo"
    out.mkdir()
    (out / "live.json").write_text(json.dumps(live_run(tmp_path)))
    report = write_html(out, cfg)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--window-size=1300,1000", f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    try:
        driver.get(report.as_uri())
        images = driver.execute_script("return [...document.images].map(i => [i.alt, i.complete && i.naturalWidth])")
        shots = Path(__file__).resolve().parents[2] / "artifacts" / "demo"
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / "report.png"))
        folded = driver.execute_script("return document.getElementById('live-tables').open")
        driver.find_element("css selector", "a[href='#live-tables']").click()
        unfolded = driver.execute_script("return document.getElementById('live-tables').open")
    finally:
        driver.quit()
    assert set(LIVE_FIGURES) <= {alt for alt, _ in images}
    assert all(width and width > 400 for _, width in images), images
    assert folded is False and unfolded is True


def test_live_plots_missing_are_named(tmp_path, cfg):
    (tmp_path / "live.json").write_text(json.dumps({"minutes": 1, "rows": {"graph_sample": 0}, "harvest": []}))
    page = write_html(tmp_path, cfg).read_text()
    assert "missing: harvest over time" in page and "missing: the timeline of DAG runs and pushes" in page
    assert "missing: graph estimates (the graph_estimation DAG had not run yet: a longer --for)" in page


def test_failed_live_run_is_said_at_the_top(tmp_path, cfg):
    (tmp_path / "live.json").write_text(json.dumps({"failed": "TimeoutError: revisitor not up; see logs"}))
    page = write_html(tmp_path, cfg).read_text()
    assert "<p class='missing'>failed: TimeoutError: revisitor not up; see logs</p>" in page
    assert page.index("failed: TimeoutError") < page.index("id='fue'")


def test_push_watch_sees_the_order_change_of_a_running_process(tmp_path):
    from focuscrawl.cli.demo import PushWatch
    from focuscrawl.core.status_file import write_status

    status = tmp_path / "fue-chooser-hcp-0.9-0.1.json"
    watch = PushWatch(tmp_path, ["fue", "graph"])
    assert watch.loops == ["fue"] and not watch.changed("fue")  # graph follows no push
    write_status(status, {"scores_applied": 0, "top": [["ann", 0.9], ["bob", 0.2]]})
    watch.poll()
    write_status(status, {"scores_applied": 0, "top": [["ann", 0.9], ["bob", 0.3]]})
    watch.poll()
    assert not watch.changed("fue")
    write_status(status, {"scores_applied": 2, "top": [["ann", 0.9], ["bob", 0.3]]})
    watch.poll()
    assert watch.seen["fue"]["process"] == "fue-chooser-hcp-0.9-0.1" and not watch.changed("fue")  # same order
    write_status(status, {"scores_applied": 3, "top": [["bob", 0.8], ["ann", 0.4]]})
    watch.poll()
    assert watch.changed("fue") and watch.seen["fue"]["before"] == [["ann", 0.9], ["bob", 0.3]]
    # every poll is on the timeline the report draws: pushes so far, and whether the order moved
    assert [(t["loop"], t["pushes"], t["order_changed"]) for t in watch.timeline] == [
        ("fue", 0, False), ("fue", 0, True), ("fue", 2, False), ("fue", 3, True)]


def test_demo_duration_and_self_started_runs():
    from focuscrawl.cli.demo import parse_for, succeeded_by_itself

    assert parse_for("10m") == 600 and parse_for("1h") == 3600
    with pytest.raises(ValueError, match="at least '1m'"):
        parse_for("30s")
    with pytest.raises(ValueError, match="duration"):
        parse_for("ten minutes")
    assert succeeded_by_itself({"manual:success": 3, "scheduled:failed": 1}) == 0
    assert succeeded_by_itself({"asset_triggered:success": 2, "scheduled:success": 1}) == 3


def test_a_successful_run_that_skipped_a_task_counts_as_skipped_and_is_asked_once():
    """Airflow lists a run whose Spark job had nothing to do (NOTHING_TO_DO skips its task and the push after
    it) as a success; the demo's count and report must not call that loop's DAG run by itself."""
    from focuscrawl.cli.demo import dag_runs, run_times

    class Client:
        asked: list = []
        runs = {"outlinks_train": [
            {"dag_run_id": "a", "run_type": "asset_triggered", "state": "success"},
            {"dag_run_id": "b", "run_type": "asset_triggered", "state": "success"},
            {"dag_run_id": "c", "run_type": "asset_triggered", "state": "running"}]}
        tasks = {"a": {"quality_outlink_features": "success", "train": "skipped", "score": "skipped"},
                 "b": {"quality_outlink_features": "success", "train": "success", "score": "success"}}

        def dag_runs(self, dag_id):
            return self.runs[dag_id]

        def task_states(self, dag_id, run_id):
            self.asked.append(run_id)
            return self.tasks[run_id]

    client, known = Client(), {}
    assert dag_runs(client, ["outlinks_train"], known) == {
        "outlinks_train": {"asset_triggered:skipped": 1, "asset_triggered:success": 1, "asset_triggered:running": 1}}
    assert [r["state"] for r in run_times(client, ["outlinks_train"], known)] == ["skipped", "success", "running"]
    assert client.asked == ["a", "b"]  # a finished run's tasks are asked once, whatever the polls


# -- slow: the report from short real runs -----------------------------------------------------

TINY = {  # each experiment's smallest run that still draws every series of its figure
    "fue": ["--methods", "RND,HCP,HAC", "--duration", "2h", "--step", "20m", "--pseudo-every", "20m", "--no-progress"],
    "outlinks": ["--pages", "150", "--periods", "7", "--history-size", "3", "--n-estimators", "10"],
    "ephemeral": ["--days", "1", "--warmup-days", "0.25", "--window-hours", "2", "--worlds", "model", "--seeds", "0",
                  "--discovery-days", "0.25"],
    "graph-estimation": ["--graphs", "generated", "--runs", "2", "--fractions", "0.05,0.1", "--sweep-runs", "4",
                         "--label-correlations", "0,1"],
}


@pytest.mark.slow
def test_report_from_short_real_runs(tmp_path, cfg, shared_data):
    assert set(TINY) == set(SECTION_NAMES)
    run_sections(tmp_path, list(SECTION_NAMES), TINY)
    live = live_run(tmp_path)
    (tmp_path / "live.json").write_text(json.dumps(live))
    page = write_html(tmp_path, cfg).read_text()
    assert "missing:" not in page

    figures, tables = figures_and_tables(page)
    wanted = {"harvest_ratio.png", "precision_at_k.png", "dynamic_quality.png",
              "nrmse_generated_copies.png", "nrmse_generated_label.png", *LIVE_FIGURES}
    assert set(figures) == wanted
    for name, data in figures.items():
        assert_drawn_png(name, data)
    assert_live_plots_with_tables_behind_a_link(tmp_path, page)

    live_tables = page[page.index("id='live'"):page.index("id='fue'")].count("<table")
    assert len(tables) == sum(len(s.tables) for s in SECTIONS) + live_tables
    for table in tables:
        assert len(table) > 0, table.columns.tolist()
    fue = pd.read_csv(tmp_path / "fue" / "fue_intervals.csv")
    pooled = fue[(fue.scope == "pooled") & (fue.measure == "reference verdict")].set_index("method")
    assert set(pooled.index) == {"RND", "HCP", "HAC"}
    assert pooled.loc["RND", "ratio_to_RND"] == 1.0
    assert (pooled.ratio_lo <= pooled.ratio_to_RND).all() and (pooled.ratio_to_RND <= pooled.ratio_hi).all()
    eph = pd.read_csv(tmp_path / "ephemeral" / "overall_quality.csv")
    assert eph.loc[eph.scheduler == "ORACLE", "share_of_oracle"].item() == 1.0


def test_a_live_run_that_ends_early_reports_the_minutes_it_ran_not_the_limit(tmp_path, cfg, monkeypatch):
    """`make demo` on a fresh clone (7edd1f3) ended after 3.1 of its 10 minutes, every DAG run by itself; the report
    still said "10.0 minutes". Over fakes of the platform, Airflow and the pushes followed."""
    import focuscrawl.cli.demo as demo

    class Platform:
        def __init__(self, *_, **__):
            pass

        def dag_ids(self):
            return ["a_dag"]

        def start(self):
            pass

        def stop(self):
            pass

    class Service:
        def __init__(self, _cfg):
            pass

        def client(self):
            return None

    class Watch:
        def __init__(self, _dir, loops):
            self.loops, self.seen, self.timeline = loops, {loop: {"pushes": 1} for loop in loops}, []

        def poll(self):
            return {}

        def changed(self, _loop):
            return True

    monkeypatch.setattr("focuscrawl.platform.Platform", Platform)
    monkeypatch.setattr("focuscrawl.services.airflow.AirflowService", Service)
    monkeypatch.setattr(demo, "PushWatch", Watch)
    monkeypatch.setattr(demo, "dag_runs", lambda *_: {"a_dag": {"scheduled:success": 1}})
    monkeypatch.setattr(demo, "run_times", lambda *_: [])
    monkeypatch.setattr(demo, "live_summary", lambda *_, **__: {})
    live = demo.run_live(cfg, cfg.home / "projects" / "world.toml", seconds=600, keep_services=True)
    assert live["minutes"] == 0.0 and live["order_changed"] == {loop: True for loop in live["followers"]}
