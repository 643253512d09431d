"""Steering commands (focuscrawl.control): what each command sets, what a loop's control state makes of the topic's
records, what the command line refuses and says, and how `focuscrawl status` shows a paused loop."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from focuscrawl.control import Command, ControlError, ControlState
from focuscrawl.platform.commands import steering_commands


def test_each_command_sets_one_key_of_the_control_topic():
    assert (Command("pause", "revisits").key, Command("pause", "revisits").state()) == ("paused/revisits", {"paused": True})
    assert (Command("resume", "revisits").key, Command("resume", "revisits").state()) == ("paused/revisits", {"paused": False})
    budget = Command("budget", "fue", "users_per_hour", 120.0)
    assert (budget.key, budget.state()) == ("budget/fue/users_per_hour", {"value": 120.0})
    seed = Command("seed", "revisits", value="http://a.example/p")
    assert (seed.key, seed.state()) == ("seed/revisits/http://a.example/p", {"value": "http://a.example/p"})
    row = budget.audit_row("ops", 5)
    assert row == {"at_ms": 5, "by": "ops", "action": "budget", "loop": "fue", "knob": "users_per_hour",
                   "value": "120.0", "control_key": "budget/fue/users_per_hour"}


@pytest.mark.parametrize("command, message", [
    (dict(action="stop", loop="fue"), "unknown action 'stop'"),
    (dict(action="pause", loop="crawl"), "unknown loop 'crawl'; one of fue, sources, revisits, graph"),
    (dict(action="budget", loop="fue", knob="fetches_per_second", value=1.0), "its budget: users_per_hour"),
    (dict(action="budget", loop="sources", knob="fetches_per_second", value=0.0), "must be a number > 0"),
    (dict(action="budget", loop="sources", knob="fetches_per_second", value=math.nan), "must be a number > 0"),
    (dict(action="seed", loop="sources", value="http://a.example/"), "add them to \\[loops.sources\\] seeds"),
    (dict(action="seed", loop="revisits", value="a.example/p"), "an http\\(s\\) URL"),
])
def test_a_command_no_loop_can_take_is_refused_naming_the_fix(command, message):
    with pytest.raises(ControlError, match=message):
        Command(**command)


def test_a_loops_state_follows_the_topic_and_ignores_the_other_loops():
    state = ControlState("revisits", {"fetches_per_second": 2.0})
    changes = []
    state.on_change = lambda: changes.append(state.paused)
    assert (state.paused, state.budget("fetches_per_second")) == (False, 2.0)
    state.apply("paused/revisits", {"paused": True})
    state.apply("paused/sources", {"paused": False})  # another loop's: skipped
    state.apply("budget/revisits/fetches_per_second", {"value": 0.5})
    assert (state.paused, state.budget("fetches_per_second")) == (True, 0.5)
    state.apply("budget/revisits/fetches_per_second", None)  # the key deleted: the project file's again
    state.apply("paused/revisits", None)
    assert (state.paused, state.budget("fetches_per_second")) == (False, 2.0)
    assert changes == [True, True, True, False]
    state.apply("seed/revisits/http://a.example/p", {"value": "http://a.example/p"})
    state.apply("seed/revisits/http://a.example/p", {"value": "http://a.example/p"})  # read again after a restart
    state.apply("seed/revisits/http://a.example/q", {"value": "http://a.example/q"})
    assert state.new_seeds() == ["http://a.example/p", "http://a.example/q"]
    assert state.new_seeds() == []
    state.apply("budget/revisits/users_per_hour", {"value": 3})  # not a budget of this loop
    assert state.status() == {"loop": "revisits", "paused": False, "budgets": {"fetches_per_second": 2.0},
                              "seeds_added": 2, "commands_applied": 6}


def _project(tmp_path):
    from focuscrawl.project.loading import parse_project

    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    raw = {"name": "t", "target": "sites", "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
           "sites": [{"name": "w", "base_url": "https://w.example", "user_agent": "t/1 (+mailto:ops@example.org)"},
                     {"name": "v", "base_url": "https://v.example", "user_agent": "t/1 (+mailto:ops@example.org)"}],
           "loops": {"fue": {"enabled": False}, "sources": {"enabled": False},
                     "revisits": {"site": "w", "seeds": ["https://w.example/a"]}}}
    return parse_project(raw, base_dir=tmp_path)


def test_the_command_line_checks_loop_site_and_seeds_against_the_active_project(tmp_path):
    project = _project(tmp_path)
    ns = argparse.Namespace
    assert steering_commands(ns(command="pause", loop="revisits"), project) == [Command("pause", "revisits")]
    assert steering_commands(ns(command="budget", loop="revisits", knob="fetches_per_second", value=3.0), project) == [
        Command("budget", "revisits", "fetches_per_second", 3.0)]
    assert steering_commands(ns(command="seeds", site="w", urls=["https://w.example/b"]), project) == [
        Command("seed", "revisits", value="https://w.example/b")]
    with pytest.raises(ControlError, match="loop fue is not enabled in project t; enable \\[loops.fue\\]"):
        steering_commands(ns(command="pause", loop="fue"), project)
    with pytest.raises(ControlError, match="not on site w \\(https://w.example/\\): https://v.example/b"):
        steering_commands(ns(command="seeds", site="w", urls=["https://w.example/c", "https://v.example/b"]), project)
    with pytest.raises(ControlError, match="no running loop of project t takes seeds of site v"):
        steering_commands(ns(command="seeds", site="v", urls=["https://v.example/b"]), project)
    with pytest.raises(ControlError, match="has no site 'x'; its sites: w, v"):
        steering_commands(ns(command="seeds", site="x", urls=["https://x.example/"]), project)


def test_the_commands_parse_as_the_docs_write_them():
    from focuscrawl.cli.main import build_parser

    p = build_parser()
    args = p.parse_args(["budget", "sources", "fetches_per_second", "0.2"])
    assert (args.command, args.loop, args.knob, args.value) == ("budget", "sources", "fetches_per_second", 0.2)
    args = p.parse_args(["seeds", "add", "world", "http://h/a", "http://h/b"])
    assert (args.command, args.site, args.urls) == ("seeds", "world", ["http://h/a", "http://h/b"])
    with pytest.raises(SystemExit):
        p.parse_args(["pause", "everything"])


def test_without_an_active_project_the_command_says_to_start_one(tmp_path, monkeypatch, capsys):
    from focuscrawl.cli.main import main

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    assert main(["pause", "revisits"]) == 2
    assert "no project is active here; `focuscrawl up PROJECT` first" in capsys.readouterr().err


def test_status_shows_a_paused_loop_with_the_command_that_resumes_it(tmp_path, monkeypatch):
    from focuscrawl.config import settings
    from focuscrawl.platform import status

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    cfg = settings()
    files = {}
    for name, control in (("revisitor", {"loop": "revisits", "paused": True, "budgets": {"fetches_per_second": 0.5}}),
                          ("source-crawler", {"loop": "sources", "paused": False, "budgets": {"fetches_per_second": 2}}),
                          ("consumer-x", None)):
        files[name] = tmp_path / "status" / f"{name}.json"
        files[name].parent.mkdir(parents=True, exist_ok=True)
        files[name].write_text(json.dumps({"process": name, **({"control": control} if control else {})}))
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform" / "specs.json").write_text(json.dumps(
        {"specs": [{"name": n, "status_file": str(f)} for n, f in files.items()]}))
    assert status.steering(cfg) == {"revisits": {"paused": True, "budgets": {"fetches_per_second": 0.5}},
                                    "sources": {"paused": False, "budgets": {"fetches_per_second": 2}}}
    text = status.render({"loops": {"revisits": {"pages": 3, "control": status.steering(cfg)["revisits"]}}})
    assert "loop revisits: PAUSED (`focuscrawl resume revisits`), pages 3, fetches per second 0.5" in text
