"""The focuscrawl view's page and plots (``focuscrawl.reports.live_view``) from a platform's status files and lake
(``tests/live_view_data.py``), and from a platform that is not there at all; its routes run their auth first."""

from __future__ import annotations

import pytest

import live_view_data
from focuscrawl import control
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


def test_an_unreadable_lineage_table_is_named_and_the_rest_shown(cfg, monkeypatch):
    live_view_data.write(cfg)

    def broken(cfg, loop):
        raise OSError(f"{loop}: _delta_log/00000000000000000003.json: No such file")

    monkeypatch.setattr(live_view, "chosen_by", broken)
    page = live_view.page(live_view.document(cfg, kafka=False))
    assert "what chose its fetches not readable from source_recrawls" in page
    assert "OSError: sources: _delta_log/00000000000000000003.json" in page
    assert f"pushes applied by the running process: <b>{live_view_data.PUSHES_APPLIED}</b>" in page


def test_nothing_running_names_what_is_missing(cfg, monkeypatch):
    # ports of their own: a session's broker or Airflow (the suite's fixtures) must not be the "nothing" probed
    monkeypatch.setenv("FOCUSCRAWL_PORT_OFFSET", "40000")
    cfg = settings()
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

    client = TestClient(live_view.app(auth, lambda: None))
    for route in ("/", "/status.json", "/harvest/sources.png", "/harvest/nope.png"):
        assert client.get(route).status_code == 401, route
    assert client.post("/control/pause", data={"loop": "revisits"}).status_code == 401
    assert client.get("/harvest/sources.png", headers={"Authorization": "Bearer ok"}).content.startswith(PNG)
    assert client.get("/harvest/fue.png", headers={"Authorization": "Bearer ok"}).status_code == 404
    assert client.get("/harvest/nope.png", headers={"Authorization": "Bearer ok"}).status_code == 404
    assert client.get("/openapi.json").status_code == 404  # no schema served beside the view


# -- steering from the view -------------------------------------------------------------------

ACTIONS = {"pause": {"loop": "revisits"}, "resume": {"loop": "revisits"},
           "budget": {"loop": "revisits", "knob": "fetches_per_second", "value": "0.5"},
           "seeds": {"loop": "revisits", "site": "w", "urls": "https://w.example/b\nhttps://w.example/c"}}


@pytest.fixture
def steering(cfg, tmp_path, monkeypatch):
    """:func:`steering_client`; ``sent`` is what reached :func:`focuscrawl.control.send` (the seam)."""
    client = live_view_data.steering_client(cfg, tmp_path)
    client.sent = []
    monkeypatch.setattr(control, "send", lambda bootstrap, commands, by=None: client.sent.append((list(commands), by)))
    return client


as_user = live_view_data.as_user


def test_a_user_without_the_admin_role_sees_no_control_and_each_action_is_refused(steering):
    assert "class='steer'" not in steering.get("/", headers=as_user("vic")).text
    for action, form in ACTIONS.items():
        response = steering.post(f"/control/{action}", data=form, headers=as_user("vic"))
        assert response.status_code == 403, action
        assert "Admin role" in response.json()["detail"]
    assert steering.get("/control/pause", headers=as_user("ada")).status_code == 405  # POST only
    assert steering.sent == []


def test_an_admins_actions_go_through_the_command_lines_path_recorded_under_their_name(steering):
    page = steering.get("/", headers=as_user("ada")).text
    assert "class='steer'" in page and "action='control/pause'" in page and "action='control/seeds'" in page
    for action, form in ACTIONS.items():
        response = steering.post(f"/control/{action}", data=form, headers=as_user("ada"), follow_redirects=False)
        assert response.status_code == 303, (action, response.text)
        assert response.headers["location"].startswith("../?sent=")
    assert steering.sent == [
        ([control.Command("pause", "revisits")], "ada"), ([control.Command("resume", "revisits")], "ada"),
        ([control.Command("budget", "revisits", "fetches_per_second", 0.5)], "ada"),
        ([control.Command("seed", "revisits", value="https://w.example/b"),
          control.Command("seed", "revisits", value="https://w.example/c")], "ada")]
    assert "sent: pause revisits" in steering.get("/?sent=pause+revisits", headers=as_user("ada")).text


@pytest.mark.parametrize("action, form, message", [
    ("pause", {"loop": "crawl"}, "unknown loop &#x27;crawl&#x27;; one of fue, sources, revisits, graph"),
    ("budget", {"loop": "revisits", "knob": "fetches_per_second", "value": "-1"}, "must be a number &gt; 0"),
    ("budget", {"loop": "revisits", "knob": "fetches_per_second", "value": "fast"}, "must be a number &gt; 0"),
    ("budget", {"loop": "revisits", "knob": "users_per_hour", "value": "3"}, "its budget: fetches_per_second"),
    ("seeds", {"site": "w", "urls": "ftp://w.example/b"},
     "a seed is an http(s) URL, got &#x27;ftp://w.example/b&#x27;"),
    ("seeds", {"site": "w", "urls": "https://v.example/b"}, "not on site w"),
    ("pause", {"loop": "sources"}, "loop sources is not enabled in project t"),
])
def test_bad_input_is_refused_with_what_to_do_and_nothing_is_sent(steering, action, form, message):
    response = steering.post(f"/control/{action}", data=form, headers=as_user("ada"))
    assert response.status_code == 400 and message in response.text, response.text
    assert steering.sent == []


def test_a_form_posted_from_another_site_is_refused(steering):
    for origin in ({"Origin": "https://evil.example"}, {"Referer": "https://evil.example/page"}):
        response = steering.post("/control/pause", data=ACTIONS["pause"], headers=as_user("ada") | origin)
        assert response.status_code == 403
    same = steering.post("/control/pause", data=ACTIONS["pause"], follow_redirects=False,
                         headers=as_user("ada") | {"Origin": "http://airflow.test"})
    assert same.status_code == 303
    assert len(steering.sent) == 1


@pytest.mark.parametrize("role, steers", [("viewer", False), ("user", False), ("op", False), ("admin", True),
                                          (None, False)])
def test_only_the_airflow_admin_role_may_steer(role, steers, monkeypatch):
    """The plugin's ``admin`` dependency under the Simple auth manager (what ``focuscrawl services up`` runs):
    configuration writes (``is_authorized_configuration(PUT)``) are granted from Op up, steering to Admin only."""
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from plugins import focuscrawl_view

    manager = SimpleAuthManager()
    monkeypatch.setattr(focuscrawl_view, "get_auth_manager", lambda: manager)
    user = SimpleAuthManagerUser(username="someone", role=role)
    assert manager.is_authorized_configuration(method="PUT", user=user) is (role in ("op", "admin"))
    assert focuscrawl_view.admin(None, user) == ("someone" if steers else None)
