"""Issue 20, point 3: ``focuscrawl --help`` walked recursively; every command explains itself.

The walk runs ``focuscrawl ... --help`` in-process (``cli.main``, as the console script does) and
finds each command's children in its own help output: argparse's ``{a,b,c}`` choices for
subcommands, and for ``experiment``/``report`` the NAMEs its catalogue lists (each must show in
the help text with its purpose). The areas that parse their own arguments (world, demo, every
experiment and report NAME) are reached the same way, through dispatch.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from focuscrawl.cli import main as cli
from focuscrawl.core.commandline import catalogue, examples, purpose, summary

HEADINGS = ("positional arguments:", "options:", "usage:")


def help_of(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        cli.main([*argv, "--help"])
    assert stop.value.code in (0, None), f"focuscrawl {' '.join(argv)} --help exited {stop.value.code}: {err.getvalue()}"
    return out.getvalue()


def children(argv: list[str], text: str) -> list[str]:
    if len(argv) == 1 and argv[0] in cli.PACKAGES:
        return list(catalogue(f"focuscrawl.{cli.PACKAGES[argv[0]]}"))
    # the subcommands: the lines under the COMMAND/ACTION/{a,b} heading of "positional arguments"
    m = re.search(r"positional arguments:\n(.*?)(?:\n\n|\Z)", text, re.S)
    if not m or not re.search(r"\{[\w,-]+\}|COMMAND|ACTION", m.group(1).splitlines()[0]):
        return []
    lines = m.group(1).splitlines()[1:]
    return [ln.split()[0] for ln in lines if re.match(r"^    \S", ln)]


def walk() -> list[tuple[list[str], str]]:
    seen, todo = [], [[]]
    while todo:
        argv = todo.pop(0)
        text = help_of(argv)
        seen.append((argv, text))
        todo += [[*argv, c] for c in children(argv, text)]
    return seen


@pytest.fixture(scope="module")
def tree():
    return walk()


def test_walk_reaches_every_command(tree):
    reached = {" ".join(argv) for argv, _ in tree}
    # the platform's, the project's, the passthrough areas', and every experiment and report NAME
    for expected in ("services up", "services down", "services status", "sql", "pyspark", "init", "validate", "up",
                     "down", "status", "logs", "train", "world", "world serve", "demo", "experiment",
                     "experiment fue", "experiment graph-estimation", "report", "report demo", "report outlinks"):
        assert expected in reached
    names = {f"experiment {n}" for n in catalogue("focuscrawl.experiments")} | {
        f"report {n}" for n in catalogue("focuscrawl.reports")}
    assert names <= reached


def test_every_command_has_a_description_and_an_example(tree):
    missing = []
    for argv, text in tree:
        blocks = [b for b in text.strip().split("\n\n") if b.strip()]
        description = next((b for b in blocks[1:] if not b.startswith(HEADINGS)), "")
        if not description.strip() or description.startswith(("example:", "examples:")):
            missing.append((argv, "description"))
        example = re.search(r"^examples?:[ \n]+\s*(focuscrawl .+)$", text, re.M)
        if not example or (argv and argv[0] not in example.group(1)):
            missing.append((argv, "example"))
    assert missing == []


def test_every_subcommand_line_has_help(tree):
    for argv, text in tree:
        m = re.search(r"positional arguments:\n(.*?)(?:\n\n|\Z)", text, re.S)
        for ln in (m.group(1).splitlines()[1:] if m else []):
            if re.match(r"^    \S+$", ln):  # a name whose help went to the next line
                continue
            if re.match(r"^    \S", ln):
                assert len(ln.split()) > 1, f"focuscrawl {' '.join(argv)}: {ln.strip()} has no help line"


@pytest.mark.parametrize("command, package", sorted(cli.PACKAGES.items()))
def test_experiment_and_report_help_list_each_name_with_its_purpose(command, package):
    text = help_of([command])
    names = catalogue(f"focuscrawl.{package}")
    assert len(names) >= 4
    listing = text.split(f"{package} (NAME):", 1)[1]
    flat = " ".join(listing.split())
    for name, what in names.items():
        assert re.search(rf"^  {re.escape(name)}\s", listing, re.M), name
        assert " ".join(what.split()) in flat
        assert what and not what.startswith("``")


def test_catalogue_is_the_modules_with_main():
    assert set(catalogue("focuscrawl.experiments")) == {"ephemeral", "ephemeral-focus", "fue", "graph-estimation", "outlinks",
                                                        "outlinks-relevant",
                                                        "page-relevance"}
    reports = catalogue("focuscrawl.reports")
    assert "live-truth" not in reports and "demo" in reports  # a helper module is no NAME
    assert "run-record" not in catalogue("focuscrawl.experiments")


def test_unknown_name_names_the_known_ones_and_the_help(capsys):
    assert cli.main(["experiment", "fuee"]) == 2
    err = capsys.readouterr().err
    assert "unknown experiment 'fuee'" in err and "fue, graph-estimation" in err
    assert "focuscrawl experiment --help" in err


@pytest.mark.parametrize("argv", [[], ["experiment"], ["services"], ["logs"], ["world", "serve", "--port", "x"],
                                  ["experiment", "fue", "--budget", "many"]])
def test_usage_errors_point_at_the_help(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    last = err.getvalue().strip().splitlines()[-1]
    assert re.search(r"error: .*\(`focuscrawl[\w -]*--help` shows every argument, with examples\)$", last), last


def test_summary_and_purpose():
    doc = "``focuscrawl experiment x --run DIR``: what it does,\nwrapped over lines.\n\nMore."
    assert summary(doc) == "``focuscrawl experiment x --run DIR``: what it does, wrapped over lines."
    assert purpose(doc) == "what it does, wrapped over lines."
    assert examples("focuscrawl a") == "example: focuscrawl a"
    assert examples("focuscrawl a", "focuscrawl b") == "examples:\n  focuscrawl a\n  focuscrawl b"
    with pytest.raises(ValueError, match="at least one example"):
        examples()
