"""The FUE models in the model registry, over a fake registry: each pseudo-trained refresh is the next stored version
(with the Delta versions it read) and its champion; a rollback makes the next run re-score with the older model and
train none, until a newer version is promoted; the reference and candidate classifiers ``focuscrawl train`` fits are
versions too, and a rollback puts the older file where the processes load it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import joblib
from deltalake import DeltaTable

from focuscrawl.testing import OTHER_WORDS as OTHER, TARGET_WORDS as TARGET
from fake_registry import FakeRegistry
from focuscrawl.config import settings
from focuscrawl.fue.batch import model_store, read_scores, refresh
from focuscrawl.fue.batch import CANDIDATE_SCORES_TABLE
from focuscrawl.fue.pipeline import STATS_TABLE
from focuscrawl.orchestration.model_families import family, mirror, promote_registered
from focuscrawl.platform.train import store_versions
from tests.fue_stream.test_fue_batch import _posts, _stats, example_users_project, make_active

NAME = "fue.pseudo.HCP-POS"
TRAIN = ([f"{OTHER[i % 8]} {OTHER[(i + 1) % 8]}" for i in range(20)] + [f"{TARGET[i % 8]} crying" for i in range(20)],
         [0] * 20 + [1] * 20)  # the example users' whole-user documents and labels


def test_each_refresh_is_a_version_and_a_rollback_holds(tmp_path, monkeypatch):
    from focuscrawl.orchestration.schedules import active_example_set

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    cfg = settings()
    # the extractions where the registry's held-out figures read them; the active project's example users, the
    # original set the refreshes start from and the registry measures them on
    stats, posts = _stats(Path(STATS_TABLE.path(cfg)).parent), _posts(tmp_path)
    example_users_project(tmp_path, *TRAIN)
    make_active(cfg, tmp_path)
    examples = active_example_set(cfg)
    fue, registry = family(cfg, "fue"), FakeRegistry()
    first = refresh(cfg, "HCP-POS", 10, posts, examples, stats)
    mirror(fue, registry)  # each refresh recorded before the next (a backlog is measured at its newest only)
    second = refresh(cfg, "HCP-POS", 10, posts, examples, stats)
    assert (first["model"], second["model"]) == ("v1 trained", "v2 trained")
    mirror(fue, registry)
    logged = registry.of(NAME)
    assert len(logged) == 2 and logged[1]["experiment"] == "fue"
    assert logged[0]["delta_versions"] == {"fue_extractions": DeltaTable(stats).version(),
                                           "reddit_posts": DeltaTable(posts).version()}
    # measured by the registry, as the refresh was fitted: folds of the original users, pseudo-labels by each
    # fold's reference (fue.evaluation.pseudo_cross_validated); ann (0.97) joins as a positive, bob is dismissed
    assert {"cv_auc", "cv_auc_reference", "cv_auc_gain", "cv_auc_gain_low"} <= logged[0]["metrics"].keys()
    assert logged[0]["metrics"] == model_store(cfg).versions("pseudo/HCP-POS")[0].metrics
    assert logged[1]["metrics"].keys() == logged[0]["metrics"].keys()
    assert {"method": "HCP-POS", "top_n": 10, "extracted": 2, "candidates": 2, "originals": 40, "examples.added": 0,
            "examples.digest": examples.digest, "previous": None}.items() <= logged[0]["params"].items() and logged[1]["params"]["previous"] == 1
    assert registry.aliases[NAME] == 2  # the newest refresh replaces the last

    promote_registered(fue, registry, NAME, 1)  # rollback
    assert model_store(cfg).champion("pseudo/HCP-POS").version == 1 and registry.aliases[NAME] == 1
    held = refresh(cfg, "HCP-POS", 10, posts, examples, stats)
    assert held["model"] == "rolled back: v1 re-scored, none trained"
    v1 = joblib.load(model_store(cfg).folder(model_store(cfg).versions("pseudo/HCP-POS")[0]) / "model.joblib")
    pushed = dict(read_scores(CANDIDATE_SCORES_TABLE.path(cfg), "HCP-POS"))
    assert pushed == {u: float(v1.proba(t)) for u, t in (("odd", "zebra zebra"), ("sad", "hopeless numb\ncrying"))}
    assert len(model_store(cfg).versions("pseudo/HCP-POS")) == 2
    calls = registry.alias_calls
    assert mirror(fue, registry) == [f"{NAME}: logged store version(s) none new; champion v1"]
    assert registry.alias_calls == calls
    promote_registered(fue, registry, NAME, 2)  # the newest again: training resumes
    assert refresh(cfg, "HCP-POS", 10, posts, examples, stats)["model"] == "v3 trained"


def test_the_reference_and_candidate_classifiers_are_versions_and_roll_back_to_the_live_path(
        tmp_path, monkeypatch, toy_classifier):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    cfg, project = settings(), SimpleNamespace(name="demo")
    live = Path(cfg.var_dir) / "models" / "demo" / "reference.joblib"
    for users in (10, 12):  # two `focuscrawl train` runs on changed examples
        toy_classifier.save(live)
        store_versions(project, cfg, {"reference": toy_classifier, "candidate": toy_classifier},
                       {"users": users, "positives": 5})
    fue, registry = family(cfg, "fue"), FakeRegistry()
    mirror(fue, registry)
    assert [e["params"]["users"] for e in registry.of("fue.demo.reference")] == [10, 12]
    assert registry.aliases == {"fue.demo.reference": 2, "fue.demo.candidate": 2}
    live.write_bytes(b"not the champion")
    promote_registered(fue, registry, "fue.demo.reference", 1)
    assert live.read_bytes() == (model_store(cfg).folder(model_store(cfg).versions("demo/reference")[0])
                                 / "model.joblib").read_bytes()


def test_focuscrawl_train_stores_each_fit_and_records_classifiers_trained_before_the_store(tmp_path, monkeypatch):
    """``train_models``: a fit is a version of each classifier; models already up to date but never stored (trained
    before the store kept versions) are stored once, from the files the processes load."""
    import random

    from focuscrawl.fue.batch import model_store as fue_store
    from focuscrawl.platform.train import train_models
    from focuscrawl.project.loading import load_project

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    rng = random.Random(0)
    for name, words in (("pos.jsonl", TARGET), ("neg.jsonl", OTHER)):
        lines = [f'{{"user": "{name[:3]}{u}", "text": "{" ".join(rng.choices(words, k=12))}"}}'
                 for u in range(12) for _ in range(3)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    (tmp_path / "focuscrawl.toml").write_text('name = "t"\ntarget = "sites"\n\n[profile]\npositives = "pos.jsonl"\n'
                                              'negatives = "neg.jsonl"\n\n[[sites]]\nname = "s"\n'
                                              'base_url = "https://s.example.org"\n'
                                              'user_agent = "focuscrawl-test/1 (+mailto:ops@example.org)"\n')
    project, cfg = load_project(tmp_path / "focuscrawl.toml"), settings()
    train_models(project, cfg, log=lambda _: None)
    store = fue_store(cfg)
    assert [v.params["users"] for v in store.versions("t/reference")] == [24] and store.champion("t/candidate")
    assert set(store.versions("t/reference")[0].metrics) == {"cv_auc", "cv_auc_low", "cv_auc_high", "cv_folds"}
    train_models(project, cfg, log=lambda _: None)  # up to date: nothing new
    assert len(store.versions("t/reference")) == 1
    import shutil

    shutil.rmtree(store.root)  # as on a platform trained before the store kept versions
    train_models(project, cfg, log=lambda _: None)
    assert [v.version for v in store.versions("t/reference")] == [1] and store.versions("t/candidate")[0].promoted


def test_the_classifiers_held_out_figures_are_cross_validated_by_user():
    """Each user is scored once, by a fold model fitted on other users only: here every user's history carries a
    word of its own and the labels are drawn at random, so a model scored on users it saw is perfect while the
    cross-validated figure stays near chance."""
    import random

    from focuscrawl.fue.classifier import TermCounts, UserClassifier, whole_user_documents
    from focuscrawl.fue.evaluation import cross_validated
    from focuscrawl.relevance.evaluation import auc

    rng = random.Random(1)
    labels = [1] * 15 + [0] * 25
    rng.shuffle(labels)
    histories = [[f"{' '.join(rng.choices(OTHER, k=10))} ownword{chr(97 + u // 26)}{chr(97 + u % 26)}"] * 3
                 for u in range(40)]
    counts = TermCounts()
    counts.add(whole_user_documents(histories))
    fitted_on: list[list[int]] = []

    def fit(rows):
        fitted_on.append(rows)
        return UserClassifier(min_df=1, C=1e4).fit_counts(counts, [labels[i] for i in rows], rows)

    figures = cross_validated(fit, counts, labels)
    assert figures["cv_folds"] == 5 and len(fitted_on) == 5
    held = [sorted(set(range(40)) - set(rows)) for rows in fitted_on]
    assert sorted(u for fold in held for u in fold) == list(range(40))  # each user held out exactly once
    seen_all = UserClassifier(min_df=1, C=1e4).fit_counts(counts, labels)
    assert auc(labels, seen_all.predict_proba_counted(counts, counts.matrix())) == 1.0
    assert abs(figures["cv_auc"] - 0.5) < 0.25 and figures["cv_auc_low"] <= figures["cv_auc"] <= figures["cv_auc_high"]
    assert cross_validated(fit, counts, [1] + [0] * 39) == {}  # one positive user: nothing to hold out


def test_a_refresh_is_cross_validated_with_pseudo_labels_from_each_folds_own_reference():
    """The extracted users here are two copies of each example user (each history has a word of its own, the labels
    are random). Judged by a reference that saw every user, the copies join with their true labels and score their
    originals perfectly; judged by each fold's own reference, as ``pseudo_cross_validated`` does, a held-out user's
    label reaches no model of its fold, and the figure stays near chance."""
    import random

    import numpy as np

    from focuscrawl.fue.classifier import TermCounts, UserClassifier, reference_params, whole_user_documents
    from focuscrawl.fue.evaluation import pseudo_cross_validated
    from focuscrawl.fue.pseudo import PseudoLabelling
    from focuscrawl.relevance.evaluation import auc

    rng = random.Random(2)
    labels = [1] * 20 + [0] * 30
    rng.shuffle(labels)
    documents = whole_user_documents([[f"{' '.join(rng.choices(OTHER, k=10))} ownword{chr(97 + u // 26)}"
                                       f"{chr(97 + u % 26)}"] * 3 for u in range(50)])
    counts = TermCounts()
    counts.add(documents * 3)  # rows 50-149: the extracted users, copies of the example users
    copies, everyone = list(range(50, 150)), PseudoLabelling(0.5, 0.5)  # HCP-0.5-0.5: every extracted user joins
    figures = pseudo_cross_validated(counts, labels, copies, everyone)
    assert figures["cv_folds"] == 5 and figures["pseudo_examples"] == 100
    assert abs(figures["cv_auc"] - 0.5) < 0.25 and abs(figures["cv_auc_reference"] - 0.5) < 0.25
    assert figures["cv_auc_gain_low"] <= figures["cv_auc_gain"] <= figures["cv_auc_gain_high"]

    # the leak the folds' references avoid: pseudo-labels from one reference fitted on every example user
    judge = UserClassifier(min_df=1, C=1e4).fit_counts(counts, labels, rows=list(range(50)))
    leaked = [everyone.label(p) for p in judge.predict_proba_counted(counts, counts.matrix(copies))]
    assert leaked == labels * 2
    held = np.arange(0, 50, 5)
    rows = [r for r in range(50) if r not in held]
    refreshed = UserClassifier(**reference_params(len(rows))).fit_counts(counts, [labels[r] for r in rows] + leaked,
                                                                          rows=rows + copies)
    assert auc(np.array(labels)[held], refreshed.predict_proba_counted(counts, counts.matrix(held.tolist()))) == 1.0
