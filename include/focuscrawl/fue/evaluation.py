"""Held-out figures of the FUE loop's classifiers, which are fitted on every example user.

Seed 000 (*Real-time focused extraction of social media users*) section IV-F fits the reference classifier on all
486 training users; ``focuscrawl train`` does the same with a project's example users, so no user is left to
measure the stored model on. Its figures are the cross-validation estimate instead (Hastie, Tibshirani and
Friedman, *The Elements of Statistical Learning*, 2nd ed., section 7.10): the users are split into stratified
folds, each fold's users are scored by a model fitted the same way on the other folds only (its vocabulary and
idf too: ``UserClassifier.fit_counts`` on those rows), and the area under the ROC curve is taken over every
user's out-of-fold score of its whole history, with its percentile bootstrap interval over the users
(:func:`focuscrawl.relevance.evaluation.bootstrap`). No user is scored by a model that saw it. The estimate is
of the procedure on a fifth fewer users, not of the stored model itself (section 7.10.1: biased a little
downwards for that). The histories are analysed once (:class:`focuscrawl.fue.classifier.TermCounts`), since
tokenising is most of a fit.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from focuscrawl.fue.classifier import TermCounts, UserClassifier

# Folds when every class has as many users; fewer users of a class make as many folds as it has.
FOLDS = 5


def cross_validated(fit: Callable[[list[int]], UserClassifier], counts: TermCounts, labels: Sequence[int],
                    folds: int = FOLDS, seed: int = 0) -> dict[str, float]:
    """``{"cv_auc", "cv_auc_low", "cv_auc_high", "cv_folds"}``: ``fit(rows)`` is the classifier fitted on the example
    users ``rows`` only; ``counts`` holds every user's whole history, analysed (row ``i`` is user ``i``), from which
    each held-out user is scored. Empty when a class has fewer than two users or a fold leaves no term to fit on."""
    from sklearn.model_selection import StratifiedKFold

    from focuscrawl.relevance.evaluation import auc, bootstrap

    y = np.asarray(labels, dtype=int)
    k = min(folds, int(min(y.sum(), len(y) - y.sum())))
    if k < 2:
        return {}
    scores = np.empty(len(y))
    for train, held in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
        try:
            model = fit(train.tolist())
        except ValueError:  # scikit-learn or fit_counts: no term left after min_df on a fold of a tiny set
            return {}
        scores[held] = model.predict_proba_counted(counts, counts.matrix(held.tolist()))
    interval = bootstrap(y, scores, auc, seed=seed)
    return {"cv_auc": interval.value, "cv_auc_low": interval.low, "cv_auc_high": interval.high, "cv_folds": float(k)}


__all__ = ["FOLDS", "cross_validated"]
