"""Every page the revisitor fetches is scored on the live path by the champion page model, landed in Delta
and counted as harvest; the plan hands the model store to the fetching process."""

from __future__ import annotations

from pathlib import Path

import pytest

from focuscrawl.config import settings
from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.outlinks.revisit import PageRevisitor, SnapshotWriter
from focuscrawl.project.loading import load_project
from focuscrawl.relevance.score import PageScorer
from focuscrawl.relevance.train import store_for, train_page_model
from helpers import CHILD_TIMEOUT
from tests.relevance.test_page_focus import HISTORY, OTHER, PROJECT, html

GERMAN = ("Die Schlacht wurde im Krieg zwischen dem Königreich und dem Kaiserreich geschlagen; das Heer des Königs "
          "belagerte die Burg, und der Vertrag, der den Krieg beendete, gab dem Herzog sein Land zurück.")

ROOT = Path(__file__).resolve().parents[2]


def local_page_focus(folder: Path):
    """A project whose page focus is local files only, written into ``folder``."""
    for i in range(4):
        (folder / f"h{i}.txt").write_text(HISTORY[i % 3].format(f"file {i}"))
        (folder / f"o{i}.txt").write_text(OTHER[i % 3].format(f"file {i}"))
    text = (PROJECT.replace('positives = ["${FC_SITE}/pages/h0.html", "${FC_SITE}/pages/h1.html", "${FC_SITE}/pages/h2.html",\n'
                            '             "${FC_SITE}/pages/h3.html", "history"]', 'positives = ["h0.txt", "h1.txt", "h2.txt", "h3.txt"]')
            .replace('negatives = ["${FC_SITE}/pages/o0.html", "${FC_SITE}/pages/o1.html", "cooking.txt"]\nexamples = "pages.jsonl"',
                     'negatives = ["o0.txt", "o1.txt", "o2.txt", "o3.txt"]')
            .replace("${FC_SITE}", "https://example.org"))
    (folder / "focuscrawl.toml").write_text(text)
    return load_project(folder / "focuscrawl.toml")


@pytest.fixture
def trained(tmp_path, monkeypatch):
    """A local page focus (files only) trained once into a tmp var folder: ``(project, cfg)``."""
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    project = local_page_focus(tmp_path)
    cfg = settings()
    return project, cfg


def test_no_model_no_score_then_the_champion_and_its_successor(trained):
    project, cfg = trained
    scorer = PageScorer(store_for(project, cfg).root, "tfidf-lr", ["en"], check_every=0)
    assert scorer.score(HISTORY[0].format("x"), "en") == (None, None)  # nothing made up before training
    train_page_model(project, cfg)
    score, name = scorer.score(HISTORY[0].format("live"), "en")
    assert name == "TFIDF-LR/v1" and 0.5 < score <= 1.0
    other, _ = scorer.score(OTHER[1].format("live"), "en")
    assert 0.0 <= other < score
    assert scorer.score(GERMAN, "de") == (0.0, "TFIDF-LR/v1")  # outside the project's languages
    train_page_model(project, cfg)
    assert scorer.score(HISTORY[0].format("live"), "en")[1] == "TFIDF-LR/v2"  # a promoted successor is picked up


def test_the_revisitor_scores_every_page_it_fetches_and_lands_the_score(trained, tmp_path):
    from deltalake import DeltaTable

    from helpers import HttpSite

    project, cfg = trained
    train_page_model(project, cfg)
    routes = {"/robots.txt": (200, {}, b"User-agent: *\nAllow: /\n"),
              "/h.html": (200, {"Content-Type": "text/html"}, html(HISTORY[2].format("revisited"))),
              "/o.html": (200, {"Content-Type": "text/html"}, html(OTHER[2].format("revisited"))),
              "/de.html": (200, {"Content-Type": "text/html"}, html(GERMAN))}
    with HttpSite(routes) as site:
        fetcher = Fetcher("focuscrawl-test/1 (+mailto:ops@example.org)", guard=AddressGuard([f"127.0.0.1:{site.port}"]),
                          politeness=HostPoliteness(min_delay=0.0))
        writer = SnapshotWriter(str(tmp_path / "page_snapshots"))
        revisitor = PageRevisitor(fetcher, writer, clock=lambda: 10.0, interval=100.0,
                                  relevance=PageScorer(store_for(project, cfg).root, "TFIDF-LR", ["en"]))
        revisitor.add(f"http://127.0.0.1:{site.port}/{p}.html" for p in ("h", "o", "de"))
        while revisitor.revisit_next() is not None:
            pass
        fetcher.close()
    assert writer.flush() == 3
    rows = {r["url"].rsplit("/", 1)[1]: r for r in DeltaTable(str(tmp_path / "page_snapshots")).to_pyarrow_table(
        columns=["url", "language", "relevance", "relevance_model"]).to_pylist()}
    assert rows["h.html"]["relevance"] > 0.5 > rows["o.html"]["relevance"]
    assert rows["de.html"] == {"url": rows["de.html"]["url"], "language": "de", "relevance": 0.0,
                               "relevance_model": "TFIDF-LR/v1"}
    status = revisitor.status()
    assert status["relevant"] == 1 and status["harvest"] == pytest.approx(1 / 3)


def test_the_plan_hands_the_page_model_store_to_the_revisitor(cfg):
    from focuscrawl.platform.plan import Models, plan

    project = load_project(ROOT / "projects" / "world.toml")
    specs = plan(project, cfg, models=Models(Path("/m/reference.joblib"), Path("/m/candidate.joblib")),
                 airflow=False)
    revisitor = next(s for s in specs if s.name == "revisitor")
    args = list(revisitor.command)
    store = args[args.index("--relevance-store") + 1]
    assert store == str(Path(cfg.var_dir) / "models" / "world" / "pages")
    assert args[args.index("--relevance-model") + 1] == "TFIDF-LR" and args[args.index("--languages") + 1] == "en"
    # and the script's parser takes them
    import subprocess
    import sys

    helptext = subprocess.run([sys.executable, str(ROOT / "streaming" / "revisitor.py"), "--help"], capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT, check=True).stdout
    assert all(flag in helptext for flag in ("--relevance-store", "--relevance-model", "--relevance-threshold", "--languages"))


def test_the_source_crawler_scores_each_new_page_and_its_sink_lands_the_rows(trained, tmp_path):
    import json as jsonlib

    from deltalake import DeltaTable

    from focuscrawl.lake.delta_sink import DeltaSink, StreamRecord
    from focuscrawl.ephemeral.crawler import SourceCrawler
    from focuscrawl.ephemeral.sources import discover_sources
    from focuscrawl.stream.sinks import sink
    from focuscrawl.world import build_world
    from tests.ephemeral.world_pages import BASE, world_fetch

    project, cfg = trained
    train_page_model(project, cfg)
    world = build_world(4, data_dir=None, users=500, cache_dir=tmp_path / "world", paused=True)
    world.clock.advance(6 * 3600)
    fetch = world_fetch(world)
    sources = [s for s in discover_sources(fetch, f"{BASE}/site/{world.web.hosts[1]}/")[0] if s.kind != "hub"]
    rows = []
    scorer = PageScorer(store_for(project, cfg).root, "TFIDF-LR", ["en"], threshold=0.5)
    crawler = SourceCrawler(sources, fetch, lambda table, key, row: rows.append((table, key, row)), world.clock.now,
                            0.05, default_interval_s=1800.0, relevance=scorer)
    for _ in range(120):
        crawler.step()
        world.clock.advance(20.0)
    pages = [row for table, _, row in rows if table == "source_pages"]
    assert pages and len(pages) == crawler.counts["pages"]
    assert all(0.0 <= r["relevance"] <= 1.0 and r["relevance_model"] == "TFIDF-LR/v1" for r in pages)
    assert crawler.counts["relevant"] == sum(r["relevance"] >= 0.5 for r in pages)

    spec = sink("source_pages")
    assert spec.topic == "focuscrawl.source_pages" and spec.table.name == "source_pages"
    delta = DeltaSink(str(tmp_path / "source_pages"), spec.table, "source_pages-to-delta",
                      dead_letter_uri=str(tmp_path / "dead_letter"), convert=spec.convert)
    result = delta.write([StreamRecord(spec.topic, 0, n, jsonlib.dumps(r).encode(), b"h") for n, r in enumerate(pages)])
    assert result.written == len(pages) and result.dead_lettered == 0
    landed = DeltaTable(str(tmp_path / "source_pages")).to_pyarrow_table(columns=["page_url", "relevance"]).to_pylist()
    assert sorted((r["page_url"], r["relevance"]) for r in landed) == sorted((r["page_url"], r["relevance"]) for r in pages)
