"""The reference classifier on the real eRisk 2017 users (seed 000 section IV-F): slow, real data."""

from __future__ import annotations

import pytest

from focuscrawl.fue.classifier import erisk_histories, train_candidate_classifier, train_reference_classifier

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_reference_classifier_separates_held_out_erisk_users(shared_data, tmp_path) -> None:
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    histories, labels = erisk_histories(shared_data / "erisk2017" / "erisk2017-train.tar.xz", tmp_path)
    assert (len(labels), sum(labels)) == (486, 83)  # the paper's 83 positives / 403 negatives
    h_train, h_test, y_train, y_test = train_test_split(histories, labels, test_size=0.25, stratify=labels, random_state=0)

    reference = train_reference_classifier(h_train, y_train)
    p = reference.predict_proba(["\n".join(h) for h in h_test])
    assert roc_auc_score(y_test, p) > 0.85  # measured 0.89
    flagged = p > reference.threshold
    assert flagged.sum() >= 5 and sum(y for y, f in zip(y_test, flagged) if f) / flagged.sum() >= 0.6  # measured 0.7

    candidate = train_candidate_classifier(h_train, y_train)
    snippets = [h[0] for h in h_test if h]
    snippet_labels = [y for h, y in zip(h_test, y_test) if h]
    assert roc_auc_score(snippet_labels, candidate.predict_proba(snippets)) > 0.5
    reloaded = type(reference).load(reference.save(tmp_path / "reference.joblib"))
    assert list(reloaded.predict_proba(snippets[:3])) == list(reference.predict_proba(snippets[:3]))
