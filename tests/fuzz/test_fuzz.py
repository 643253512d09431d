"""Fuzzing in every test run: every saved crash replays without an exception, and each target gets
a short coverage-guided run (seconds; ``make fuzz`` runs 100,000 inputs each)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fuzz.targets import TARGETS  # noqa: E402

REGRESSIONS = Path(__file__).parent / "regressions"
CASES = sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file() and p.parent.name in TARGETS)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:20]}")
def test_saved_crash_no_longer_crashes(case):
    TARGETS[case.parent.name](case.read_bytes())


def test_a_saved_crash_exists_for_the_bug_fuzzing_found():
    # robots.txt "Sitemap: http://example[.org/..." raised ValueError from urljoin before the fix.
    assert any(p.parent.name == "robots" for p in CASES)


@pytest.mark.slow
def test_every_target_survives_a_short_fuzzing_run(tmp_path):
    summary = tmp_path / "fuzz.json"
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "run.py"), "--seconds", "2", "--summary", str(summary)],
                          capture_output=True, text=True, timeout=600)
    print(proc.stdout)
    written = json.loads(summary.read_text())
    results = written["results"]
    assert written["code"]["commit"] and written["machine"]["cpus"] and not written["draft"]  # which code, where
    assert [r["target"] for r in results] == list(TARGETS)
    assert all(r["inputs"] > 0 for r in results), proc.stdout
    assert proc.returncode == 0, f"new crashes saved under tests/fuzz/regressions: {proc.stdout}"
