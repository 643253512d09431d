"""Each test file's seconds in the last `make test`, the order its pytest-xdist workers take files in.

make test's workers take whole files (``--dist loadfile``), each the next in the queue as it frees up. In collection
order the one-test files that start a cluster, three brokers or a fault round came last, and one worker ran them
alone at the end. ``tests/conftest.py`` sorts the files longest first by ``tests/durations.json``, which
``make durations`` rewrites from the JUnit files of the last ``make test`` (``var/junit*.xml``), per phase; a file it
has no seconds for runs after those it has.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "durations.json"


def file_of(classname: str) -> str | None:
    """``tests.bench.test_x`` or ``tests.bench.test_x.TestClass`` -> ``tests/bench/test_x.py`` (if it exists)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (ROOT / path).is_file():
            return path
    return None


# make test's phases: the JUnit file each writes (Makefile), by whether its tests are marked integration
PHASES = {"unit": ["junit-unit.xml"], "integration": ["junit-platform.xml", "junit.xml"]}


def seconds_per_file(junit_files: list[Path]) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for junit in junit_files:
        for case in ET.parse(junit).getroot().iter("testcase"):
            if path := file_of(case.get("classname", "")):
                seconds[path] += float(case.get("time", 0))
    return {path: round(s, 1) for path, s in sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))}


def load() -> dict[str, dict[str, float]]:
    return json.loads(RECORD.read_text()) if RECORD.exists() else {}


def file_seconds(items) -> dict[str, float]:
    """Each collected file's recorded seconds: those of its phase (a file can hold tests of both)."""
    record, phases = load(), defaultdict(set)
    for item in items:
        phases[item.nodeid.split("::")[0]].add("integration" if item.get_closest_marker("integration") else "unit")
    return {path: sum(record.get(phase, {}).get(path, 0.0) for phase in kinds) for path, kinds in phases.items()}


def longest_files_first(items: list) -> None:
    """Sort pytest's collected items in place, files by their recorded seconds, longest first; stable, so each
    file's tests keep their order and files with the same seconds (none recorded: 0) their collection order."""
    seconds = file_seconds(items)
    items.sort(key=lambda item: -seconds[item.nodeid.split("::")[0]])


def main(argv: list[str]) -> int:
    var = Path(argv[0]) if argv else ROOT / "var"
    missing = [name for names in PHASES.values() for name in names if not (var / name).exists()]
    if missing:
        print(f"no {', '.join(missing)} in {var}: run `make test` first (it writes them)", file=sys.stderr)
        return 1
    record = {phase: seconds_per_file([var / name for name in names]) for phase, names in PHASES.items()}
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {RECORD} from {var}/junit*.xml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
