"""Static check: nothing on the live path (``streaming/`` and every focuscrawl module it imports,
transitively, at module level or inside functions) reads the world's evaluation interface or imports
the world's ground truth (docs/world.md). The runtime twins: ``test_live_processes_integration.py`` (the loops' processes on
an in-process world) and ``tests/platform/test_platform_e2e.py`` (the whole platform on ``target = "sites"``,
the world's click log switched off, its evaluation port's access log read at the end).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.imports import imports_of, module_file

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "include" / "focuscrawl"
# What reading the evaluation interface looks like in code: its URL/port settings and its paths.
FORBIDDEN_NAMES = {"world_eval_url", "world_eval_port", "eval_url", "eval_port", "EvalHandler"}
FORBIDDEN_STRINGS = ("/truth/", "/feedback/", "/time", "/clock", "/access_log", "--eval-url", "--eval-port",
                     "FOCUSCRAWL_WORLD_EVAL_PORT")
# The evaluation side and the world itself: the live path may not import them at all.
FORBIDDEN_MODULES = ("focuscrawl.world", "focuscrawl.experiments", "focuscrawl.reports")
# Defines the settings (the property exists for the evaluation side), or starts the services (the
# world among them) and hands them their ports: defining and passing on is not reading.
PLUMBING = ("focuscrawl.config", "focuscrawl.services.", "focuscrawl.platform.")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _violations(path: Path, tree: ast.AST) -> list[str]:
    docs = _docstrings(tree)
    out = []
    path = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            out.append(f"{path}:{node.lineno} name {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_NAMES:
            out.append(f"{path}:{node.lineno} attribute .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            hit = [s for s in FORBIDDEN_STRINGS if s in node.value]
            if hit:
                out.append(f"{path}:{node.lineno} string {node.value!r}")
    return out


def live_path() -> dict[str, Path]:
    """Every streaming/ script and every focuscrawl module reachable from them by import."""
    files = {f"streaming/{p.relative_to(ROOT / 'streaming')}": p for p in sorted((ROOT / "streaming").rglob("*.py"))}
    todo = list(files.values())
    seen = dict(files)
    while todo:
        for imported in imports_of(todo.pop(), PACKAGE):
            target = module_file(imported, PACKAGE)
            if target is None or imported in seen:
                continue
            seen[imported] = target
            todo.append(target)
    return seen


def test_the_live_path_is_big_enough_to_mean_something():
    modules = live_path()
    # the crawlers' own machinery is on it (a scan that found nothing would pass whatever the code does)
    assert {"focuscrawl.fetch.fetcher", "focuscrawl.fetch.clock", "focuscrawl.ephemeral.crawler",
            "focuscrawl.ephemeral.feedback", "focuscrawl.relevance.score", "focuscrawl.outlinks.revisit",
            "focuscrawl.fue.pipeline"} <= set(modules)


def test_no_live_module_imports_the_world_or_the_evaluation_side():
    bad = sorted(m for m in live_path() if m.startswith(FORBIDDEN_MODULES))
    assert not bad, f"the live path imports the world / evaluation side: {bad}"


def test_no_live_module_reads_the_evaluation_interface():
    bad = []
    for name, path in live_path().items():
        if name == "focuscrawl.config" or name.startswith(PLUMBING[1:]):
            continue
        bad += _violations(path, ast.parse(path.read_text(), str(path)))
    assert not bad, "the live path reads the world's evaluation interface:\n" + "\n".join(bad)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('import requests\nrequests.get(cfg.world_eval_url + "/time")\nx = "/truth/users"\n')
    tree = ast.parse(probe.read_text())
    found = [v.split(" ", 1)[1] for v in _violations(probe, tree)]
    assert sorted(found) == ["attribute .world_eval_url", "string '/time'", "string '/truth/users'"]

