"""The focuscrawl command: parsing, dispatch to other areas, the SQL prompt, the pyspark shell."""

from __future__ import annotations

import sys
import types

import pytest

from focuscrawl.cli import main as cli
from focuscrawl.services.manager import ServiceManager


def test_services_up_arguments():
    args = cli.build_parser().parse_args(["services", "up", "--only", "kafka,airflow", "--spark-cluster"])
    assert (args.command, args.action, args.only, args.spark_cluster) == ("services", "up", "kafka,airflow", True)


@pytest.mark.parametrize(
    "only, cluster, order",
    [
        (None, False, ["kafka", "spark-connect", "mlflow", "airflow", "world"]),
        ("airflow,kafka", False, ["kafka", "airflow"]),
        ("airflow,mlflow", False, ["mlflow", "airflow"]),
        (" World ", False, ["world"]),
        ("airflow,spark-connect", True, ["spark", "spark-connect", "airflow"]),
    ],
)
def test_only_gives_start_order(only, cluster, order):
    assert ServiceManager.parse_only(only, cluster) == order


def test_unknown_service_is_named():
    with pytest.raises(ValueError, match="unknown service.*kafak.*known: kafka, spark-connect, mlflow, airflow, world, spark"):
        ServiceManager.parse_only("kafak")
    assert cli.main(["services", "up", "--only", "nope"]) == 2


def _fake_module(monkeypatch, name: str, result: int):
    calls = []
    mod = types.ModuleType(name)
    mod.main = lambda argv: calls.append(argv) or result
    monkeypatch.setitem(sys.modules, name, mod)
    return calls


def test_other_areas_get_their_arguments_verbatim(monkeypatch):
    world = _fake_module(monkeypatch, "focuscrawl.world.__main__", 0)
    report = _fake_module(monkeypatch, "focuscrawl.reports.graph_estimation", 3)
    experiment = _fake_module(monkeypatch, "focuscrawl.experiments.graph_estimation", 0)
    demo = _fake_module(monkeypatch, "focuscrawl.cli.demo", 0)
    assert cli.main(["world", "--help"]) == 0
    assert cli.main(["report", "graph-estimation", "--out", "x.pdf"]) == 3
    assert cli.main(["experiment", "graph_estimation", "--methods", "HCP,RND"]) == 0
    assert cli.main(["demo"]) == 0
    assert world == [["--help"]]
    assert report == [["--out", "x.pdf"]]
    assert experiment == [["--methods", "HCP,RND"]]
    assert demo == [[]]


def test_unknown_name_is_one_clear_line(capsys):
    assert cli.main(["report", "no_such_report"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "focuscrawl: unknown report 'no_such_report'; known: demo, ephemeral, ephemeral-focus, fue, graph-estimation, harvest, "
        "outlinks, outlinks-relevant "
        "(`focuscrawl report --help` says what each does)"
    )


def test_missing_area_is_one_clear_line(capsys):
    assert cli.dispatch("focuscrawl.reports.no_such_report", []) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "focuscrawl: focuscrawl.reports.no_such_report is not installed in this checkout "
        "(no module 'focuscrawl.reports.no_such_report')"
    )


def test_format_table():
    assert cli.format_table(["n", "name"], [(1, "a"), (22, None)]) == (
        "+----+------+\n"
        "| n  | name |\n"
        "+----+------+\n"
        "| 1  | a    |\n"
        "| 22 | NULL |\n"
        "+----+------+"
    )


def test_sql_prompt_reads_statements_until_exit():
    lines = iter(["SELECT 1;", "SELECT", "  2;", "bad;", "", "exit"])
    ran, out = [], []

    def execute(q):
        ran.append(q)
        if q == "bad":
            raise RuntimeError("[PARSE_SYNTAX_ERROR] near bad\nlong trace")
        return f"ok {q}"

    assert cli.sql_prompt(execute, read=lambda _prompt: next(lines), write=out.append) == 0
    assert ran == ["SELECT 1", "SELECT   2", "bad"]
    assert out == ["ok SELECT 1", "ok SELECT   2", "error: [PARSE_SYNTAX_ERROR] near bad"]


def test_sql_prompt_ends_on_eof():
    def read(_prompt):
        raise EOFError

    assert cli.sql_prompt(lambda q: q, read=read, write=lambda s: None) == 0


def test_pyspark_shell_gets_session_conf_and_table_registration(cfg):
    from focuscrawl.lake.spark import session_conf

    argv, env = cli.pyspark_command(cfg)
    assert argv[0].endswith("/pyspark")
    confs = dict(a.split("=", 1) for a in argv[2::2])
    assert argv[1::2] == ["--conf"] * len(confs)
    assert confs == session_conf(cfg)
    startup = open(env["PYTHONSTARTUP"]).read()
    assert "register_tables(spark, settings())" in startup
    assert env["FOCUSCRAWL_VAR"] == str(cfg.var_dir)
