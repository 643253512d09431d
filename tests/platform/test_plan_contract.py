"""The plan and the stream scripts agree: every planned command parses with its script's own parser.

The plan passes each process the scaffold's arguments (``--status-file``, ``--metrics-port``, and to
the fetching ones ``--fetch-spec`` and the WARC arguments) without looking into the scripts; this
checks, for a project with every loop on, that each script takes them (its ``main``'s parser, read
without running it) and reads back what the plan resolved.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from helpers import load_module, main_parser

ROOT = Path(__file__).resolve().parents[2]


def _every_loop(tmp_path, sources: dict | None = None):
    from focuscrawl.project.loading import parse_project

    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    raw = {"name": "t", "target": "world", "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
           "sites": [{"name": "w", "world": True, "user_agent": "t/1 (+mailto:ops@example.org)", "politeness_delay": 0.3}],
           "loops": {"fue": {"method": "HCP", "users_per_hour": 90}, "sources": sources or {}, "revisits": {"fetches_per_second": 2.0, "revisit_period": "30m"},
                     "graph": {"enabled": True, "fetches_per_second": 4.0}}}
    return parse_project(raw, base_dir=tmp_path)


@pytest.fixture
def planned(tmp_path, monkeypatch):
    from focuscrawl.config import settings
    from focuscrawl.platform.plan import Models, plan

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    project = _every_loop(tmp_path)
    return project, plan(project, settings(), models=Models(Path("/m/r.joblib"), Path("/m/c.joblib")))


def _parse(spec) -> argparse.Namespace:
    script = Path(spec.command[1])
    parser = main_parser(load_module(script).main)
    assert parser is not None, f"{script} parses no arguments"
    return parser.parse_args(list(spec.command[2:]))  # an argument the script refuses exits 2 here


def test_every_planned_command_parses_with_its_scripts_parser(planned):
    project, specs = planned
    assert {s.loop for s in specs} >= {"fue", "sources", "revisits", "graph"}
    fetching = 0
    for spec in specs:
        args = _parse(spec)
        assert str(args.status_file) == spec.status_file and args.metrics_port == spec.metrics_port, spec.name
        if "--fetch-spec" in spec.command:
            fetching += 1
            assert args.fetch_spec.site == project.site("w") and args.project_site == project.site("w"), spec.name
            assert args.warc is not None, spec.name
    assert fetching == 5  # fue-explorer, fue-extractor-hcp, source-crawler, revisitor, graph-sampler


def test_the_plan_resolves_each_fetchers_pace_once(planned):
    _, specs = planned
    paces = {s.name: _parse(s).fetch_spec.pace for s in specs if "--fetch-spec" in s.command}
    # the loop's budget per host where the loop has one; the site's delay is the fetcher's, not the spec's pace
    assert paces == {"fue-explorer": 0.0, "fue-extractor-hcp": 0.0, "source-crawler": 0.0, "revisitor": 0.5,
                     "graph-sampler": 0.25}


def test_each_loop_value_reaches_its_process(planned):
    """What the project says of a loop is what its process reads back (no default of the script's own)."""
    project, specs = planned
    by_name = {s.name: _parse(s) for s in specs}
    assert by_name["fue-extractor-hcp"].users_per_hour == 90
    # to the second: world.toml's 30 minutes once reached the revisitor as 1799.997 s (:g's six digits)
    assert by_name["revisitor"].interval_days * 86400 == project.loops.revisits.revisit_seconds == 1800
    assert by_name["source-crawler"].feedback == project.loops.sources.feedback == "clicks"


def test_a_click_topic_is_what_the_page_clicks_consumer_reads_and_the_crawler_polls_no_click_log(tmp_path, monkeypatch):
    """[loops.sources] clicks_topic reaches one process: the page_clicks consumer reads it (its --topic, parsed by
    consumer.py's own parser, and the plan's record of the landing); the crawler, told so, reads no click log."""
    from focuscrawl.config import settings
    from focuscrawl.platform.plan import Models, plan

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    models = Models(Path("/m/r.joblib"), Path("/m/c.joblib"))
    for clicks_topic in ("shop.clicks", None):
        project = _every_loop(tmp_path, {"clicks_topic": clicks_topic} if clicks_topic else {})
        specs = {s.name: s for s in plan(project, settings(), models=models)}
        consumers = {name: _parse(s) for name, s in specs.items() if s.kind == "consumer"}
        assert (consumers["consumer-page_clicks"].sink, consumers["consumer-page_clicks"].topic) == \
            ("page_clicks", clicks_topic)
        assert specs["consumer-page_clicks"].meta["topic"] == (clicks_topic or "focuscrawl.page_clicks")
        assert all(args.topic is None for name, args in consumers.items() if name != "consumer-page_clicks")
        crawler = _parse(specs["source-crawler"])
        assert (crawler.feedback, crawler.clicks_url, crawler.no_click_log) == ("clicks", None, clicks_topic is not None)


def test_no_click_consumer_runs_where_no_click_reaches_it(tmp_path, monkeypatch):
    """feedback = "relevance" (a real site's default): nothing writes the clicks topic, so no page_clicks consumer
    is planned (it would sit idle, its table empty); the fetched pages' landing, which the signal reads, is."""
    from focuscrawl.config import settings
    from focuscrawl.platform.plan import Models, plan

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    project = _every_loop(tmp_path, {"feedback": "relevance"})
    names = {s.name for s in plan(project, settings(), models=Models(Path("/m/r.joblib"), Path("/m/c.joblib")))}
    assert {"consumer-source_recrawls", "consumer-source_pages"} <= names and "consumer-page_clicks" not in names


def test_a_script_refuses_an_argument_it_does_not_take(planned):
    """The contract can fail: a flag no script declares exits 2."""
    _, specs = planned
    (revisitor,) = [s for s in specs if s.name == "revisitor"]
    parser = main_parser(load_module(Path(revisitor.command[1])).main)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args([*revisitor.command[2:], "--politeness-delay", "1"])
    assert exit_.value.code == 2
