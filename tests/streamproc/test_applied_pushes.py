"""When a process applied each push of a feedback topic (focuscrawl.stream.pushes), in its status and metrics."""

from __future__ import annotations

import argparse

from focuscrawl.stream.pushes import STATUS_KEY, AppliedPushes


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_records_of_one_push_fold_into_one_entry_and_a_later_push_starts_another():
    clock = Clock(1000.0)
    pushes = AppliedPushes(gap_ms=10_000, clock=clock)
    # push 1: three records sent within 2 s, applied 1.5-3 s after the first was sent
    for sent_ms, now in ((998_500, 1000.0), (999_000, 1000.5), (1_000_500, 1002.0)):
        clock.t = now
        lag = pushes.applied("scores", sent_ms)
    assert lag == 1.5
    # push 2, a minute later; and a record of another topic in between
    clock.t = 1003.0
    pushes.applied("schedule", 1_002_000)
    clock.t = 1062.0
    pushes.applied("scores", 1_061_000)
    assert pushes.applied("scores", None) is None  # no timestamp: not counted
    got = pushes.status()[STATUS_KEY]
    assert got == [
        {"topic": "scores", "records": 3, "first_record_ms": 998_500, "last_record_ms": 1_000_500,
         "first_applied_ms": 1_000_000, "last_applied_ms": 1_002_000},
        {"topic": "scores", "records": 1, "first_record_ms": 1_061_000, "last_record_ms": 1_061_000,
         "first_applied_ms": 1_062_000, "last_applied_ms": 1_062_000},
        {"topic": "schedule", "records": 1, "first_record_ms": 1_002_000, "last_record_ms": 1_002_000,
         "first_applied_ms": 1_003_000, "last_applied_ms": 1_003_000},
    ]


def test_only_the_last_pushes_per_topic_are_kept():
    pushes = AppliedPushes(keep=3, gap_ms=1000, clock=Clock(100.0))
    for i in range(5):
        pushes.applied("t", i * 60_000)
    assert [p["first_record_ms"] for p in pushes.status()[STATUS_KEY]] == [120_000, 180_000, 240_000]


def test_a_process_reports_its_applied_pushes_in_its_status_and_as_a_histogram(cfg, tmp_path):
    from focuscrawl.stream.process import StreamProcess

    args = argparse.Namespace(status_file=tmp_path / "s.json", metrics_port=0)
    proc = StreamProcess("t", args, cfg, install_signals=False)
    assert STATUS_KEY not in proc.write_status()  # no feedback topic followed: no entry
    import time

    sent = int(time.time() * 1000) - 2000
    proc.push_applied("focuscrawl.t", sent)
    proc.push_applied("focuscrawl.t", sent + 10)
    status = proc.write_status()
    [push] = status[STATUS_KEY]
    assert push["records"] == 2 and push["last_record_ms"] == sent + 10 and push["last_applied_ms"] >= sent + 2000
    assert status["metrics"]["push_apply_lag_seconds_count"] == 2
    assert status["metrics"]["push_apply_lag_seconds_sum"] >= 3.9
