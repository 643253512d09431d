"""The order make test's xdist workers take files in (tests/durations.py): longest first by the last run's seconds,
per phase, each file's tests in their own order."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import durations

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_records" name="test_a" time="1.5"/>
<testcase classname="tests.test_records" name="test_b" time="2.0"/>
<testcase classname="tests.fetch.test_warc.TestNothing" name="test_c" time="4.25"/>
<testcase classname="tests.gone.test_removed" name="test_d" time="9.0"/>
</testsuite></testsuites>"""


def item(nodeid: str, integration: bool = False) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: integration and name == "integration" or None)


def test_seconds_add_up_per_file_and_a_class_name_maps_to_its_file(tmp_path):
    (tmp_path / "junit.xml").write_text(JUNIT)
    assert durations.seconds_per_file([tmp_path / "junit.xml"]) == {"tests/fetch/test_warc.py": 4.2,
                                                                       "tests/test_records.py": 3.5}


def test_make_durations_records_each_phase_from_its_junit_file(tmp_path, monkeypatch):
    monkeypatch.setattr(durations, "RECORD", tmp_path / "durations.json")
    assert durations.main([str(tmp_path)]) == 1  # no JUnit files yet: says to run make test
    for name in ("junit-unit.xml", "junit.xml", "junit-platform.xml"):
        (tmp_path / name).write_text(JUNIT.replace("test_records", "test_records" if name == "junit-unit.xml"
                                                   else "test_config"))
    assert durations.main([str(tmp_path)]) == 0
    record = json.loads((tmp_path / "durations.json").read_text())
    assert record["unit"]["tests/test_records.py"] == 3.5
    assert record["integration"]["tests/test_config.py"] == 7.0  # the e2e's file and the others' add up
    assert record["integration"]["tests/fetch/test_warc.py"] == 8.5


def test_files_run_longest_first_by_their_phases_seconds_and_keep_their_tests_order(tmp_path, monkeypatch):
    record = {"unit": {"a.py": 5.0, "b.py": 1.0, "mixed.py": 100.0}, "integration": {"b.py": 50.0, "mixed.py": 2.0}}
    monkeypatch.setattr(durations, "RECORD", tmp_path / "durations.json")
    (tmp_path / "durations.json").write_text(json.dumps(record))
    items = [item("new.py::t1"), item("a.py::t1"), item("a.py::t2"), item("b.py::t1", integration=True),
             item("mixed.py::t1", integration=True), item("mixed.py::t2", integration=True), item("c.py::t1")]
    durations.longest_files_first(items)
    # mixed.py's unit tests are deselected here: only its integration seconds count
    assert [i.nodeid for i in items] == ["b.py::t1", "a.py::t1", "a.py::t2", "mixed.py::t1", "mixed.py::t2",
                                         "new.py::t1", "c.py::t1"]


@pytest.mark.parametrize("phase", ["unit", "integration"])
def test_the_committed_record_names_only_files_that_exist(phase):
    record = durations.load()[phase]
    assert record and all((durations.ROOT / path).is_file() for path in record)
    assert list(record.values()) == sorted(record.values(), reverse=True)
