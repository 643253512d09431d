"""``train_page_model`` of ``projects/world.toml`` against the world served over HTTP: the example pages come
through the real fetch layer (robots.txt first, each page once, the project's User-Agent)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from focuscrawl.config import settings
from focuscrawl.project.loading import load_project
from focuscrawl.relevance.train import store_for, train_page_model
from focuscrawl.world.server import WorldServer
from focuscrawl.world.web import build_web
from tests.world.conftest import START, small_world

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_world_toml_page_focus_trains_through_the_fetch_layer(shared_data, cfg, tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    world = small_world(web=False, rate_limit=600)
    world.web = build_web(0, START, shared_data, cfg.var_dir)  # the Wikispeedia web, a small generated population
    project = load_project(ROOT / "projects" / "world.toml")
    with WorldServer(world, port=cfg.world_port):
        trained = train_page_model(project, settings(), log=lambda _: None)
        log = world.access_log.since(0)["entries"]
    focus = project.profile.pages
    example_paths = [urlsplit(u).path for u in focus.positives + focus.negatives]
    paths = [e["path"] for e in log]
    assert sorted(p for p in paths if "robots.txt" not in p) == sorted(example_paths)  # each page once
    assert paths[0].endswith("/robots.txt")  # robots.txt before the first page of its site
    assert {e["client"].split("|", 1)[-1] for e in log} == {project.sites[0].user_agent}
    assert trained.version == 1 and trained.promoted and trained.path == store_for(project, settings()).root / "TFIDF-LR" / "v1"
    figures = json.loads((trained.path / "evaluation.json").read_text())
    assert figures["pages"] + figures["train_pages"] == len(example_paths)
    assert figures["auc"]["low"] <= figures["auc"]["value"] <= figures["auc"]["high"]
    split = json.loads((trained.path / "split.json").read_text())
    assert not {k for k, *_ in split["train"]} & {k for k, *_ in split["held_out"]}
