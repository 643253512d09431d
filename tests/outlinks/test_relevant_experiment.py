"""``focuscrawl experiment outlinks-relevant``: the metric on a hand-made case, the paired differences, and a
smoke run whose tables ``focuscrawl report outlinks-relevant --run`` rebuilds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from focuscrawl.experiments.outlinks_relevant import ALL, RELEVANT, differences, main, per_seed, revisit


def test_revisit_counts_relevant_and_all_new_outlinks_per_revisited_page():
    scores = np.array([0.9, 0.1, 0.5, 0.7, 0.0])
    new = np.array([4, 9, 2, 0, 1])
    relevant_new = np.array([1, 9, 2, 0, 0])
    # Top 2 by score: pages 0 and 3: 1 relevant new link and 4 new links over 2 revisits.
    assert revisit(scores, new, relevant_new, 2, seed=0) == (0.5, 2.0)
    assert revisit(scores, new, relevant_new, 3, seed=0) == (1.0, 2.0)


def test_per_seed_rankings_oracle_random_and_paired_differences():
    rows = []
    for seed in range(3):
        truth = pd.DataFrame({"url": [f"u{i}" for i in range(10)], "new": [5] * 5 + [1] * 5,
                              "relevant_new": [0] * 5 + [1] * 5})
        # The all target prefers the busy pages, the relevant one the pages with relevant links.
        rows.append(truth.assign(seed=seed, target=ALL, judge="-", model="M", predicted=truth.new))
        rows.append(truth.assign(seed=seed, target=RELEVANT, judge="J", model="M", predicted=truth.relevant_new + seed * 0.01))
    seeds = per_seed(pd.concat(rows), [0.2, 0.5])
    cell = seeds[(seeds.budget == "50%") & (seeds.seed == 0)].set_index("model")
    assert cell.loc["oracle", "relevant_per_revisit"] == 1.0 and cell.loc["random", "relevant_per_revisit"] == 0.5
    diff = differences(seeds).set_index("budget")
    assert diff.loc["50%", "relevant_per_revisit"] == 1.0 and diff.loc["50%", "new_per_revisit"] == -4.0
    assert (diff.family == 2).all()
    assert diff.loc["50%", "relevant_per_revisit_ordering"] == "more" and diff.loc["50%", "new_per_revisit_ordering"] == "fewer"


def test_experiment_writes_its_outputs_and_the_report_rebuilds_them(tmp_path):
    from focuscrawl.experiments.run_record import read_run_json
    from focuscrawl.reports.outlinks_relevant import main as report

    assert main(["--pages", "120", "--periods", "7", "--history-size", "3", "--seeds", "0,1", "--n-estimators", "5",
                 "--dimensions", "10", "--budgets", "0.1,0.2", "--output", str(tmp_path)]) == 0
    record = read_run_json(tmp_path, expect="outlinks-relevant")
    assert record["seeds"]["worlds"] == [0, 1] and record["parameters"]["labels"]["share_mean"] == 0.5
    rows = pd.read_csv(tmp_path / "revisits.csv.gz")
    assert set(zip(rows.target, rows.judge)) == {(ALL, "-"), (RELEVANT, "TFIDF-LR"), (RELEVANT, "LSA-LR")}
    assert set(rows.model) == {"NNL-ET", "NNL-Av"} and (rows.relevant_new <= rows.new).all()
    assert (tmp_path / "relevant.png").stat().st_size > 0
    diff = pd.read_csv(tmp_path / "differences.csv")
    assert len(diff) == 2 * 2 * 2 and (diff.seeds == 2).all()
    before = (tmp_path / "relevant.md").read_text()
    (tmp_path / "relevant.md").unlink()
    assert report(["--run", str(tmp_path)]) == 0
    assert (tmp_path / "relevant.md").read_text() == before


def test_publishing_from_a_dirty_tree_is_refused(tmp_path, monkeypatch):
    import focuscrawl.experiments.run_record as run_record

    monkeypatch.setattr(run_record, "git_commit", lambda cwd=None: {"commit": "abc", "dirty": True, "dirty_files": 1})
    with pytest.raises(SystemExit, match="refusing to write"):
        main(["--seeds", "0", "--output", str(tmp_path / "bench" / "results" / "x")])
    assert not (tmp_path / "bench").exists()
