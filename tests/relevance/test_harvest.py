"""Harvest everywhere: per loop, pages fetched, relevant ones and the harvest ratio over time, from the
processes' counters (focuscrawl status) and from the lake (focuscrawl status, report harvest, the demo report)."""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timedelta, timezone

import pandas as pd
import pyarrow as pa
import pytest

from focuscrawl.config import settings
from focuscrawl.core.status_file import write_status
from focuscrawl.relevance.harvest import LOOPS, harvest_series, judged, read_items
from focuscrawl.stream.metrics import Metrics

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def var(tmp_path, monkeypatch):
    folder = tmp_path / "var"
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(folder))
    return folder


def _append(cfg, spec, rows: list[dict]) -> None:
    from deltalake import write_deltalake

    from focuscrawl.lake import ensure_table

    schema = spec.arrow_schema()
    blank = {f.name: None if f.nullable else ("" if pa.types.is_string(f.type) else 0) for f in schema}
    ensure_table(cfg.table_path(spec.name), spec)
    write_deltalake(cfg.table_path(spec.name), pa.Table.from_pylist([blank | r for r in rows], schema=schema),
                    mode="append")


def _lake(cfg) -> None:
    """source_pages: 3 pages in the first 10 minutes (2 relevant), 2 in the next (0), one unscored;
    graph_sample: one crawl, vertex a drawn twice (relevant, counted once), b not relevant, c unscored."""
    from focuscrawl.ephemeral.tables import SOURCE_PAGES
    from focuscrawl.graph.tables import GRAPH_SAMPLE

    pages = [(1, 0.9), (2, 0.7), (3, 0.2), (12, 0.1), (14, 0.4), (15, None)]
    _append(cfg, SOURCE_PAGES, [{"page_url": f"/p{m}", "source_url": "/s", "host": "h", "fetched_at": T0 + timedelta(minutes=m),
                                 "relevance": r} for m, r in pages])
    draws = [("a", True, 0.8), ("b", False, 0.1), ("a", True, 0.8), ("c", None, None)]
    _append(cfg, GRAPH_SAMPLE, [{"crawl_id": "live-RW-r00000", "draw": i, "vertex_id": v, "weight": 1.0,
                                 "sampled_at": T0 + timedelta(minutes=5), "relevant": rel, "relevance": score}
                                for i, (v, rel, score) in enumerate(draws)])


def test_the_series_per_bin_and_cumulative():
    items = judged(pd.DataFrame({"fetched_at": [T0 + timedelta(minutes=m) for m in (1, 2, 3, 12, 14, 25)],
                                 "relevance": [0.9, 0.7, 0.2, 0.1, None, 0.5]}), LOOPS["sources"], threshold=0.5)
    assert items.relevant.tolist() == [True, True, False, False, True]  # unscored left out; 0.5 is relevant
    series = harvest_series({"sources": items, "graph": items.iloc[:0]}, "10min")
    assert series.loop.unique().tolist() == ["sources"]  # a loop with nothing scored has no series
    assert series.fetched.tolist() == [3, 1, 1] and series.relevant.tolist() == [2, 0, 1]
    assert series.harvest.round(3).tolist() == [0.667, 0.0, 1.0]
    assert series.cumulative_harvest.round(3).tolist() == [0.667, 0.5, 0.6]
    users = judged(pd.DataFrame({"sim_epoch": [T0.timestamp(), T0.timestamp() + 60], "relevant": [True, False]}),
                   LOOPS["fue"], threshold=0.9)
    assert users["at"].tolist() == [pd.Timestamp(T0), pd.Timestamp(T0 + timedelta(minutes=1))]


def test_read_from_the_lake_and_the_report_draws_it(var, tmp_path, capsys):
    from focuscrawl.reports.harvest import main
    from tests.demo.test_demo_report import assert_drawn_png

    cfg = settings()
    _lake(cfg)
    items = read_items(cfg, 0.5)
    assert set(items) == {"sources", "graph"}  # no table for the other loops
    assert len(items["graph"]) == 2 and items["graph"].relevant.sum() == 1  # a vertex once a crawl; c unscored
    out = tmp_path / "report"
    assert main(["--out", str(out), "--bin", "10min"]) == 0
    series = pd.read_csv(out / "harvest.csv")
    src = series[series.loop == "sources"]
    assert src.fetched.tolist() == [3, 2] and src.relevant.tolist() == [2, 0]
    assert "harvest sources: 2/5 = 0.400" in capsys.readouterr().out
    assert_drawn_png("harvest.png", (out / "harvest.png").read_bytes())
    with pytest.raises(SystemExit):
        main(["--bin", "every ten minutes"])


def test_status_shows_fetched_relevant_and_harvest_per_loop_and_over_time(var):
    from focuscrawl.platform import status as status_mod

    cfg = settings()
    _lake(cfg)
    metrics = Metrics("source-crawler")
    count = metrics.page_scored("sources")
    for relevant in (True, True, False, False, False):
        count(relevant)
    write_status(var / "run" / "project.json", {"name": "t", "profile": {"pages": {"threshold": 0.5}},
                                               "loops": {"sources": {"enabled": True}, "graph": {"enabled": True}}})
    write_status(var / "status" / "source-crawler.json", {"recrawls": 12, "pages": 6, "metrics": metrics.snapshot()})
    doc = status_mod.collect(cfg, kafka=False, airflow=False)
    src = doc["loops"]["sources"]
    assert (src["fetched"], src["scored"], src["relevant_fetched"], src["harvest"]) == (6, 5.0, 2.0, 0.4)
    assert src["over_time"]["bins"] == [["2026-12-02T10:00+00:00", 3, 2], ["2026-12-02T10:10+00:00", 2, 0]]
    assert doc["loops"]["graph"]["over_time"]["cumulative"] == 0.5
    text = status_mod.render(json.loads(json.dumps(doc)))
    assert "relevant fetched 2" in text and "harvest 0.4" in text
    assert "harvest per 10min: 10:00 2/3=0.67  10:10 0/2=0.00  (since the start 0.400)" in text


def test_the_demo_report_draws_the_live_harvest(tmp_path, var):
    from focuscrawl.reports.demo import HARVEST_KEY, write_html
    from tests.demo.test_demo_report import assert_drawn_png

    cfg = settings()
    _lake(cfg)
    series = harvest_series(read_items(cfg, 0.5), "1min").to_dict("records")
    (tmp_path / "live.json").write_text(json.dumps({"minutes": 10, HARVEST_KEY: series}, default=str))
    page = write_html(tmp_path, cfg).read_text()
    images = re.findall(r"<img alt='([^']+)' src='data:image/png;base64,([^']+)'>", page)
    assert [name for name, _ in images][0] == "harvest.png"
    assert_drawn_png("harvest.png", base64.b64decode(images[0][1]))
    assert "per loop: pages fetched and scored, relevant ones, harvest ratio" in page
    (tmp_path / "live.json").write_text(json.dumps({"minutes": 10, HARVEST_KEY: []}))
    assert "missing: harvest over time" in write_html(tmp_path, cfg).read_text()
