"""``focuscrawl experiment ephemeral`` writes its plot and tables; on the default world ours wins (issue 6)."""

import pandas as pd
import pytest

from focuscrawl.ephemeral.simulate import DAY, WorldSpec
from focuscrawl.experiments.ephemeral import main, quality_table, run_all


def test_main_writes_plot_and_tables(tmp_path):
    assert main(["--output", str(tmp_path), "--days", "0.5", "--sources", "5", "--budget", "0.01",
                 "--warmup-days", "0.1", "--window-hours", "1"]) == 0
    assert (tmp_path / "dynamic_quality.png").stat().st_size > 10_000
    table = pd.read_csv(tmp_path / "overall_quality.csv")
    assert sorted(table.scheduler) == ["BFS", "FIXED_QUOTA", "LAGRANGE", "LAMBDA", "ORACLE"]
    assert table.set_index("scheduler").loc["ORACLE", "share_of_oracle"] == 1.0
    assert "| scheduler" in (tmp_path / "overall_quality.md").read_text()


@pytest.mark.slow
def test_default_world_acceptance():
    """Ours beats every non-oracle baseline, reaches 80% of the oracle; fixed quotas clearly worse."""
    spec = WorldSpec()
    table = quality_table(run_all(spec, 0.025, ["BFS", "FIXED_QUOTA", "LAGRANGE", "LAMBDA", "ORACLE"], 6 * 3600),
                          DAY, spec.days * DAY).set_index("scheduler")
    ours = table.loc["LAGRANGE", "overall_quality"]
    assert ours > table.drop(["LAGRANGE", "ORACLE"]).overall_quality.max()
    assert table.loc["LAGRANGE", "share_of_oracle"] >= 0.8
    assert table.loc["FIXED_QUOTA", "overall_quality"] < 0.92 * ours
