"""The benchmarks cite what a reader can open (a docs page, a paper by section), never a tracker's issue number."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
ISSUE = re.compile(r"\bissues? +(?:#\s*)?\d+", re.IGNORECASE)


def issue_citations(text: str) -> list[str]:
    return [m.group(0) for m in ISSUE.finditer(text)]


def test_the_check_finds_an_issue_number_and_spares_a_docs_page():
    assert issue_citations('"""Scale-out (issue 10, point 5)."""\n# see Issue #18\n') == ["issue 10", "Issue #18"]
    assert issue_citations('"""Scale-out (docs/scale-out.md; seed 002 Section 7)."""') == []


def test_no_benchmark_cites_an_issue_number():
    found = {p.name: issue_citations(p.read_text()) for p in sorted(BENCH.glob("*.py"))}
    found = {name: hits for name, hits in found.items() if hits}
    assert not found, f"cite the docs page or the paper's section instead: {found}"
