"""The reference classifier on the real eRisk 2017 users (seed 000 section IV-F): slow, real data.

Scored by 3-fold class-stratified cross-validation over the 486 users (each user held out once, the
model trained on the other two folds). What is asserted is a level against chance, not a measured
figure: the 95% Student-t interval of the AUC over the 3 folds lies above 0.5 (for the reference
classifier on whole histories and for HCP-SNIP's snippet classifier on single writings, up to 10 per
user), and
the Jeffreys 95% interval of the precision at the reference threshold, over every held-out user it
flags, lies above the base rate (83/486 = 0.17: flagging at random). The measured values are printed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from focuscrawl.fue.classifier import erisk_histories, train_candidate_classifier, train_reference_classifier
from tests.intervals import t_interval

pytestmark = [pytest.mark.slow, pytest.mark.integration]

FOLDS = 3
SNIPPETS = 10  # writings per held-out user scored alone (HCP-SNIP's evidence is a few writings)


def test_reference_classifier_separates_held_out_erisk_users(shared_data, tmp_path) -> None:
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    histories, labels = erisk_histories(shared_data / "erisk2017" / "erisk2017-train.tar.xz", tmp_path)
    assert (len(labels), sum(labels)) == (486, 83)  # the paper's 83 positives / 403 negatives
    y = np.array(labels)
    aucs, snippet_aucs, flagged_labels = [], [], []
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(histories, y):
        h_train, h_test = [histories[i] for i in train], [histories[i] for i in test]
        reference = train_reference_classifier(h_train, y[train].tolist())
        p = reference.predict_proba(["\n".join(h) for h in h_test])
        aucs.append(roc_auc_score(y[test], p))
        flagged_labels.extend(y[test][p > reference.threshold])
        candidate = train_candidate_classifier(h_train, y[train].tolist())
        snippets = [(writing, y[test][k]) for k, h in enumerate(h_test) for writing in h[:SNIPPETS]]
        snippet_aucs.append(roc_auc_score([lb for _, lb in snippets], candidate.predict_proba([w for w, _ in snippets])))

    auc, snippet_auc = t_interval(aucs), t_interval(snippet_aucs)
    k, n = int(np.sum(flagged_labels)), len(flagged_labels)
    precision_lo, precision_hi = stats.beta.ppf([0.025, 0.975], k + 0.5, n - k + 0.5)
    print(f"\nover {FOLDS} folds: reference AUC {auc[0]:.3f} [{auc[1]:.3f}, {auc[2]:.3f}] (folds {np.round(aucs, 3)}); "
          f"precision@{reference.threshold} {k}/{n} [{precision_lo:.3f}, {precision_hi:.3f}]; "
          f"snippet AUC {snippet_auc[0]:.3f} [{snippet_auc[1]:.3f}, {snippet_auc[2]:.3f}]")
    assert auc[1] > 0.5 and snippet_auc[1] > 0.5  # chance
    assert n >= 5 and precision_lo > y.mean()  # the base rate

    reloaded = type(reference).load(reference.save(tmp_path / "reference.joblib"))
    texts = [w for w, _ in snippets[:3]]
    assert list(reloaded.predict_proba(texts)) == list(reference.predict_proba(texts))
