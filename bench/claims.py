"""The claims check: every number the docs quote is recomputed from the committed result files.

    python -m bench.claims            # check docs/ against bench/results/ (make check-claims)
    python -m bench.claims --write    # rewrite the generated tables, then check

A figure in the docs comes either from a result table included whole (``--8<-- "bench/results/..."``,
so it cannot drift), from a table this module generates from a committed result file
(:data:`GENERATED`; the check fails when the committed table is not what the data gives), or from a
marked quote::

    <!--claim bench/results/003-graph-estimation/sweep.md | RW ; SCE-->+0.026 [+0.009, +0.044]<!--/claim-->
    <!--claim bench/results/fue-folds/run-fold0.json#duration-->604800<!--/claim-->

A marker names a committed file and, for a table (``.md`` or ``.csv``), the cells that pick exactly one
row; the quoted text must then equal that row's cell in ``FILE@COLUMN``, or without a column one cell of
the row (numbers compare at the quote's decimals; a commit may be quoted by its short hash).
Without cells the quote must occur in the file as written; ``FILE.json#a.b`` picks a value by its keys.
On the pages of the loops' results, a result-like figure outside a marker (a value with an interval
``0.13 [0.11, 0.15]``, a ratio ``4.9x``, a ``±``) fails the check: it has no source. A result another
change is still producing is a placeholder, ``<!--pending bench/results/...-->``, which fails the check
as soon as that file is committed, so the page cannot keep saying it is missing.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
RESULT_PAGES = ("docs/loops/*.md", "docs/benchmarks.md", "docs/scale-out.md")  # pages whose unmarked result-like figures fail the check
PENDING = re.compile(r"<!--pending (?P<src>[^>]+?)-->")
CLAIM = re.compile(r"<!--claim (?P<src>[^|>]+?)(?: \| (?P<keys>[^>]*?))?-->(?P<text>.*?)<!--/claim-->", re.S)
UNMARKED = re.compile(r"[+\-−]?\d+(?:\.\d+)? \[[+\-−]?\d|\b\d+(?:\.\d+)?x\b|±")
NUMBER = re.compile(r"^[+\-−]?\d[\d,]*(?:\.(\d+))?%?$")


@dataclass(frozen=True)
class Problem:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _same(quoted: str, value: object) -> bool:
    """``quoted`` as the docs write it equals ``value`` (a cell or a JSON value) at the quote's precision."""
    q, v = quoted.strip(), str(value).strip()
    if q == v or (re.fullmatch(r"[0-9a-f]{7,40}", q) and v.startswith(q)):  # a commit by its short hash
        return True
    m = NUMBER.match(q)
    if not m:
        return False
    try:
        fq = float(q.replace(",", "").replace("−", "-").rstrip("%"))
        fv = float(v.replace(",", "").replace("−", "-").rstrip("%"))
    except ValueError:
        return False
    decimals = len(m.group(1) or "")
    return round(fv, decimals) == round(fq, decimals) and abs(fv - fq) <= 0.5 * 10 ** -decimals + 1e-12


def _tables(path: Path) -> list[list[list[str]]]:
    """The tables of a committed file, each a list of rows with its header first: a CSV is one table, a
    Markdown file has one per block of ``|`` lines (its separator line dropped)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        return [list(csv.reader(io.StringIO(text)))]
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            tables, rows = tables + [rows], []
    return tables


def resolve(src: str, keys: str | None, text: str) -> str | None:
    """None when ``text`` is what ``src`` (and ``keys``) says, else the reason it is not."""
    file, _, pointer = src.strip().partition("#")
    file, _, column = file.partition("@")
    path = ROOT / file
    if not path.is_file():
        return f"no committed file {file}"
    if pointer:
        value: object = json.loads(path.read_text(encoding="utf-8"))
        for part in pointer.split("."):
            try:
                value = value[int(part)] if isinstance(value, list) else value[part]
            except (KeyError, IndexError, ValueError, TypeError):
                return f"{file} has no {pointer}"
        return None if _same(text, value) else f"{file}#{pointer} is {value!r}, the docs say {text!r}"
    if not keys:
        return None if text in path.read_text(encoding="utf-8") else f"{text!r} does not occur in {file}"
    wanted = [k.strip() for k in keys.split(";")]
    tables = _tables(path)
    if column:
        tables = [t for t in tables if column in t[0]]
        if not tables:
            return f"{file} has no column {column!r}"
    rows = [row for t in tables for row in t[1:] if all(k in row for k in wanted)]
    if len(rows) != 1:
        return f"{len(rows)} rows of {file} hold {wanted} (a claim must pick exactly one)"
    if column:
        cell = rows[0][next(t for t in tables if rows[0] in t)[0].index(column)]
        return None if _same(text, cell) else f"{file}@{column} of row {wanted} is {cell!r}, the docs say {text!r}"
    if any(_same(text, cell) for cell in rows[0]):
        return None
    return f"no cell of {file}'s row {wanted} is {text!r} (the row: {' | '.join(rows[0])})"


def check_page(path: Path, results_page: bool) -> list[Problem]:
    """Every marked quote of one page resolved, and (on a results page) no unmarked result-like figure."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    problems = []
    for m in CLAIM.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        reason = resolve(m.group("src"), m.group("keys"), m.group("text").strip("`"))
        if reason:
            problems.append(Problem(f"{rel}:{line}", reason))
    fence = False
    for n, line in enumerate(text.splitlines(), 1):
        fence = fence != line.lstrip().startswith("```")
        if not fence and line.lstrip().startswith("<!--claim"):
            problems.append(Problem(f"{rel}:{n}", "a claim marker starts the line: Markdown ends the paragraph "
                                    "there (an HTML block); join it to the line before"))
    for m in PENDING.finditer(text):
        if (ROOT / m.group("src").strip()).exists():
            problems.append(Problem(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}", f"{m.group('src')} is "
                                    "committed now: replace the placeholder with its table and what it says"))
    if results_page:
        stripped = CLAIM.sub(lambda m: " " * len(m.group(0).split("\n")[0]), text)
        fence = False
        for n, line in enumerate(stripped.splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
            if fence or line.startswith("--8<--"):
                continue
            prose = re.sub(r"`[^`]*`", "", line)
            for hit in UNMARKED.finditer(prose):
                problems.append(Problem(f"{rel}:{n}", f"unmarked result figure {hit.group(0)!r}: quote it with a "
                                        "<!--claim FILE | CELLS-->...<!--/claim--> marker or include its table"))
    return problems


# --- tables generated from committed result files --------------------------------------------------------------

def hcp_lead_by_day(folds: dict[str, Path]) -> str:
    """HCP's cumulative harvest ratio over RND's at the end of each simulated day, per fold and pooled.

    Seed 000 (*Real-time focused extraction of social media users*, section IV-F, Fig. 3) reports HCP's
    lead over RND falling from 4.9x after the first day to 1.8x after the seventh. ``fue_days.csv`` of each
    fold holds the cumulative extracted and relevant users (by reference verdict) per method and day; the
    pooled ratio sums both over the folds."""
    frames = []
    for name, path in folds.items():
        days = pd.read_csv(path)
        frames.append(days[days.method.isin(["HCP", "RND"])].assign(fold=name))
    days = pd.concat(frames)
    rows = []
    for day, g in days.groupby("day"):
        row = {"day": int(day)}
        for name in folds:
            f = g[g.fold == name].set_index("method")
            row[f"HCP / RND, {name}"] = _ratio(f.relevant, f.extracted)
        pooled = g.groupby("method")[["relevant", "extracted"]].sum()
        row["HCP / RND, pooled"] = _ratio(pooled.relevant, pooled.extracted)
        rows.append(row)
    table = pd.DataFrame(rows).to_markdown(index=False)
    sources = ", ".join(f"`{p.relative_to(ROOT)}`" for p in folds.values())
    return ("HCP's cumulative harvest ratio over RND's at the end of each simulated day (reference verdict), "
            f"generated by `python -m bench.claims --write` from {sources}; the paper: 4.9x after day 1, "
            "1.8x after day 7\n\n" + table + "\n")


def _ratio(relevant: pd.Series, extracted: pd.Series) -> str:
    hcp, rnd = relevant["HCP"] / extracted["HCP"], relevant["RND"] / extracted["RND"]
    return f"{hcp / rnd:.2f}" if rnd else "n/a (RND found none)"


FUE_FOLDS = ROOT / "bench/results/fue-folds"
GENERATED = {
    FUE_FOLDS / "hcp_lead_by_day.md": lambda: hcp_lead_by_day(
        {"fold 0": FUE_FOLDS / "fold-0/fue_days.csv", "fold 1": FUE_FOLDS / "fold-1/fue_days.csv"}),
}


def check(docs: Path = ROOT / "docs", write: bool = False) -> list[Problem]:
    """All problems of the docs under ``docs`` against the committed result files (empty: every claim holds)."""
    problems = []
    for target, build in GENERATED.items():
        text = build()
        if write:
            target.write_text(text, encoding="utf-8")
        elif not target.is_file() or target.read_text(encoding="utf-8") != text:
            problems.append(Problem(str(target.relative_to(ROOT)), "generated table is not what its data gives: "
                                    "run python -m bench.claims --write"))
    results = {p for pattern in RESULT_PAGES for p in docs.glob(pattern.removeprefix("docs/"))}
    for page in sorted(docs.rglob("*.md")):
        problems += check_page(page, page in results)
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.claims", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=ROOT / "docs", help="the docs folder (default: docs/)")
    ap.add_argument("--write", action="store_true", help="rewrite the generated tables first")
    args = ap.parse_args(argv)
    problems = check(args.docs.resolve(), write=args.write)
    for p in problems:
        print(p, file=sys.stderr)
    quoted = sum(len(CLAIM.findall(p.read_text(encoding="utf-8"))) for p in args.docs.rglob("*.md"))
    print(f"{quoted} quoted figures, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
