"""``focuscrawl report outlinks`` writes the paper's table, plot, importances and LBLA comparison."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from focuscrawl.reports.outlinks import main


@pytest.mark.slow
def test_report_on_small_synthetic_world(tmp_path, capsys):
    assert main(["--pages", "150", "--periods", "7", "--history-size", "3", "--n-estimators", "10",
                 "--out", str(tmp_path)]) == 0
    rho = pd.read_csv(tmp_path / "spearman.csv", header=[0, 1], index_col=0)
    assert len(rho) == 13  # 5 learned models x (all, LBLA) + NNL-Av, NNL-Pr, CCR
    assert set(rho.columns.get_level_values(0)) == {"int", "ext"}
    assert set(rho.columns.get_level_values(1)) == {"LCR", "NL", "NNL"}
    # NNL-Av is the mean of the look-back window, whose rate defines most of LCR: close to 1.
    assert rho.loc["NNL-Av", ("int", "LCR")] > 0.8
    png = (tmp_path / "precision_at_k.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    results = json.loads((tmp_path / "results.json").read_text())
    assert len(results["pk_curve"]["int/NNL-ET_LBLA"]) == 100
    text = (tmp_path / "report.md").read_text()
    assert "## LBLA versus all features" in text and "| int | NNL-ET | NNL |" in text
    assert "around_" in text  # look-around features appear among the importances
    assert "written to" in capsys.readouterr().out
