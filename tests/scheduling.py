"""Which tests make test's pytest-xdist workers take together, and in what order: each file's seconds in the last run.

make test's workers take whole files (``--dist loadfile``), each the next in the queue as it frees up. In collection
order the one-test files that start a cluster, three brokers or a fault round came last, and one worker ran them
alone at the end. ``tests/conftest.py`` sorts them longest first by ``tests/durations.json``, which
``make durations`` rewrites from the JUnit files of the last ``make test`` (``var/junit*.xml``), per phase; a file it
has no seconds for runs after those it has.

Tests that share a session engine costly to start go to one worker together (``SHARED_ENGINES``): each worker that
ran one of the Airflow tests' files started an Airflow of its own (~50 CPU-s; two in the clean-clone run of 0e52545).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "durations.json"
# A session fixture (tests/conftest.py) costly to start, and the files whose tests use it. xdist's own way (an
# ``xdist_group`` marker, --dist loadgroup) names the group in the test's id, which pytest 9.2 no longer reads, so the
# controller (which collects nothing) groups by file; make test's workers check the list when they collect.
SHARED_ENGINES = {"airflow": frozenset({"tests/platform/test_up_unpause.py", "tests/ui/test_airflow_browser.py",
                                         "tests/platform/test_platform_e2e.py"})}  # the e2e's: make test runs it alone


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


def file_of_item(item) -> str:
    return item.nodeid.split("::")[0]


def scope_of_file(path: str) -> str:
    """The unit a worker takes a file in: its group, if it is one of a shared engine's files, or the file alone."""
    return next((f"{engine} group" for engine, files in SHARED_ENGINES.items() if path in files), path)


def scope_of(item) -> str:
    return scope_of_file(file_of_item(item))


def group_ends(item, nextitem) -> str | None:
    """The shared engine whose group ``item`` is the last test of (the next is another unit's, or none)."""
    scope = scope_of(item)
    if nextitem is not None and scope_of(nextitem) == scope:
        return None
    return next((engine for engine in SHARED_ENGINES if scope == f"{engine} group"), None)


def check_shared_engines(items) -> None:
    """Every file with a test that uses a shared engine is in that engine's group: else an error naming the fix."""
    for engine, files in SHARED_ENGINES.items():
        using = {file_of_item(i) for i in items if engine in getattr(i, "fixturenames", ())}
        if missing := sorted(using - files):
            raise pytest.UsageError(f"{', '.join(missing)} use the session's {engine}: add them to SHARED_ENGINES"
                                    f"[{engine!r}] in tests/scheduling.py, so that one worker runs them together")


def file_seconds(items) -> dict[str, float]:
    """Each collected file's recorded seconds: those of its phase (a file can hold tests of both)."""
    record, phases = load(), defaultdict(set)
    for item in items:
        phases[file_of_item(item)].add("integration" if item.get_closest_marker("integration") else "unit")
    return {path: sum(record.get(phase, {}).get(path, 0.0) for phase in kinds) for path, kinds in phases.items()}


def longest_files_first(items: list) -> None:
    """Sort pytest's collected items in place, each worker's unit (a file, or a group of files) by its recorded
    seconds, longest first; stable, so a unit's tests keep their order and units with the same seconds (none
    recorded: 0) their collection order."""
    seconds, files = file_seconds(items), defaultdict(set)  # dicts keep the order scopes are first met in
    for item in items:
        files[scope_of(item)].add(file_of_item(item))
    rank = {scope: (-sum(seconds[f] for f in in_scope), first) for first, (scope, in_scope) in enumerate(files.items())}
    items.sort(key=lambda item: rank[scope_of(item)])


def scheduler(config, log):
    """``--dist loadfile`` as make test runs it, but a shared engine's files go to one worker together."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of_file(super()._split_scope(nodeid))

    return FilesAndGroups(config, log)


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
