"""Analysing documents once (TermCounts) gives the very model and scores of a plain fit (seed 000, section V)."""

from __future__ import annotations

import numpy as np
import pytest

from focuscrawl.fue import PseudoLabelling, PseudoTrainer, UserClassifier
from focuscrawl.fue.classifier import TermCounts

DOCS = [
    "I feel hopeless and lonely tonight", "the football match was great", "lonely again, cannot sleep",
    "recipe for a lemon cake", "therapy helps a little", "guitar concert this weekend", "so tired and numb",
    "the match and the concert", "hopeless, numb, tired", "a great cake recipe",
]
LABELS = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]


@pytest.mark.parametrize("params", [{"min_df": 1, "stop_words": None}, {"min_df": 2}, {"min_df": 0.2}])
def test_fit_counts_is_fit(params) -> None:
    counts = TermCounts(stop_words=UserClassifier(**params).stop_words)
    counts.add(DOCS)
    plain = UserClassifier(**params).fit(DOCS, LABELS)
    cached = UserClassifier(**params).fit_counts(counts, LABELS)
    assert cached.vectorizer_.vocabulary_ == plain.vectorizer_.vocabulary_
    np.testing.assert_allclose(cached.vectorizer_.idf_, plain.vectorizer_.idf_)
    np.testing.assert_allclose(cached.model_.coef_, plain.model_.coef_, atol=1e-12)
    texts = ["hopeless and numb", "football cake", "", "words never seen"]
    np.testing.assert_allclose(cached.predict_proba(texts), plain.predict_proba(texts), atol=1e-12)
    np.testing.assert_allclose(cached.predict_proba_counts(counts, texts), plain.predict_proba(texts), atol=1e-12)


def test_fits_are_repeatable() -> None:
    a, b = (UserClassifier(min_df=1, stop_words=None).fit(DOCS, LABELS) for _ in range(2))
    assert np.array_equal(a.model_.coef_, b.model_.coef_)


def test_stop_words_must_match_and_labels_must_line_up() -> None:
    counts = TermCounts(stop_words=None)
    counts.add(DOCS)
    with pytest.raises(ValueError, match="stop_words"):
        UserClassifier().fit_counts(counts, LABELS)
    with pytest.raises(ValueError, match="labels"):
        UserClassifier(stop_words=None, min_df=1).fit_counts(counts, LABELS[:-1])
    with pytest.raises(ValueError, match="stop_words"):  # scoring too: the analysis must be the model's
        UserClassifier(stop_words=None, min_df=1).fit(DOCS, LABELS).predict_proba_counts(TermCounts(), ["numb"])


def test_term_counts_survive_a_cache_round_trip() -> None:
    import pickle

    counts = TermCounts(stop_words=None)
    counts.add(DOCS)
    counts.rows(["numb cake"])
    back = pickle.loads(pickle.dumps(counts))
    assert back.terms() == counts.terms() and (back.matrix() != counts.matrix()).nnz == 0
    assert back._remembered == {}  # what was scored is not cached, only the training documents
    assert back._vocabulary == counts._vocabulary
    empty = pickle.loads(pickle.dumps(TermCounts(stop_words=None)))
    assert empty.terms() == [] and len(empty) == 0
    back.add(["brand new words"])
    assert len(back) == len(DOCS) + 1 and "brand" in back.terms()


def test_rows_remember_only_the_previous_call() -> None:
    counts = TermCounts(stop_words=None)
    first = counts.rows(["aa bb bb", "cc"])  # the default token pattern: 2+ characters
    assert first.toarray().tolist() == [[1, 2, 0], [0, 0, 1]]
    assert counts.rows(["cc", "dd"]).toarray().tolist() == [[0, 0, 1, 0], [0, 0, 0, 1]]
    assert set(counts._remembered) == {"cc", "dd"}
    assert len(counts) == 0  # scored texts never join the training documents


def test_trainer_refits_on_everything_it_was_given(toy_training_set) -> None:
    docs, labels = toy_training_set
    params = {"min_df": 1, "stop_words": None, "C": 10.0}
    trainer = PseudoTrainer(docs, labels, PseudoLabelling(0.9, 0.1), classifier_params=params)
    trainer.add("relapse lonely", 0.97)
    trainer.add("relapse weekend", 0.5)  # dismissed
    trainer.add("garden weekend", 0.02)
    model = trainer.retrain()
    plain = UserClassifier(**params).fit(docs + ["relapse lonely", "garden weekend"], labels + [1, 0])
    np.testing.assert_allclose(model.model_.coef_, plain.model_.coef_, atol=1e-12)
    rescored = dict(trainer.rescore(model, [("r", "relapse", 0.0), ("g", "garden", 0.0)]))
    np.testing.assert_allclose([rescored["r"], rescored["g"]], plain.predict_proba(["relapse", "garden"]), atol=1e-12)
