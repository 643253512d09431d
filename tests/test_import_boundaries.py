"""Static checks of the house: the layers import only downwards, and the world and the training code stay apart.

The layers, lowest first, are :data:`LAYERS`: a module may import its own layer and those below it,
never one above, and no two top-level packages import each other (no cycle, however long).

Both read their labelled writings from ``focuscrawl.core.corpora``; the corpora import neither. Every
import counts, at module level or inside a function, absolute or relative, and so does every module
a package reaches through other focuscrawl modules (``fue`` -> ``experiments`` -> ``world`` would
be the same leak by a longer road).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.imports import imports_of, module_file, module_name

PACKAGE = Path(__file__).resolve().parents[1] / "include" / "focuscrawl"

# The packages of focuscrawl by layer, lowest first (the docs' architecture page draws the same order).
LAYERS = [
    {"config"},
    {"core"},
    {"parse"},
    {"lake"},
    {"topics"},
    {"fetch", "services", "control"},  # control: steering commands the running loops follow
    {"crawl", "outlinks", "graph", "fue", "ephemeral", "relevance"},  # the loops and the page focus
    {"world", "project"},
    {"stream"},
    {"orchestration"},
    {"platform"},
    {"experiments"},
    {"reports"},
    {"cli"},
    {"testing"},
]

# (importing package, package it may not reach)
APART = [
    ("focuscrawl.world", "focuscrawl.fue"),
    ("focuscrawl.fue", "focuscrawl.world"),
    ("focuscrawl.core.corpora", "focuscrawl.world"),
    ("focuscrawl.core.corpora", "focuscrawl.fue"),
    # The parsers hand back rejections; where they land (the ``dead_letter`` spec) is the sink's business.
    ("focuscrawl.parse", "focuscrawl.lake.tables"),
]


def _module_name(path: Path) -> str:
    return module_name(path, PACKAGE)


def _module_file(name: str) -> Path | None:
    return module_file(name, PACKAGE)


def _imports_of(path: Path) -> set[str]:
    return imports_of(path, PACKAGE)


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def reached_from(package: str) -> dict[str, list[str]]:
    """Every focuscrawl module reachable by import from the files of ``package``, with one chain to it."""
    root = _module_file(package)
    assert root is not None, f"{package} is not in {PACKAGE}"
    files = sorted(root.parent.rglob("*.py")) if root.name == "__init__.py" else [root]
    chains = {_module_name(p): [_module_name(p)] for p in files}
    todo = list(chains)
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if path is None:
            continue
        for imported in _imports_of(path):
            # importing a.b.c runs a/__init__.py and a/b/__init__.py as well
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):
                step = ".".join(parts[:i])
                if step not in chains and _module_file(step) is not None:
                    chains[step] = chains[name] + [step]
                    todo.append(step)
    return chains


@pytest.mark.parametrize(("importer", "forbidden"), APART, ids=[f"{a}-not-{b}" for a, b in APART])
def test_packages_stay_apart(importer, forbidden):
    bad = {m: chain for m, chain in reached_from(importer).items() if _within(m, forbidden)}
    assert not bad, f"{importer} reaches {forbidden}:\n" + "\n".join(" -> ".join(c) for c in bad.values())


def test_the_walk_follows_every_kind_of_import(tmp_path, monkeypatch):
    pkg = tmp_path / "focuscrawl"
    (pkg / "fue").mkdir(parents=True)
    (pkg / "world").mkdir()
    for name in ("__init__.py", "fue/__init__.py", "world/__init__.py", "world/corpus.py", "relay.py"):
        (pkg / name).write_text("")
    (pkg / "fue" / "late.py").write_text("def f():\n    from ..world import corpus\n")
    (pkg / "fue" / "road.py").write_text("import focuscrawl.relay\n")
    (pkg / "relay.py").write_text("from focuscrawl.world.corpus import x\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    reached = reached_from("focuscrawl.fue")
    assert reached["focuscrawl.world.corpus"][0] in {"focuscrawl.fue.late", "focuscrawl.fue.road"}
    assert reached["focuscrawl.world"]
    assert set(reached_from("focuscrawl.world")) == {"focuscrawl.world", "focuscrawl.world.corpus"}


def _top(name: str) -> str:
    return name.split(".")[1] if name.count(".") else ""


def _rank(top: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def package_imports() -> dict[str, dict[str, str]]:
    """For each top-level part of focuscrawl, the other top-level parts its files import (with one file that does)."""
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        top = _top(_module_name(path))
        if not top:
            continue
        for imported in _imports_of(path):
            other = _top(imported)
            if other and other != top:
                graph.setdefault(top, {}).setdefault(other, str(path.relative_to(PACKAGE.parent)))
    return graph


def layer_violations() -> list[str]:
    """Every import that runs from a lower layer up to a higher one, and every cycle between top-level parts."""
    graph = package_imports()
    found = [f"{graph[a][b]}: {a} (layer {_rank(a)}) imports {b} (layer {_rank(b)})"
             for a in graph for b in graph[a] if _rank(b) > _rank(a)]
    for start in graph:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, {}):
                if nxt == start:
                    found.append("cycle: " + " -> ".join(path + [start]))
                elif nxt not in path and nxt > start:  # each cycle once, from its smallest member
                    stack.append((nxt, path + [nxt]))
    return found


def test_every_part_has_a_layer():
    parts = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    parts |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    unplaced = sorted(parts - set().union(*LAYERS))
    assert not unplaced, f"give {unplaced} a layer in LAYERS (lowest first) in {__file__}"


def test_the_root_holds_only_what_every_layer_uses():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(modules) <= 5, f"the root of focuscrawl holds {modules}: move a module into the package of its role"


def test_imports_run_only_downwards_and_never_round():
    bad = layer_violations()
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_the_layer_check_catches_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "focuscrawl"
    for name in ("core", "lake", "fue", "world"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "lake" / "io.py").write_text("def f():\n    from focuscrawl.core import x\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert layer_violations() == []
    (pkg / "core" / "late.py").write_text("def f():\n    from focuscrawl.lake import io\n")
    assert layer_violations() == [
        "focuscrawl/core/late.py: core (layer 1) imports lake (layer 3)",
        "cycle: core -> lake -> core",
    ]
    (pkg / "core" / "late.py").unlink()
    (pkg / "fue" / "a.py").write_text("import focuscrawl.world\n")
    (pkg / "world" / "b.py").write_text("from focuscrawl.fue import a\n")
    assert any(v.startswith("cycle: fue -> world -> fue") for v in layer_violations())
