"""A short experiment on the world with real Kafka and Delta (issue 4, acceptance).

Seed ``000_c12b299f5bad9cdf.txt`` section IV: HCP must beat RND's harvest ratio and LCP (the
paper's safety check) must fall below it; every method extracts users. Posts and stats travel
through real Kafka topics; the verdicts land exactly once in the ``fue_extractions`` Delta table.
"""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from focuscrawl.experiments import fue

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def experiment(cfg, kafka_broker, tmp_path_factory):
    out = tmp_path_factory.mktemp("fue")
    table = str(out / "lake" / "fue_extractions")
    rc = fue.main([
        "--methods", "RND,HCP,LCP,HAC", "--duration", "2h", "--step", "10m", "--budget", "240",
        "--data", "none", "--users", "10000", "--base-rate", "0.1", "--train-donors", "30,120",
        "--kafka", cfg.kafka_bootstrap, "--table", table, "--output", str(out / "report"), "--no-progress",
    ])
    assert rc == 0
    return out, DeltaTable(table).to_pyarrow_table().to_pandas()


def test_hcp_beats_rnd_and_lcp_falls_below(experiment):
    _, rows = experiment
    hr = rows.groupby("method")["relevant"].mean()
    print("\nharvest ratio per method:\n" + hr.to_string())
    assert hr["HCP"] > hr["RND"] > hr["LCP"]
    assert hr["HCP"] >= 2 * hr["RND"]


def test_every_method_extracts_unique_users_exactly_once(experiment):
    _, rows = experiment
    counts = rows.groupby("method").size()
    assert set(counts.index) == {"RND", "HCP", "LCP", "HAC"}
    assert (counts >= 20).all(), counts.to_dict()
    # A chooser hands out each user once; the sink appends each Kafka record once.
    assert not rows.duplicated(["method", "user"]).any()
    assert not rows.duplicated(["kafka_topic", "kafka_partition", "kafka_offset"]).any()
    assert rows["run_id"].nunique() == 1 and rows["pages"].min() >= 2


def test_report_files_agree_with_the_table(experiment):
    import pandas as pd

    out, rows = experiment
    table = pd.read_csv(out / "report" / "fue_table.csv").set_index("method")
    assert table.loc["RND", "ratio_to_RND"] == 1.0
    for method, group in rows.groupby("method"):
        assert table.loc[method, "extracted"] == len(group)
        assert table.loc[method, "relevant"] == int(group["relevant"].sum())
    assert (out / "report" / "harvest_ratio.png").stat().st_size > 10_000
    assert "| HCP" in (out / "report" / "fue_table.md").read_text()


def test_report_rebuilt_from_the_delta_table_equals_the_runs_own(experiment):
    """``focuscrawl report fue --run-id`` reads the run back from Delta and writes the same tables."""
    import pandas as pd

    from focuscrawl.reports import fue as fue_report

    out, rows = experiment
    run_id = rows["run_id"].iloc[0]
    rc = fue_report.main(["--run-id", run_id, "--duration", "2h", "--table", str(out / "lake" / "fue_extractions"),
                          "--out", str(out / "rebuilt")])
    assert rc == 0
    for name in ("fue_table.csv", "fue_curve.csv", "fue_days.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / "rebuilt" / name), pd.read_csv(out / "report" / name))
