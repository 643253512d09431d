"""The focuscrawl view's page and plots (``focuscrawl.reports.live_view``) from a platform's status files and lake
(``tests/live_view_data.py``), and from a platform that is not there at all; its routes run their auth first."""

from __future__ import annotations

import pytest

import live_view_data
from focuscrawl.config import settings
from focuscrawl.reports import live_view

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    return settings()


def test_each_loop_with_its_processes_pushes_model_versions_harvest_and_errors(cfg):
    live_view_data.write(cfg)
    doc = live_view.document(cfg, kafka=False)
    sources = doc["view"]["sources"]
    assert [p["name"] for p in sources["processes"]] == ["source-crawler", "consumer-source_pages"]
    assert sources["groups"] == ["focuscrawl-source_pages"]
    # newest version first, the recrawl no push chose last
    assert sources["chosen_by"] == [{"model": "source_schedule", "version": 2, "fetches": 1},
                                    {"model": "source_schedule", "version": 1, "fetches": 2},
                                    {"model": None, "version": None, "fetches": 1}]
    assert doc["loops"]["sources"]["schedules_applied"] == live_view_data.PUSHES_APPLIED
    page = live_view.page(doc)
    for loop in live_view.LOOPS:
        assert f"<section class='loop' id='loop-{loop}'>" in page
    assert f"pushes applied by the running process: <b>{live_view_data.PUSHES_APPLIED}</b>" in page
    assert "<img class='harvest' src='harvest/sources.png'" in page
    assert "harvest/fue.png" not in page and "no scored page landed yet" in page  # fue landed nothing
    assert "refused" in page and "focuscrawl logs source-crawler" in page  # the error with its fix
    assert "consumer lag not read" in page  # Kafka was not asked
    png = live_view.harvest_png(cfg, "sources")
    assert png.startswith(PNG) and len(png) > 10_000
    assert live_view.harvest_png(cfg, "fue") is None


def test_nothing_running_names_what_is_missing(cfg):
    doc = live_view.document(cfg)  # no supervisor, no status file, no table; Kafka and the rest probed
    page = live_view.page(doc)
    assert "supervisor not running" in page
    for loop in live_view.LOOPS:
        assert f"id='loop-{loop}'" in page
    assert page.count("no process of this loop is running") == len(live_view.LOOPS)
    assert "consumer lag not read" in page
    assert "down" in page  # the services are probed and shown down with their fix


def test_every_route_runs_the_auth_dependency_first(cfg):
    from fastapi import Header, HTTPException
    from fastapi.testclient import TestClient

    live_view_data.write(cfg)
    seen = []

    def auth(authorization: str | None = Header(None)):
        seen.append(authorization)
        if authorization != "Bearer ok":
            raise HTTPException(401, "Not authenticated")

    client = TestClient(live_view.app(auth))
    for route in ("/", "/status.json", "/harvest/sources.png", "/harvest/nope.png"):
        assert client.get(route).status_code == 401, route
    assert client.get("/harvest/sources.png", headers={"Authorization": "Bearer ok"}).content.startswith(PNG)
    assert client.get("/harvest/fue.png", headers={"Authorization": "Bearer ok"}).status_code == 404
    assert client.get("/harvest/nope.png", headers={"Authorization": "Bearer ok"}).status_code == 404
    assert client.get("/openapi.json").status_code == 404  # no schema served beside the view
