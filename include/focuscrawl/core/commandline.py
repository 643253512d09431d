"""What every ``focuscrawl`` command's parser shares: a description, examples, the name catalogues.

A CLI that explains itself: every subcommand's ``--help`` says what it does
and shows at least one example (the parser's epilog), and ``focuscrawl experiment --help`` /
``focuscrawl report --help`` list every NAME with its one-line purpose. The NAMEs are the modules
of :mod:`focuscrawl.experiments` and :mod:`focuscrawl.reports` that define ``main``; the purpose is
the first paragraph of the module's docstring, read with :mod:`ast` so listing them imports
nothing. A new experiment is listed by adding its module, with no second list to keep in step.

``tests/services/test_cli_help.py`` walks ``focuscrawl --help`` recursively and checks all of it.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import textwrap
from pathlib import Path

RAW = argparse.RawDescriptionHelpFormatter
PROJECT_DEFAULT = Path("focuscrawl.toml")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors say where the fix is: the command's own ``--help``
    (its subcommands' parsers are of this class too: ``add_subparsers`` takes the parent's)."""

    def error(self, message: str):
        super().error(f"{message} (`{self.prog} --help` shows every argument, with examples)")


def summary(doc: str | None) -> str:
    """A docstring's first paragraph on one line (``splitlines()[0]`` cuts a wrapped sentence)."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines())


def examples(*lines: str) -> str:
    """The epilog: ``example: CMD`` or an ``examples:`` block, one command a line."""
    if not lines:
        raise ValueError("a command's help needs at least one example")
    if len(lines) == 1:
        return f"example: {lines[0]}"
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def parser(prog: str, doc: str | None, *example_lines: str, epilog_extra: str = "", **kwargs) -> argparse.ArgumentParser:
    """A top-level parser (``focuscrawl experiment fue``...): its docstring's summary and its examples."""
    epilog = examples(*example_lines) + (f"\n\n{epilog_extra}" if epilog_extra else "")
    return ArgumentParser(prog=prog, description=summary(doc).replace("``", "`"), epilog=epilog, formatter_class=RAW, **kwargs)


def subcommand(sub, name: str, help: str, *example_lines: str, description: str | None = None,
               epilog_extra: str = "", **kwargs) -> argparse.ArgumentParser:
    """``sub.add_parser`` with a description (the help line unless given) and the examples epilog."""
    epilog = examples(*example_lines) + (f"\n\n{epilog_extra}" if epilog_extra else "")
    return sub.add_parser(name, help=help, description=description or help[:1].upper() + help[1:] + ".",
                          epilog=epilog, formatter_class=RAW, **kwargs)


def add_project_argument(p: argparse.ArgumentParser) -> None:
    """The project file positional of ``validate``, ``up`` and ``train``."""
    p.add_argument("project", nargs="?", type=Path, default=PROJECT_DEFAULT,
                   help=f"project file or its folder (default: ./{PROJECT_DEFAULT})")


_PREFIX = re.compile(r"^``focuscrawl [^`]*``:\s*")


def purpose(doc: str | None) -> str:
    """A NAME's one-line purpose: its docstring's summary without the leading ````focuscrawl ...``:``."""
    return _PREFIX.sub("", summary(doc))


def catalogue(package: str) -> dict[str, str]:
    """``{NAME: purpose}`` of ``focuscrawl experiment|report NAME``: the modules of ``package`` that
    define a top-level ``main`` (``run_record``, ``live_truth`` are helpers, not NAMEs)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{package} is not a package")
    names: dict[str, str] = {}
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob("*.py")):
            if path.stem.startswith("_"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body):
                names[path.stem.replace("_", "-")] = purpose(ast.get_docstring(tree))
    return dict(sorted(names.items()))


def catalogue_text(title: str, names: dict[str, str], width: int = 100) -> str:
    """``title:`` then each NAME and its purpose, wrapped under a hanging indent."""
    pad = max(map(len, names), default=0) + 4
    lines = [f"{title}:"]
    for name, what in names.items():
        lines += textwrap.wrap(what or "(no docstring)", width=width, initial_indent=f"  {name}".ljust(pad),
                               subsequent_indent=" " * pad)
    return "\n".join(lines)


def module_of(package: str, name: str) -> str:
    """``focuscrawl.experiments`` + ``graph-estimation`` -> ``focuscrawl.experiments.graph_estimation``."""
    return f"{package}.{name.replace('-', '_')}"
