"""Pseudo-training (seed 000 section V), classifier persistence and harvest metrics (II-A)."""

from __future__ import annotations

import pytest

from focuscrawl.fue import (
    Extraction,
    PseudoLabelling,
    PseudoTrainer,
    UserClassifier,
    curve,
    extracted_per_hour,
    harvest_ratio,
    ratio_to_baseline,
    retrain_and_rescore,
    short_evidence_corpus,
)

PARAMS = {"min_df": 1, "stop_words": None, "C": 10.0}


@pytest.mark.parametrize(
    "name, proba, label",
    [
        ("HCP-0.9-0.1", 0.95, 1), ("HCP-0.9-0.1", 0.5, None), ("HCP-0.9-0.1", 0.1, 0),
        ("HCP-0.5-0.5", 0.5, 1), ("HCP-0.5-0.5", 0.49, 0),
        ("HCP-POS", 0.9, 1), ("HCP-POS", 0.01, None),
    ],
)
def test_pseudo_labelling_of_each_variant(name: str, proba: float, label: int | None) -> None:
    assert PseudoLabelling.for_method(name).label(proba) == label


def test_only_pseudo_variants_have_a_labelling() -> None:
    with pytest.raises(ValueError, match="not a pseudo-trained"):
        PseudoLabelling.for_method("HCP")


def test_retraining_with_pseudo_positives_lifts_their_new_vocabulary(toy_training_set) -> None:
    docs, labels = toy_training_set
    # Extracted users judged positive by the reference classifier talk about "relapse".
    extracted = [("relapse lonely", 0.97)] * 15 + [("relapse football", 0.5)] * 3 + [("garden weekend", 0.02)] * 15
    candidates = [("r", "relapse", 0.2), ("g", "garden", 0.3), ("low", "football", 0.0)]
    model, rescored = retrain_and_rescore(
        docs, labels, extracted, PseudoLabelling(0.9, 0.1), candidates, top_n=2, classifier_params=PARAMS
    )
    assert [user for user, _ in rescored] == ["r", "g"]  # the top 2 by current score, new order
    assert rescored[0][1] > 0.6 > 0.4 > rescored[1][1]
    base = UserClassifier(**PARAMS).fit(docs, labels)
    assert model.proba("relapse") > base.proba("relapse")


def test_the_dags_step_is_a_plain_fit_on_the_original_set_plus_the_pseudo_examples() -> None:
    # What retrain_and_rescore did before it went through PseudoTrainer (a TfidfVectorizer fit on the
    # texts, the top_n by current score re-scored, best first): the DAG gets the same model and scores.
    from focuscrawl.core.corpora import GeneratedCorpus
    from focuscrawl.fue.classifier import corpus_histories, reference_params, whole_user_documents

    histories, labels = corpus_histories(GeneratedCorpus(1, donors_per_class=40, writings_per_donor=30))
    docs, params = whole_user_documents(histories), reference_params(len(histories))
    extracted = [(d, p) for d, p in zip(whole_user_documents(corpus_histories(GeneratedCorpus(2, donors_per_class=15,
                 writings_per_donor=30))[0]), [0.95, 0.5, 0.05] * 10)]
    candidates = [(f"u{i}", h[0], (i * 37 % 11) / 11) for i, h in enumerate(histories[::3])]
    labelling = PseudoLabelling.for_method("HCP-0.9-0.1")
    model, rescored = retrain_and_rescore(docs, labels, extracted, labelling, candidates, top_n=9, classifier_params=params)

    joined = [(d, labelling.label(p)) for d, p in extracted if labelling.label(p) is not None]
    plain = UserClassifier(**params).fit(docs + [d for d, _ in joined], labels + [y for _, y in joined])
    top = sorted(candidates, key=lambda c: -c[2])[:9]
    expected = sorted(zip([u for u, _, _ in top], plain.predict_proba([t for _, t, _ in top])), key=lambda us: -us[1])
    assert [u for u, _ in rescored] == [u for u, _ in expected]
    assert [s for _, s in rescored] == pytest.approx([s for _, s in expected], abs=1e-12)
    assert model.vectorizer_.vocabulary_ == plain.vectorizer_.vocabulary_
    texts = [t for _, t, _ in candidates]
    assert list(model.predict_proba(texts)) == pytest.approx(list(plain.predict_proba(texts)), abs=1e-12)


def test_the_dags_step_retrains_without_a_pseudo_example(toy_training_set) -> None:
    docs, labels = toy_training_set
    model, rescored = retrain_and_rescore(docs, labels, [("relapse lonely", 0.5)], PseudoLabelling(0.9, 0.1),
                                          [("r", "relapse", 0.2)], classifier_params=PARAMS)
    assert isinstance(model, UserClassifier) and [u for u, _ in rescored] == ["r"]
    assert retrain_and_rescore(docs, labels, [], PseudoLabelling(0.9, None), [], classifier_params=PARAMS)[1] == []


def test_trainer_retrains_only_when_examples_joined(toy_training_set) -> None:
    docs, labels = toy_training_set
    trainer = PseudoTrainer(docs, labels, PseudoLabelling(0.9, None), classifier_params=PARAMS)
    assert trainer.retrain() is None
    assert trainer.add("relapse lonely", 0.3) is False  # positives only: a low score is dismissed
    assert trainer.add("relapse lonely", 0.95) is True
    assert isinstance(trainer.retrain(), UserClassifier)
    assert trainer.retrain() is None


def test_classifier_roundtrip_and_threshold(tmp_path, toy_classifier) -> None:
    path = toy_classifier.save(tmp_path / "models" / "candidate.joblib")
    loaded = UserClassifier.load(path)
    texts = ["depressed lonely hopeless", "football guitar"]
    assert list(loaded.predict_proba(texts)) == list(toy_classifier.predict_proba(texts))
    assert loaded.is_relevant(texts[0]) and not loaded.is_relevant(texts[1])
    with pytest.raises(ValueError, match="both positive"):
        UserClassifier(**PARAMS).fit(["a b", "c d"], [1, 1])


def test_short_evidence_corpus() -> None:
    docs, labels = short_evidence_corpus([["a", "b", "c"], ["x"], []], [1, 0, 1], writings_per_sample=2, samples_per_user=5)
    assert labels == [1, 1, 1, 0]
    assert all(d in ("a\nb", "b\nc", "c") for d in docs[:3]) and docs[3] == "x"


def events() -> list[Extraction]:
    return [
        Extraction("HCP", "a", 100, True), Extraction("HCP", "b", 200, False),
        Extraction("HCP", "c", 4000, True), Extraction("HCP", "d", 7000, True),
    ]


def test_harvest_ratio_and_its_curve() -> None:
    assert harvest_ratio(events()) == 0.75
    assert harvest_ratio([]) == 0.0
    points = curve(events(), duration=3 * 3600)
    assert [(p.until, p.extracted, p.relevant) for p in points] == [(3600, 2, 1), (7200, 4, 3), (10800, 4, 3)]
    assert [p.harvest_ratio for p in points] == [0.5, 0.75, 0.75]


def test_extraction_speed_and_ratio_to_random() -> None:
    assert extracted_per_hour(events(), duration=3 * 3600) == [2.0, 2.0, 0.0]
    assert extracted_per_hour(events(), duration=5400) == [2.0, 4.0]  # last bin is half an hour
    assert ratio_to_baseline([0.5, 0.6], [0.25, 0.0]) == [2.0, None]
