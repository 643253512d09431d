"""Which focuscrawl modules a Python file imports, read statically: the one walker the house's import checks
share (tests/test_import_boundaries.py, tests/live/test_live_no_eval_port.py).

Every import counts, at module level or inside a function, absolute or relative (``from . import x`` in a
package's ``__init__.py`` is that package's ``x``, in a module its package's ``x``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "include" / "focuscrawl"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``focuscrawl.a.b`` of ``package/a/b.py`` (and of ``package/a/b/__init__.py``)."""
    rel = path.relative_to(package.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def module_file(name: str, package: Path = PACKAGE) -> Path | None:
    """The file of module ``name`` under ``package``, None when it is not a focuscrawl module there."""
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    for candidate in (package / rel.with_suffix(".py") if rel.parts else None, package / rel / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def imports_of(path: Path, package: Path = PACKAGE) -> set[str]:
    """Every focuscrawl module a file imports (``from a import b`` counts ``a`` and, if a module, ``a.b``)."""
    module = module_name(path, package) if path.is_relative_to(package) else ""
    parent = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = parent.split(".")[: len(parent.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names if module_file(f"{base}.{a.name}", package)}
    return {n for n in found if n == "focuscrawl" or n.startswith("focuscrawl.")}
