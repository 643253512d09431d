"""Which tests make test's xdist workers take together and in what order (tests/scheduling.py): whole files, or the
files that share the session's Airflow as one group; longest first by the last run's seconds, per phase, each
file's tests in their own order."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import scheduling

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
    assert scheduling.seconds_per_file([tmp_path / "junit.xml"]) == {"tests/fetch/test_warc.py": 4.2,
                                                                       "tests/test_records.py": 3.5}


def test_make_durations_records_each_phase_from_its_junit_file(tmp_path, monkeypatch):
    monkeypatch.setattr(scheduling, "RECORD", tmp_path / "durations.json")
    assert scheduling.main([str(tmp_path)]) == 1  # no JUnit files yet: says to run make test
    for name in ("junit-unit.xml", "junit.xml", "junit-platform.xml"):
        (tmp_path / name).write_text(JUNIT.replace("test_records", "test_records" if name == "junit-unit.xml"
                                                   else "test_config"))
    assert scheduling.main([str(tmp_path)]) == 0
    record = json.loads((tmp_path / "durations.json").read_text())
    assert record["unit"]["tests/test_records.py"] == 3.5
    assert record["integration"]["tests/test_config.py"] == 7.0  # the e2e's file and the others' add up
    assert record["integration"]["tests/fetch/test_warc.py"] == 8.5


def test_files_run_longest_first_by_their_phases_seconds_and_keep_their_tests_order(tmp_path, monkeypatch):
    record = {"unit": {"a.py": 5.0, "b.py": 1.0, "mixed.py": 100.0}, "integration": {"b.py": 50.0, "mixed.py": 2.0}}
    monkeypatch.setattr(scheduling, "RECORD", tmp_path / "durations.json")
    (tmp_path / "durations.json").write_text(json.dumps(record))
    items = [item("new.py::t1"), item("a.py::t1"), item("a.py::t2"), item("b.py::t1", integration=True),
             item("mixed.py::t1", integration=True), item("mixed.py::t2", integration=True), item("c.py::t1")]
    scheduling.longest_files_first(items)
    # mixed.py's unit tests are deselected here: only its integration seconds count
    assert [i.nodeid for i in items] == ["b.py::t1", "a.py::t1", "a.py::t2", "mixed.py::t1", "mixed.py::t2",
                                         "new.py::t1", "c.py::t1"]


def test_a_group_runs_as_one_unit_ranked_by_its_files_seconds_together(tmp_path, monkeypatch):
    record = {"integration": {"a.py": 30.0, "b.py": 50.0, "x.py": 20.0, "y.py": 25.0}}
    monkeypatch.setattr(scheduling, "RECORD", tmp_path / "durations.json")
    monkeypatch.setattr(scheduling, "SHARED_ENGINES", {"airflow": frozenset({"x.py", "y.py"})})
    (tmp_path / "durations.json").write_text(json.dumps(record))
    items = [item("x.py::t", True), item("a.py::t", True), item("b.py::t", True), item("y.py::t1", True),
             item("y.py::t2", True)]
    scheduling.longest_files_first(items)
    # the group's 20 + 25 s rank it below b.py's 50 and above a.py's 30, though each of its files is shorter
    assert [i.nodeid for i in items] == ["b.py::t", "x.py::t", "y.py::t1", "y.py::t2", "a.py::t"]


def test_a_file_using_the_session_airflow_outside_its_group_is_an_error_naming_the_fix(monkeypatch):
    monkeypatch.setattr(scheduling, "SHARED_ENGINES", {"airflow": frozenset({"x.py"})})
    test = lambda nodeid, *names: SimpleNamespace(nodeid=nodeid, fixturenames=("cfg", *names))  # noqa: E731
    scheduling.check_shared_engines([test("x.py::t", "airflow"), test("z.py::t", "spark")])
    with pytest.raises(pytest.UsageError, match=r"z.py use the session's airflow: add them to "
                                                r"SHARED_ENGINES\['airflow'\] in tests/scheduling.py"):
        scheduling.check_shared_engines([test("x.py::t", "airflow"), test("z.py::t", "cfg", "airflow")])


def test_a_worker_takes_a_group_or_a_whole_file_and_other_modes_keep_xdists_scheduler(monkeypatch):
    monkeypatch.setattr(scheduling, "SHARED_ENGINES", {"airflow": frozenset({"tests/ui/test_a.py"})})
    options = {"dist": "loadfile", "tx": ["2*popen"]}
    config = SimpleNamespace(getvalue=options.get)
    sched = scheduling.scheduler(config, None)
    assert sched._split_scope("tests/ui/test_a.py::test_x[p]") == "airflow group"
    assert sched._split_scope("tests/b.py::TestC::test_z") == "tests/b.py"
    options["dist"] = "load"
    assert scheduling.scheduler(config, None) is None


def test_a_shared_engine_stops_after_the_last_test_of_its_group(monkeypatch):
    monkeypatch.setattr(scheduling, "SHARED_ENGINES", {"airflow": frozenset({"x.py", "y.py"})})
    x, y1, y2, a = item("x.py::t"), item("y.py::t1"), item("y.py::t2"), item("a.py::t")
    assert [scheduling.group_ends(i, after) for i, after in [(x, y1), (y1, y2), (y2, a), (a, None)]] == \
        [None, None, "airflow", None]
    assert scheduling.group_ends(y2, None) == "airflow"  # the worker's last test


def test_the_shared_engines_files_exist_and_use_it():
    for engine, files in scheduling.SHARED_ENGINES.items():
        for path in files:
            assert engine in (scheduling.ROOT / path).read_text(), path


@pytest.mark.parametrize("phase", ["unit", "integration"])
def test_the_committed_record_names_only_files_that_exist(phase):
    record = scheduling.load()[phase]
    assert record and all((scheduling.ROOT / path).is_file() for path in record)
    assert list(record.values()) == sorted(record.values(), reverse=True)
