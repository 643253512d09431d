"""The demo's HTML report (issue 9, point 5): missing parts named, and a
report built from short real runs of the four experiments whose figures and tables are all there."""

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
    assert figures == {}
    for name in SECTION_NAMES:
        assert f"missing: {name} was not run (focuscrawl report demo --only {name})" in page
    assert "Not run here: <code>make demo</code>" in page
    assert f"{cfg.catalog_db}.user_priorities" in page and cfg.airflow_url in page


def test_loop_numbers_and_priorities_become_tables(tmp_path, cfg):
    (tmp_path / "loop.json").write_text(json.dumps({
        "posts": 125, "rows": 125, "pick_before": "alice", "pick_after": "bob", "run_id": "manual__1",
        "top user priorities pushed (user_priorities table)": [{"author": "bob", "priority": 1.0},
                                                               {"author": "alice", "priority": 0.5}]}))
    _, tables = figures_and_tables(write_html(tmp_path, cfg).read_text())
    numbers = dict(zip(tables[0].what, tables[0].value))
    assert numbers["pick_after"] == "bob" and str(numbers["posts"]) == "125"
    assert tables[1].author.tolist() == ["bob", "alice"]


def test_failed_loop_is_said_at_the_top(tmp_path, cfg):
    (tmp_path / "loop.json").write_text(json.dumps({"failed": "thin_loop run r1 ended failed; open the UI"}))
    page = write_html(tmp_path, cfg).read_text()
    assert "<p class='missing'>failed: thin_loop run r1 ended failed; open the UI</p>" in page
    assert page.index("failed: thin_loop") < page.index("id='fue'")


# -- slow: the report from short real runs -----------------------------------------------------

TINY = {  # each experiment's smallest run that still draws every series of its figure
    "fue": ["--methods", "RND,HCP,HAC", "--duration", "2h", "--step", "20m", "--no-progress"],
    "outlinks": ["--pages", "150", "--periods", "7", "--history-size", "3", "--n-estimators", "10"],
    "ephemeral": ["--days", "1", "--warmup-days", "0.25", "--window-hours", "2"],
    "graph-estimation": ["--graphs", "generated", "--runs", "2", "--fractions", "0.05,0.1"],
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
    fue = pd.read_csv(tmp_path / "fue" / "fue_table.csv").set_index("method")
    assert set(fue.index) == {"RND", "HCP", "HAC"}
    assert fue.loc["RND", "ratio_to_RND_smoothed"] == 1.0
    assert fue.ratio_to_RND_smoothed.notna().all()
    eph = pd.read_csv(tmp_path / "ephemeral" / "overall_quality.csv")
    assert eph.loc[eph.scheduler == "ORACLE", "share_of_oracle"].item() == 1.0
