"""The demo's HTML report (issue 9, point 5; issue 16, point 7): the live run's tables, missing parts
named, and a report built from short real runs of the four experiments whose figures and tables are all there."""

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


def test_demo_duration_and_self_started_runs():
    from focuscrawl.cli.demo import parse_for, succeeded_by_itself

    assert parse_for("10m") == 600 and parse_for("1h") == 3600
    with pytest.raises(ValueError, match="at least '1m'"):
        parse_for("30s")
    with pytest.raises(ValueError, match="duration"):
        parse_for("ten minutes")
    assert succeeded_by_itself({"manual:success": 3, "scheduled:failed": 1}) == 0
    assert succeeded_by_itself({"asset_triggered:success": 2, "scheduled:success": 1}) == 3


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
    page = write_html(tmp_path, cfg).read_text()
    assert "missing:" not in page

    figures, tables = figures_and_tables(page)
    wanted = {"harvest_ratio.png", "precision_at_k.png", "dynamic_quality.png",
              "nrmse_generated_copies.png", "nrmse_generated_label.png"}
    assert set(figures) == wanted
    for name, data in figures.items():
        assert_drawn_png(name, data)

    assert len(tables) == sum(len(s.tables) for s in SECTIONS)
    for table in tables:
        assert len(table) > 0, table.columns.tolist()
    fue = pd.read_csv(tmp_path / "fue" / "fue_intervals.csv")
    pooled = fue[(fue.scope == "pooled") & (fue.measure == "reference verdict")].set_index("method")
    assert set(pooled.index) == {"RND", "HCP", "HAC"}
    assert pooled.loc["RND", "ratio_to_RND"] == 1.0
    assert (pooled.ratio_lo <= pooled.ratio_to_RND).all() and (pooled.ratio_to_RND <= pooled.ratio_hi).all()
    eph = pd.read_csv(tmp_path / "ephemeral" / "overall_quality.csv")
    assert eph.loc[eph.scheduler == "ORACLE", "share_of_oracle"].item() == 1.0
