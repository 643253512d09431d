"""The FUE report (seed 000, section IV-F): harvest ratio, users per hour, raw and smoothed ratio to
RND, per simulated day, the paper's verdicts, and the same report rebuilt from the Delta table."""

from __future__ import annotations

import pandas as pd
import pytest

from focuscrawl.fue.metrics import Extraction
from focuscrawl.fue.report import (
    baseline_note, build, events_from_table, paper_agreement, paper_verdict, smoothed_ratio, with_ratio, write,
)

DAY = 86400.0


def ev(method: str, i: int, relevant: bool, at: float) -> Extraction:
    return Extraction(method, f"{method}{i}", at, relevant)


def test_summary_harvest_ratio_speed_and_ratio_to_rnd():
    events = [ev("RND", i, i == 0, 600 + i) for i in range(4)] + [ev("HCP", i, i < 3, 4000 + i) for i in range(4)]
    report = build(events, duration=7200)
    s = report.summary.set_index("method")
    assert (s.loc["HCP", "harvest_ratio"], s.loc["RND", "harvest_ratio"]) == (0.75, 0.25)
    assert (s.loc["HCP", "ratio_to_RND"], s.loc["RND", "ratio_to_RND"]) == (3.0, 1.0)
    assert s.loc["HCP", "users_per_hour"] == 2.0 and list(report.summary.method) == ["HCP", "RND"]
    assert s.loc["HCP", "ratio_to_RND_smoothed"] == pytest.approx(round((4 / 6) / (2 / 6), 3))
    assert (s.loc["HCP", "paper_verdict"], s.loc["RND", "paper_verdict"]) == ("promising", "")
    hcp = report.curve[report.curve.method == "HCP"].reset_index()
    assert list(hcp.extracted) == [0, 4] and list(hcp.users_per_hour) == [0.0, 4.0]


def test_days_count_each_day_and_cumulate_and_day_one_is_compared():
    events = ([ev("RND", i, i == 0, 100 + i) for i in range(10)]                 # day 1: 1 of 10
              + [ev("RND", 10 + i, i < 3, DAY + 100 + i) for i in range(10)]     # day 2: 3 of 10
              + [ev("HCP", i, i < 5, 100 + i) for i in range(10)]                # day 1: 5 of 10
              + [ev("HCP", 10 + i, i < 1, DAY + 100 + i) for i in range(10)])    # day 2: 1 of 10
    report = build(events, duration=2 * DAY)
    days = report.days.set_index(["method", "day"])
    assert days.loc[("HCP", 2), ["extracted_that_day", "relevant_that_day", "extracted", "relevant"]].tolist() == \
        [10, 1, 20, 6]
    assert days.loc[("HCP", 2), "harvest_ratio_that_day"] == 0.1 and days.loc[("HCP", 2), "harvest_ratio"] == 0.3
    assert days.loc[("HCP", 1), "ratio_to_RND"] == 5.0 and days.loc[("HCP", 2), "ratio_to_RND"] == 1.5
    assert report.summary.set_index("method").loc["HCP", "ratio_to_RND_day1"] == 5.0
    assert "Cumulative harvest ratio / RND (smoothed) at the end of each simulated day" in report.markdown()


def test_smoothed_ratio_is_defined_when_rnd_found_none():
    # HCP 9 of 179, RND 0 of 183 (a 4-hour run): (10/181) / (1/185)
    assert smoothed_ratio(9, 179, 0, 183) == pytest.approx(10.2210, abs=1e-4)
    # close to the raw ratio (2.0) once both found enough
    assert smoothed_ratio(200, 1000, 100, 1000) == pytest.approx((201 / 1002) / (101 / 1002))
    assert smoothed_ratio(0, 50, 0, 50) == 1.0


def test_ratio_per_hour_joins_rnd_of_the_same_hour_and_raw_is_empty_while_rnd_found_none():
    curve = pd.DataFrame({"method": ["HCP", "HCP", "RND", "RND"], "hours": [1.0, 2.0, 1.0, 2.0],
                          "extracted": [8, 18, 10, 20], "relevant": [1, 2, 0, 1]})
    out = with_ratio(curve, ("hours",)).set_index(["method", "hours"])
    assert out.ratio_to_RND_smoothed["HCP", 1.0] == pytest.approx(round((2 / 10) / (1 / 12), 3))
    assert out.ratio_to_RND_smoothed["HCP", 2.0] == pytest.approx(round((3 / 20) / (2 / 22), 3))
    assert pd.isna(out.ratio_to_RND["HCP", 1.0]) and out.ratio_to_RND["HCP", 2.0] == pytest.approx(round(2 / 18 / 0.05, 3))
    assert (out.ratio_to_RND_smoothed["RND"] == 1.0).all()


def test_ratio_without_rnd_is_nan_and_said_so():
    table = pd.DataFrame({"method": ["HCP"], "hours": [1.0], "extracted": [10], "relevant": [2]})
    assert with_ratio(table)[["ratio_to_RND", "ratio_to_RND_smoothed"]].isna().all().all()
    assert baseline_note(table) == "RND was not run: no baseline to compare with"


def test_baseline_note_says_whether_rnd_found_anyone():
    curve = pd.DataFrame({"method": ["RND"] * 3, "hours": [1.0, 2.0, 3.0], "extracted": [5, 9, 14],
                          "relevant": [0, 0, 0]})
    assert baseline_note(curve).startswith("RND found none yet (0 relevant of 14 extracted)")
    curve.loc[2, "relevant"] = 1
    assert baseline_note(curve).startswith("RND found its first relevant user by hour 3")


def test_paper_agreement_counts_promising_over_discarded_pairs():
    assert paper_verdict("N06") == "promising" and paper_verdict("LCP") == "discarded" and paper_verdict("RND") == ""
    assert paper_agreement({"HCP": 0.1, "N06": 0.05, "LCP": 0.01, "LAS": 0.02}) == 1.0
    assert paper_agreement({"HCP": 0.1, "N06": 0.01, "LCP": 0.05, "LAS": 0.02}) == 0.5
    assert paper_agreement({"HCP": 0.02, "LAS": 0.02}) == 0.5   # a tie counts half
    assert paper_agreement({"HCP": 0.1, "RND": 0.01}) is None   # no discarded method run


def test_written_files_and_a_drawn_figure(tmp_path):
    events = [ev(m, i, i % k == 0, 300 * i) for m, k in (("RND", 9), ("HCP", 2), ("LCP", 20)) for i in range(60)]
    report = build(events, duration=5 * 3600)
    write(report, tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"fue_table.csv", "fue_table.md", "fue_curve.csv",
                                                   "fue_days.csv", "harvest_ratio.png"}
    assert (tmp_path / "harvest_ratio.png").stat().st_size > 20_000
    assert "Agreement with the paper's verdicts" in (tmp_path / "fue_table.md").read_text()
    assert report.agreement == 1.0


def test_events_come_back_from_the_delta_table_of_one_run(tmp_path):
    from focuscrawl.lake.delta_sink import DeltaSink, StreamRecord
    from focuscrawl.fue.pipeline import STATS_TABLE, StatsEvent

    uri = str(tmp_path / "fue_extractions")
    events = [StatsEvent(run, m, f"u{i}", 60.0 * i, 0.0, 0.1, 5, 1, 0.95 if i == 1 else 0.2, i == 1)
              for run in ("a", "b") for m in ("RND", "HCP") for i in range(3)]
    sink = DeltaSink(uri, STATS_TABLE, "fue-stats-test", dead_letter_uri=str(tmp_path / "dead"))
    sink.write([StreamRecord("stats", 0, n, e.to_json(), e.user.encode()) for n, e in enumerate(events)])
    back = events_from_table(uri, "b")
    assert sorted((e.method, e.user, e.at, e.relevant) for e in back)[:3] == \
        [("HCP", "u0", 0.0, False), ("HCP", "u1", 60.0, True), ("HCP", "u2", 120.0, False)]
    assert len(back) == 6
    with pytest.raises(LookupError, match="run 'c' has no rows.*SELECT DISTINCT run_id"):
        events_from_table(uri, "c")
    with pytest.raises(FileNotFoundError, match="run `focuscrawl experiment fue` first"):
        events_from_table(str(tmp_path / "none"), "a")
