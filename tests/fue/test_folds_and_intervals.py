"""Issue 17 for seed 000: donor-disjoint folds (no training text in the world), signals from data,
intervals that decide which differences from RND are significant."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from focuscrawl.fue.classifier import SharedScores, corpus_histories
from focuscrawl.fue.metrics import Extraction
from focuscrawl.fue.report import intervals, intervals_markdown, sensitivity_table, with_hidden_labels
from focuscrawl.core.corpora import GeneratedCorpus, donor_folds, fold_corpora, writing_body
from focuscrawl.world.population import MAX_HISTORY, Population, PopulationConfig, hidden_labels


def _training_texts(train) -> set[str]:
    """Every writing a fold's classifiers learn from: the reference and HCP-SNIP are fitted on these
    donors' histories (whole or in snippets), pseudo-training starts from the same whole users."""
    histories, _ = corpus_histories(train)
    return {w for h in histories for w in h}


def _world_texts(population: Population, until: float) -> set[str]:
    population.advance(until)
    items = [it for i in range(population.config.users) for it in population.history(i)] + list(population._stream)
    return {writing_body(it.title, it.text) for it in items}


def _assert_disjoint(corpus, users: int) -> None:
    for fold in donor_folds(corpus, 2, seed=0):
        assert not set(fold.train[True]) & set(fold.world[True]) and not set(fold.train[False]) & set(fold.world[False])
        train, world = fold_corpora(corpus, fold.train, fold.world)
        config = PopulationConfig(seed=fold.fold, users=users, base_rate=0.05, events_per_minute=30.0, warmup_seconds=0.0)
        population = Population(config, world)
        seen = _world_texts(population, config.start_epoch + 6 * 3600)
        trained = _training_texts(train)
        assert len(seen) > 1000 and len(trained) > 1000
        assert not seen & trained, f"fold {fold.fold}: {len(seen & trained)} training writings in world histories"


def test_no_training_text_in_any_world_history_generated_corpus():
    # Generated writings reuse a bank of sentences, so many texts recur across donors: the world side
    # must drop them, not just use other donors.
    corpus = GeneratedCorpus(0, donors_per_class=60, writings_per_donor=40)
    train, world = fold_corpora(corpus, *(lambda f: (f.train, f.world))(donor_folds(corpus, 2, 0)[0]))
    assert sum(world.size(True, d) for d in range(world.donors(True))) < 30 * 40  # some were dropped
    _assert_disjoint(corpus, users=1500)


@pytest.mark.slow
def test_no_training_text_in_any_world_history_erisk(shared_data, cfg):
    from focuscrawl.core.corpora import load_corpus

    corpus = load_corpus(0, shared_data, cfg.var_dir)
    assert (corpus.donors(True), corpus.donors(False)) == (83, 403)
    _assert_disjoint(corpus, users=1500)


def test_donor_folds_partition_each_class_and_need_two_folds():
    corpus = GeneratedCorpus(0, donors_per_class=10, writings_per_donor=5)
    folds = donor_folds(corpus, 3, seed=1)
    for label in (True, False):
        worlds = [set(f.world[label]) for f in folds]
        assert set().union(*worlds) == set(range(10)) and sum(map(len, worlds)) == 10
        for f in folds:
            assert set(f.train[label]) == set(range(10)) - set(f.world[label])
    assert donor_folds(corpus, 3, seed=1) == folds
    with pytest.raises(ValueError, match="k >= 2"):
        donor_folds(corpus, 1)


class _TimedCorpus:
    """Positive donors write at 03:xx only, negative donors at 15:xx."""

    def donors(self, label):
        return 4

    def size(self, label, donor):
        return 50

    def writing(self, label, donor, j):
        return "", f"{'pos' if label else 'neg'} {donor} {j}", (3 if label else 15) * 3600 + j * 60

    def hour_profile(self, label, donor):
        from focuscrawl.core.corpora import hour_weights

        return hour_weights(self.writing(label, donor, j)[2] for j in range(50))


def test_live_posting_hours_follow_the_donors_real_timestamps():
    config = PopulationConfig(seed=1, users=4000, base_rate=0.5, events_per_minute=20.0, warmup_seconds=0.0)
    pop = Population(config, _TimedCorpus())
    pop.advance(config.start_epoch + 86400)
    hours = {True: [], False: []}
    for it in pop._stream:
        hours[bool(pop.labels[it.user])].append(int(it.created % 86400 // 3600))
    share = {lb: np.mean(np.asarray(h) == (3 if lb else 15)) for lb, h in hours.items()}
    # Add-one smoothing leaves 50/74 of a donor's weight at its hour: about 2/3 of its posts fall there (1/24 uniform).
    assert share[True] > 0.5 and share[False] > 0.5, share
    # History items keep the real time of day too.
    assert {it.created % 86400 // 3600 for i in range(20) for it in pop.history(i)} <= {3, 15}


def test_hidden_labels_are_the_populations_own():
    config = PopulationConfig(seed=4, users=3000, base_rate=0.03)
    pop = Population(config, GeneratedCorpus(4, donors_per_class=5, writings_per_donor=5))
    assert (hidden_labels(4, 3000, 0.03) == pop.labels).all() and pop.labels.sum() == 90
    events = with_hidden_labels([Extraction("RND", pop.name(7), 1.0, False), Extraction("RND", "stranger", 1.0, False)],
                                pop.labels)
    assert events[0].on_target == bool(pop.labels[7]) and events[1].on_target is None
    assert MAX_HISTORY > 1000


def _events(method: str, n: int, relevant: int, on_target: int | None = None) -> list[Extraction]:
    on = relevant if on_target is None else on_target
    return [Extraction(method, f"{method}_{i}", float(i), i < relevant, i < on) for i in range(n)]


def test_intervals_call_a_difference_significant_only_when_its_interval_excludes_zero():
    fold0 = _events("RND", 200, 6) + _events("HCP", 200, 40, 30) + _events("N06", 200, 8)
    fold1 = _events("RND", 180, 5) + _events("HCP", 190, 35, 28) + _events("N06", 210, 7)
    frame = intervals([(0, fold0), (1, fold1)], n_boot=2000, seed=3)
    pooled = frame[(frame.scope == "pooled") & (frame.measure == "reference verdict")].set_index("method")
    assert pooled.loc["HCP", "extracted"] == 390 and pooled.loc["HCP", "relevant"] == 75
    assert pooled.loc["HCP", "ratio_to_RND"] == pytest.approx((75 / 390) / (11 / 380), abs=1e-3)
    assert pooled.loc["HCP", "significant"] == "higher" and pooled.loc["HCP", "diff_lo"] > 0
    assert pooled.loc["N06", "significant"] == "no" and pooled.loc["N06", "diff_lo"] < 0 < pooled.loc["N06", "diff_hi"]
    for _, r in frame.iterrows():
        assert r.hr_lo <= r.harvest_ratio <= r.hr_hi
    hidden = frame[(frame.scope == "pooled") & (frame.measure == "hidden label")].set_index("method")
    assert hidden.loc["HCP", "relevant"] == 58
    assert set(frame.scope) == {"fold 0", "fold 1", "pooled"}
    # Deterministic for a seed (a rebuilt report equals the run's own).
    assert frame.equals(intervals([(0, fold0), (1, fold1)], n_boot=2000, seed=3))
    table = sensitivity_table("score_effect", [(0.0, frame), (1.0, frame)])
    assert set(table.value) == {0.0, 1.0} and set(table.method) == {"RND", "HCP", "N06"}


def test_intervals_without_hidden_labels_report_the_verdict_only():
    events = [Extraction("RND", "a", 1.0, True), Extraction("HCP", "b", 1.0, True)]
    frame = intervals([(0, events)], n_boot=100)
    assert set(frame.measure) == {"reference verdict"} and set(frame.scope) == {"fold 0"}


class _CountingModel:
    def __init__(self):
        self.calls = 0

    def predict_proba(self, texts):
        self.calls += len(texts)
        return np.array([len(t) / 100 for t in texts])


def test_shared_scores_score_each_text_once_and_agree_with_the_model():
    model = _CountingModel()
    shared = SharedScores(model, max_texts=3)
    assert shared.predict_proba(["ab", "abc", "ab"]).tolist() == [0.02, 0.03, 0.02] and model.calls == 2
    assert shared.predict_proba(["abc"]).tolist() == [0.03] and model.calls == 2
    assert shared.predict_proba(["x", "yy"]).tolist() == [0.01, 0.02] and model.calls == 4  # full: emptied
    # Full again, with a known text in the call: the new memo keeps it (a week's run once lost it: KeyError).
    assert shared.predict_proba(["x", "a", "bb"]).tolist() == [0.01, 0.01, 0.02] and model.calls == 7


def test_hcp_is_scored_by_the_reference_model_and_hcp_snip_by_the_snippet_model():
    from focuscrawl.fue.methods import RANKING_METHODS

    snippet_scored = {n for n in RANKING_METHODS.names() if getattr(RANKING_METHODS.get(n), "scorer", "") == "snippets"}
    assert snippet_scored == {"HCP-SNIP"}
    assert RANKING_METHODS.get("HCP-CB-0.9-0.1").pseudo_labelling == (0.9, 0.1)
    assert RANKING_METHODS.get("HCP-CB-0.9-0.1").dynamic


def test_hierarchical_r2_breaks_near_ties_by_the_hour_exact_hierarchical_does_not():
    from focuscrawl.fue.evidence import UserEvidence
    from focuscrawl.fue.methods import RANKING_METHODS

    class Fixed:
        def predict_proba(self, texts):
            return np.array([{"a": 0.804, "b": 0.801}[t] for t in texts])

    evidences = [UserEvidence("far", count=1, mean_hour=18.0, circular_hour=18.0, text="a"),
                 UserEvidence("near", count=1, mean_hour=6.0, circular_hour=6.0, text="b")]
    assert RANKING_METHODS.create("HIERARCHICAL", classifier=Fixed()).rank(evidences) == ["far", "near"]
    assert RANKING_METHODS.create("HIERARCHICAL-R2", classifier=Fixed()).rank(evidences) == ["near", "far"]


def test_communities_found_in_histories_join_the_explorers_frontier():
    from focuscrawl.fue.pipeline import CommunityExplorer, RandomCommunityChooser

    explorer = CommunityExplorer(client=None, chooser=RandomCommunityChooser(seed=0))
    explorer.communities = ["pics"]
    assert explorer.add_communities(["depression", "pics", "", "depression", "lonely"]) == 2
    assert explorer.communities == ["pics", "depression", "lonely"]


def test_ours_are_judged_against_the_best_other_method():
    from focuscrawl.fue.report import against_best

    fold = _events("RND", 200, 6) + _events("HCP", 200, 40, 30) + _events("N06", 200, 50, 10) + _events("HCP-CB", 200, 45, 30)
    best = against_best([(0, fold)], n_boot=1000, seed=0).set_index("measure")
    assert best.loc["reference verdict", "best_other"] == "N06" and best.loc["hidden label", "best_other"] == "HCP"
    assert best.loc["reference verdict", "significant"] == "no"  # 45/200 against 50/200: the interval holds 0
    assert best.loc["hidden label", "diff"] == 0.0 and best.loc["hidden label", "diff_lo"] < 0 < best.loc["hidden label", "diff_hi"]


def test_holm_adjusts_as_the_step_down_procedure():
    from focuscrawl.fue.report import holm

    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 -> 0.03, 0.06, 0.04 -> monotone 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_a_pooled_difference_is_marked_only_when_it_holds_holm_corrected_in_every_fold():
    # HAS: 15/300 against RND's 6/300 in each fold. The interval of draws summed over folds excludes 0,
    # and so does each fold's own, but neither fold's survives Holm over its two comparisons: unmarked.
    fold = _events("RND", 300, 6) + _events("HAS", 300, 15) + _events("HCP", 300, 60)
    frame = intervals([(0, fold), (1, list(fold))], n_boot=4000, seed=1)
    ref = frame[frame.measure == "reference verdict"].set_index(["scope", "method"])
    assert ref.loc[("pooled", "HAS"), "diff_lo"] > 0 and ref.loc[("fold 0", "HAS"), "diff_lo"] > 0
    assert ref.loc[("fold 0", "HAS"), "p_value"] < 0.05 < ref.loc[("fold 0", "HAS"), "p_holm"]
    assert ref.loc[("pooled", "HAS"), "significant"] == "no"
    assert ref.loc[("pooled", "HAS"), "per_fold"] == "fold 0: no, fold 1: no"
    assert ref.loc[("pooled", "HCP"), "significant"] == "higher"
    # A difference that holds in one fold only is not marked pooled, though its summed draws exclude 0.
    strong = _events("RND", 300, 6) + _events("HAS", 300, 45) + _events("HCP", 300, 60)
    none = _events("RND", 300, 6) + _events("HAS", 300, 6) + _events("HCP", 300, 60)
    mixed = intervals([(0, strong), (1, none)], n_boot=4000, seed=1)
    has = mixed[(mixed.measure == "reference verdict") & (mixed.method == "HAS")].set_index("scope")
    assert has.loc["fold 0", "significant"] == "higher" and has.loc["pooled", "diff_lo"] > 0
    assert has.loc["pooled", "significant"] == "no" and has.loc["pooled", "per_fold"] == "fold 0: higher, fold 1: no"
    text = intervals_markdown(frame)
    assert "per fold (Holm)" in text and "users of these worlds only" in text


def test_two_methods_compared_over_seeds_of_a_sweep(tmp_path):
    """``focuscrawl report fue --compare A,B --seeds-of DIR``: per seed the paired difference, over seeds
    a t-interval; a difference is marked only when Holm over the table's rows rejects 0."""
    from focuscrawl.experiments.run_record import write_run_json
    from focuscrawl.reports import fue as fue_report

    code = {"commit": "e" * 40, "dirty": False}
    for seed, extra in ((0, 40), (1, 44), (2, 38)):
        for value, lift in ((0.0, 0), (0.25, extra)):
            run = tmp_path / f"seed-{seed}" / f"community_signal={value:g}"
            events = _events("RND", 300, 6) + _events("HCP", 300, 30 + seed) + _events("HCP-CB", 300, 30 + seed + lift)
            run.mkdir(parents=True)
            intervals([(0, events)], n_boot=500, seed=seed).to_csv(run / "fue_intervals.csv", index=False)
            write_run_json(run, "fue", {"seed": seed}, {"bootstrap_seed": seed}, code=code, bootstrap=500)
    assert fue_report.main(["--compare", "HCP-CB,HCP", "--seeds-of", str(tmp_path)]) == 0
    over = pd.read_csv(tmp_path / "compare_HCP-CB_HCP.csv").set_index(["measure", "value"])
    assert (over.seeds == 3).all()
    assert over.loc[("reference verdict", 0.0), "significant"] == "no" and over.loc[("reference verdict", 0.0), "mean_diff"] == 0
    assert over.loc[("reference verdict", 0.25), "significant"] == "higher"
    assert over.loc[("reference verdict", 0.25), "mean_lo"] > 0
    text = (tmp_path / "compare_HCP-CB_HCP.md").read_text()
    assert "e" * 40 in text and "seed 2" in text


def test_recount_rebuilds_the_intervals_from_the_committed_counts(tmp_path):
    """``focuscrawl report fue --recount DIR``: the intervals depend on the per-fold counts only, so a run's
    own fue_intervals.csv gives them back exactly, with today's marks, when the Delta rows are gone."""
    from focuscrawl.experiments.run_record import write_run_json
    from focuscrawl.reports import fue as fue_report

    fold0 = _events("RND", 200, 6, 5) + _events("HCP", 200, 40, 30) + _events("N06", 200, 8, 9) + _events("HCP-CB", 190, 41, 33)
    fold1 = _events("RND", 180, 5, 4) + _events("HCP", 190, 35, 28) + _events("N06", 210, 7, 6) + _events("HCP-CB", 185, 38, 30)
    folds = [(0, fold0), (1, fold1)]
    frame = intervals(folds, n_boot=500, seed=2)
    frame.to_csv(tmp_path / "fue_intervals.csv", index=False)
    entries = [{"fold": f, "train_donors": {"positive": [1], "negative": [2]},
                "world_donor_ids": {"positive": [3], "negative": [4]}} for f in (0, 1)]
    write_run_json(tmp_path, "fue", {"seed": 2, "folds": 2}, {"bootstrap_seed": 2}, code={"commit": "f" * 40, "dirty": False},
                   bootstrap=500, folds=entries)
    assert fue_report.main(["--recount", str(tmp_path), "--out", str(tmp_path / "again")]) == 0
    again = pd.read_csv(tmp_path / "again" / "fue_intervals.csv")
    pd.testing.assert_frame_equal(again, pd.read_csv(tmp_path / "fue_intervals.csv"))
    assert "--recount" in (tmp_path / "again" / "fue_intervals.md").read_text()


def test_the_sensitivity_plot_takes_a_ratio_just_outside_its_smoothed_interval(tmp_path):
    from focuscrawl.fue.report import write_sensitivity

    table = pd.DataFrame([
        {"parameter": "hour_effect", "value": v, "measure": "hidden label", "method": m, "extracted": 300, "relevant": r,
         "ratio_to_RND": ratio, "ratio_lo": lo, "ratio_hi": hi, "significant": "no"}
        for v in (0.0, 1.0) for m, r, ratio, lo, hi in (("RND", 4, 1.0, 1.0, 1.0), ("N06", 1, 0.25, 0.26, 1.9))])
    assert write_sensitivity(table, "hour_effect", tmp_path).is_file()
