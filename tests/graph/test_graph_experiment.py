"""``focuscrawl experiment graph-estimation`` end to end on a small run, its summary maths, and the Wikispeedia loader."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from focuscrawl.experiments.graph_estimation import main, summarise, table_at


def test_summary_weights_each_value_by_its_true_share():
    by_value = pd.DataFrame(
        dict(graph="g", target="label", sampler="RW", estimator="WCE", fraction=0.1,
             value=["a", "b"], truth=[0.75, 0.25], nrmse=[0.2, 1.0])
    )
    summary = summarise(by_value)
    assert summary.nrmse.tolist() == pytest.approx([0.75 * 0.2 + 0.25 * 1.0])
    table = table_at(summary, 0.1)
    assert table.columns.tolist() == ["sampler", "estimator", "g label"]


def test_small_run_writes_tables_and_plots_and_naive_loses(tmp_path):
    out = tmp_path / "out"
    code = main(["--graphs", "generated", "--samplers", "UNI,RW", "--estimators", "NAIVE,WCE", "--runs", "3", "--fractions", "0.05",
                 "--report-fraction", "0.1", "--output", str(out)])
    assert code == 0
    assert {p.name for p in out.iterdir()} >= {
        "nrmse.csv", "nrmse_by_value.csv", "table_10pct.md", "table_10pct.csv",
        "nrmse_generated_copies.png", "nrmse_generated_label.png",
    }
    table = pd.read_csv(out / "table_10pct.csv").set_index(["sampler", "estimator"])
    assert sorted(table.index) == [("RW", "NAIVE"), ("RW", "WCE"), ("UNI", "NAIVE"), ("UNI", "WCE")]
    for sampler in ("UNI", "RW"):
        for target in ("copies", "label"):
            col = f"generated {target}"
            assert table.loc[(sampler, "WCE"), col] < table.loc[(sampler, "NAIVE"), col]
    assert "| sampler" in (out / "table_10pct.md").read_text()


@pytest.fixture(scope="module")
def wikispeedia(shared_data):
    from focuscrawl.graph.wikispeedia import load_wikispeedia

    return load_wikispeedia(shared_data / "wikispeedia")


def test_wikispeedia_links_as_content(wikispeedia):
    g = wikispeedia
    assert g.num_vertices == 4589  # largest component of the 4,604 articles
    assert (g.content_copies > 0).sum() == 4133 and g.content_copies.max() == 1551
    assert g.content_names[g.content_copies.argmax()] == "United_States"
    truth = g.truth("label")
    assert max(truth, key=truth.get) == "Science" and sum(truth.values()) == pytest.approx(1.0)
    # The special copy of a content sits on its alphabetically first linker.
    us = g.content_names.tolist().index("United_States")
    holder = np.repeat(np.arange(g.num_vertices), np.diff(g.copy_ptr))
    mine = g.copy_content == us
    assert g.vertex_names[holder[mine & g.copy_special]].tolist() == [min(g.vertex_names[holder[mine]])]


def test_wikispeedia_rw_where_the_weighted_estimators_win_and_where_naive_does(wikispeedia):
    """Issue 7, acceptance point 2, measured: a 10% random walk on Wikispeedia. WCE removes naive's
    bias on copy counts and on the label most tied to being linked (Countries, mean in-degree 123
    against 29); on the label distribution as a whole naive's bias stays small (a 10% walk sees most
    contents) and beats WCE's variance, which the walk inflates (WCE's per-draw error has an
    integrated autocorrelation time of 2-3.4 draws: neighbouring articles link to the same rare ones)."""
    from focuscrawl.experiments.graph_estimation import run_grid

    grid = run_grid(wikispeedia, ["RW"], ["NAIVE", "WCE"], [0.1], runs=10, seed=0)
    cell = summarise(grid.assign(graph="w")).set_index(["target", "estimator"]).nrmse
    at = grid.set_index(["target", "estimator", "value"]).sort_index()
    assert cell["copies", "WCE"] < 0.5 * cell["copies", "NAIVE"]
    assert at.nrmse["label", "WCE", "Countries"] < 0.5 * at.nrmse["label", "NAIVE", "Countries"]
    assert at.rel_bias["label", "NAIVE", "Countries"] > 0.3 and abs(at.rel_bias["label", "WCE", "Countries"]) < 0.15
    # The honest negative: over all labels naive is ahead, and its error is mostly bias.
    assert cell["label", "NAIVE"] < cell["label", "WCE"]
    naive = at.loc["label", "NAIVE"]
    assert ((naive.rel_bias**2 * naive.truth).sum() / (naive.nrmse**2 * naive.truth).sum()) > 0.7
