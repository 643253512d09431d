"""`focuscrawl up` refuses a malformed project and starts nothing; the plan; status with parts missing.

No engine runs here: the platform on real engines is the end-to-end test (tests/platform/test_platform_e2e.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest

from focuscrawl.cli.main import main as cli_main
from focuscrawl.config import settings
from focuscrawl.platform import status as status_mod
from focuscrawl.platform.plan import LOOP_SINKS, Models, PlanError, plan
from focuscrawl.platform.up import Platform, parse_for
from focuscrawl.project.loading import parse_project
from focuscrawl.core.status_file import write_status

ROOT = Path(__file__).resolve().parents[2]


def _project_tests():
    """The project file's own table of malformed files (tests/project/test_project_file.py)."""
    spec = importlib.util.spec_from_file_location("project_file_cases", ROOT / "tests" / "project" / "test_project_file.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = _project_tests()


@pytest.fixture
def var(tmp_path, monkeypatch):
    """A fresh state folder, on ports nobody listens on."""
    folder = tmp_path / "var"
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(folder))
    monkeypatch.setenv("FOCUSCRAWL_PORT_OFFSET", "3900")
    return folder


def _nothing_started(var: Path) -> None:
    made = sorted(str(p.relative_to(var)) for p in var.rglob("*")) if var.exists() else []
    assert made == [], f"up left these behind: {made}"


@pytest.mark.parametrize("case,edit,key,fix", CASES.MALFORMED, ids=[m[0] for m in CASES.MALFORMED])
def test_up_refuses_a_malformed_project_and_starts_nothing(tmp_path, var, monkeypatch, capsys, case, edit, key, fix):
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.delenv("FC_TEST_URL", raising=False)
    monkeypatch.delenv("FC_TEST_ID", raising=False)
    monkeypatch.delenv("FC_TEST_SECRET", raising=False)
    (folder / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n{"author": "b", "title": "sad", "selftext": "x"}\n')
    (folder / "neg.csv").write_text("author,title,selftext\nc,game night,fun\nd,new car,\n")
    text: str | bytes = CASES.VALID
    if edit is not None:
        text = CASES.VALID.replace(edit[0], edit[1], 1)
    elif case == "unreadable file":
        text = b"\xff\xfe\x00name = 1"
    elif case == "examples that do not parse":
        (folder / "pos.jsonl").write_text('{"user": "a", "text": "x"}\n{"user": "b", "text": \n')
    elif case == "no sites":
        text = CASES.VALID.split("[[sites]]")[0]
    path = CASES.write(folder, text)
    assert cli_main(["up", str(path), "--for", "5s"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and fix in err[0], err
    _nothing_started(var)


def test_up_refuses_a_project_its_processes_cannot_run(tmp_path, var, capsys):
    """Valid as a file, but a revisit loop on a real site needs pages to start from: refused before training."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (folder / "neg.csv").write_text("author,title\nc,game night\n")
    path = folder / "focuscrawl.toml"
    path.write_text('name = "t"\ntarget = "sites"\n[profile]\npositives = "pos.jsonl"\nnegatives = "neg.csv"\n'
                    '[[sites]]\nname = "shop"\nbase_url = "https://shop.example.org"\n'
                    'user_agent = "t/1 (+mailto:ops@example.org)"\n[loops.revisits]\nenabled = true\n')
    assert cli_main(["up", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "loops.revisits.seeds" in err[0], err
    _nothing_started(var)


def test_up_refuses_while_another_platform_is_up(tmp_path, var, capsys):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_status(var / "platform" / "state.json", {})
        (var / "platform" / "supervisor.pid").write_text(str(holder.pid))
        project = _project(tmp_path, target="world")
        with pytest.raises(RuntimeError, match=f"already up .*pid {holder.pid}"):
            Platform(project, settings()).prepare()
    finally:
        holder.kill()
        holder.wait()


def test_for_takes_durations_and_seconds():
    assert parse_for("10m") == 600 and parse_for("90") == 90 and parse_for("1h30m") == 5400 and parse_for(None) is None
    with pytest.raises(ValueError, match="duration"):
        parse_for("soon")
    with pytest.raises(ValueError, match="positive"):
        parse_for("0")


# -- the plan -----------------------------------------------------------------------------------


def _project(tmp_path, method="HCP", target="world", min_interval=None, **loops):
    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    site = {"name": "w", "world": True} if target == "world" else {"name": "shop", "base_url": "https://shop.example.org"}
    raw = {"name": "t", "target": target, "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
           "sites": [{**site, "user_agent": "t/1 (+mailto:ops@example.org)", "politeness_delay": 0.5}],
           "loops": {"fue": {"method": method}, **loops}}
    if min_interval is not None:
        raw["asset_events"] = {"min_interval": min_interval}
    return parse_project(raw, base_dir=tmp_path)


MODELS = Models(Path("/m/reference.joblib"), Path("/m/candidate.joblib"))


def _by_name(specs):
    return {s.name: s for s in specs}


def test_plan_declares_every_loop_process_with_its_port_and_status_file(tmp_path, var):
    cfg = settings()
    specs = plan(_project(tmp_path), cfg, models=MODELS)
    names = _by_name(specs)
    for expected in ("fue-explorer", "fue-chooser-hcp", "fue-extractor-hcp", "fue-classifier", "source-crawler",
                     "revisitor", "asset-events"):
        assert expected in names, sorted(names)
    from focuscrawl.stream.sinks import SINKS

    landed = {s.meta["sink"] for s in specs if s.kind == "consumer"}
    assert landed == {n for sinks in LOOP_SINKS.values() for n in sinks if n in SINKS} | {"dead_letter", "control_audit"}
    assert {"fue_posts", "fue_extractions", "source_recrawls", "page_clicks"} <= landed
    ports = [s.metrics_port for s in specs if s.metrics_port]
    assert ports == list(range(cfg.metrics_port, cfg.metrics_port + len(ports)))  # 18200 + offset upward
    assert cfg.metrics_port == 18200 + 3900
    for s in specs:
        if s.status_file:
            assert s.status_file == str(Path(cfg.var_dir) / "status" / f"{s.name}.json")
            assert s.command[s.command.index("--status-file") + 1] == s.status_file
        if s.metrics_port:
            assert s.command[s.command.index("--metrics-port") + 1] == str(s.metrics_port)
        assert s.env["FOCUSCRAWL_VAR"] == str(cfg.var_dir) and s.cwd == str(cfg.home)
    # Fetchers start first and stop first, the landings into Delta stop last.
    assert names["fue-explorer"].tier < names["fue-chooser-hcp"].tier < names["consumer-fue_posts"].tier
    chooser = names["fue-chooser-hcp"].command
    assert chooser[chooser.index("--classifier") + 1] == str(MODELS.reference)  # HCP scores with the reference model
    assert str(MODELS.reference) in names["fue-classifier"].command
    assert "asset-events" not in _by_name(plan(_project(tmp_path), cfg, models=MODELS, airflow=False))


def _asset_events_intervals(project) -> dict[str, float]:
    """What the planned asset-events process parses from its command line: ``{DAG id: seconds}``."""
    from helpers import load_module, main_parser

    (spec,) = [s for s in plan(project, settings(), models=MODELS) if s.name == "asset-events"]
    parser = main_parser(load_module(ROOT / "streaming" / "asset_events.py").main)
    args = parser.parse_args(list(spec.command[2:]))
    assert args.min_interval == 60  # the poster's default for every DAG not named
    return dict(args.dag_min_interval)


def test_the_plan_passes_each_dags_asset_event_interval(tmp_path, var):
    assert _asset_events_intervals(_project(tmp_path)) == {}
    paced = _project(tmp_path, min_interval={"graph_estimation": "10m", "source_schedule": "90s"})
    assert _asset_events_intervals(paced) == {"graph_estimation": 600.0, "source_schedule": 90.0}


def test_the_e2e_test_project_parses_and_paces_source_schedule_at_three_minutes(var, shared_data):
    from helpers import load_module

    live = load_module(ROOT / "tests" / "platform" / "conftest.py")
    project = live.derived_project()
    assert project.name == "platform-e2e" and project.schedules["delta_maintenance"] == "none"
    assert _asset_events_intervals(project) == {"source_schedule": 180.0}


def test_the_explorer_reads_the_front_page_the_project_names(tmp_path, var):
    """[loops.fue] listing_path, as the planned explorer's own parser reads its command line."""
    from helpers import load_module, main_parser

    parser = main_parser(load_module(ROOT / "streaming" / "fue" / "explorer.py").main)
    for fue, path in (({"method": "HCP"}, "/r/all/new.json"), ({"method": "HCP", "listing_path": "/front/new.json"},
                                                               "/front/new.json")):
        specs = _by_name(plan(_project(tmp_path, fue=fue), settings(), models=MODELS))
        assert parser.parse_args(list(specs["fue-explorer"].command[2:])).listing_path == path


@pytest.mark.parametrize("method,model", [("HCP-SNIP", "candidate"), ("RND", None)])
def test_the_chooser_gets_the_model_its_method_scores_with(tmp_path, var, method, model):
    specs = _by_name(plan(_project(tmp_path, method=method), settings(), models=MODELS))
    chooser = specs[f"fue-chooser-{method.lower()}"].command
    if model is None:
        assert "--classifier" not in chooser
    else:
        assert chooser[chooser.index("--classifier") + 1] == str(getattr(MODELS, model))


def test_plan_leaves_out_disabled_loops(tmp_path, var):
    project = _project(tmp_path, sources={"enabled": False}, revisits={"enabled": False}, graph={"enabled": False})
    specs = plan(project, settings(), models=MODELS, airflow=False)
    # every plan lands the steering commands (the one process of no loop without Airflow)
    assert {s.loop for s in specs} == {"fue", None} and [s.name for s in specs if s.loop is None] == ["consumer-control_audit"]
    project = _project(tmp_path, sources={"enabled": False}, revisits={"enabled": False}, graph={"enabled": True})
    assert {s.loop for s in plan(project, settings(), models=MODELS, airflow=False)} == {"fue", "graph", None}


def test_plan_needs_trained_models_and_seeds_for_a_real_site(tmp_path, var):
    with pytest.raises(PlanError, match="focuscrawl train"):
        plan(_project(tmp_path), settings(), models=None)
    with pytest.raises(PlanError, match="loops.revisits.seeds"):
        plan(_project(tmp_path, target="sites"), settings(), models=MODELS)
    seeded = _project(tmp_path, target="sites", revisits={"seeds": ["https://shop.example.org/a"]},
                      sources={"seeds": ["https://shop.example.org/"]})
    specs = _by_name(plan(seeded, settings(), models=MODELS))
    assert "https://shop.example.org/a" in specs["revisitor"].command
    assert "https://shop.example.org" in specs["fue-explorer"].command


# -- status with parts missing ------------------------------------------------------------------


def test_status_with_nothing_running_says_so(var, capsys):
    assert cli_main(["status", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["supervisor"]["running"] is False and doc["processes"] == []
    assert doc["lag"] == {"error": "not running"} and doc["dags"] == {"error": "not running"}
    assert all(not s["up"] for s in doc["services"].values())
    text = status_mod.render(doc)
    assert "supervisor not running" in text and "processes: not running" in text
    assert "consumer lag: not running" in text and "DAGs: not running" in text
    assert f"(start: `focuscrawl services up --only {','.join(doc['services'])}`)" in text  # the fix, named
    gone = status_mod.render({**doc, "project": "world"})
    assert "supervisor not running (`focuscrawl up` with world's project file starts it again)" in gone


def test_status_shows_a_gone_supervisor_crash_loops_and_live_figures(var):
    cfg = settings()
    write_status(var / "run" / "project.json", {"name": "t", "loops": {"fue": {"enabled": True},
                                                                        "sources": {"enabled": True},
                                                                        "graph": {"enabled": False}}})
    write_status(var / "platform" / "state.json", {"supervisor": {"pid": 999999999, "project": "t"}, "processes": [
        {"name": "fue-chooser-hcp", "kind": "fue.chooser", "loop": "fue", "state": "up", "pid": 999999999,
         "restarts": 1, "health": "ok", "last_exit": None, "last_error": []},
        {"name": "source-crawler", "kind": "sources.crawler", "loop": "sources", "state": "crashloop", "pid": None,
         "restarts": 5, "health": "down", "last_exit": 1, "last_error": ["Traceback", "ValueError: no sources found"]},
    ]})
    write_status(var / "status" / "fue-chooser-hcp.json", {"candidates": 120, "chosen": 7, "scores_applied": 40,
                                                           "top": [["u1", 0.9], ["u2", 0.8]]})
    write_status(var / "status" / "source-crawler.json", {"recrawls": 12, "pages": 30, "sources": 4,
                                                          "schedules_applied": 2})
    doc = status_mod.collect(cfg, kafka=False, airflow=False)
    states = {p["name"]: p["state"] for p in doc["processes"]}
    assert states == {"fue-chooser-hcp": "up (supervisor gone)", "source-crawler": "crashloop"}
    assert set(doc["loops"]) == {"fue", "sources"}  # the graph loop is off in this project
    fue, src = doc["loops"]["fue"], doc["loops"]["sources"]
    assert (fue["candidates"], fue["chosen"], fue["pushes_applied"]) == (120, 7, 40)
    assert (src["recrawls"], src["new_pages"], src["schedules_applied"]) == (12, 30, 2)
    text = status_mod.render(doc)
    assert "ValueError: no sources found" in text  # the crash loop's last lines
    assert "top: u1, u2" in text and "recrawls 12" in text and "new pages 30" in text


def test_fue_figures_come_from_the_lake_when_it_holds_verdicts(var):
    import pyarrow as pa
    from deltalake import write_deltalake

    from focuscrawl.fue.pipeline import STATS_TABLE

    cfg = settings()
    schema = STATS_TABLE.arrow_schema()
    blank = {f.name: None if f.nullable else ("" if pa.types.is_string(f.type) else 0) for f in schema}
    rows = [blank | {"run_id": run, "method": "HCP", "user": f"u{i}", "sim_time": 0.0, "relevant": rel,
                     "kafka_offset": i}
            for i, (run, rel) in enumerate([("t", True), ("t", False), ("t", True), ("t", False), ("other", True)])]
    write_deltalake(STATS_TABLE.path(cfg), pa.Table.from_pylist(rows, schema=schema))
    fue = status_mod.fue_figures(cfg, "t", {})  # no status file: the figures come from the lake alone
    assert (fue["extracted"], fue["relevant"], fue["harvest"]) == (4, 2, 0.5)


def test_logs_prints_the_tail_and_names_the_known_logs(var, capsys):
    log = var / "logs" / "platform" / "revisitor.log"
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert cli_main(["logs", "revisitor", "-n", "3"]) == 0
    assert capsys.readouterr().out.splitlines() == ["line 97", "line 98", "line 99"]
    assert cli_main(["logs", "revisiter"]) == 2
    assert "known: revisitor" in capsys.readouterr().err


def test_follow_prints_what_is_appended(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("old\n")
    seen: list[str] = []
    deadline = time.monotonic() + 10

    def stop() -> bool:
        if seen == ["old"]:
            with log.open("a") as f:
                f.write("new 1\nnew 2\n")
        return len(seen) >= 3 or time.monotonic() > deadline

    status_mod.follow(log, 5, write=seen.append, stop=stop, interval=0.01)
    assert seen == ["old", "new 1", "new 2"]


def test_every_platform_command_has_help_with_an_example(capsys):
    for command in ("up", "down", "status", "logs", "train"):
        with pytest.raises(SystemExit):
            cli_main([command, "--help"])
        assert "example" in capsys.readouterr().out, command


def test_down_with_nothing_up_is_harmless(var, capsys):
    assert cli_main(["down", "--keep-services"]) == 0
    assert os.path.exists(var) is False or not any((var / "platform").glob("*.pid"))


def test_a_crawling_loop_brings_one_landing_of_the_dead_letter_topic(tmp_path, var):
    cfg = settings()
    names = _by_name(plan(_project(tmp_path), cfg, models=MODELS))
    assert names["consumer-dead_letter"].meta["table"] == "dead_letter"
    assert sum(1 for n in names if n == "consumer-dead_letter") == 1  # one, though sources and revisits both run
    off = {"sources": {"enabled": False}, "revisits": {"enabled": False}}
    assert "consumer-dead_letter" not in _by_name(plan(_project(tmp_path, **off), cfg, models=MODELS))


def test_the_graph_loops_latest_estimates_come_from_the_newest_file_of_a_real_delta_table(tmp_path):
    """deltalake hands its add actions as an arro3 table (no ``to_pylist``): ``status`` printed an
    AttributeError for the graph loop before."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    def rows(crawl, estimate):
        return pa.table({"crawl_id": [crawl] * 3, "estimator": ["HT"] * 3, "target": ["relevant", "relevant", "label"],
                         "value": ["relevant", "other", "x"], "estimate": [estimate, 1 - estimate, 0.4],
                         "ci_low": [estimate - 0.1, 0.0, 0.3], "ci_high": [estimate + 0.1, 1.0, 0.5], "level": [0.95] * 3})

    write_deltalake(str(tmp_path), rows("old", 0.2))
    time.sleep(0.01)  # a later modification time for the newer file
    write_deltalake(str(tmp_path), rows("new", 0.3), mode="append")
    latest = status_mod._latest_estimates(DeltaTable(str(tmp_path)))
    assert [(r["crawl_id"], r["target"], r["value"], r["estimate"]) for r in latest] == [
        ("new", "label", "x", 0.4), ("new", "relevant", "relevant", 0.3)]
