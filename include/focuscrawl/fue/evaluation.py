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
from focuscrawl.fue.pseudo import PseudoLabelling

# Folds when every class has as many users; fewer users of a class make as many folds as it has.
FOLDS = 5


def _out_of_fold(fit: Callable[[list[int]], Sequence[UserClassifier]], counts: TermCounts, y: np.ndarray,
                 folds: int, seed: int) -> tuple[np.ndarray, int] | None:
    """``(scores, folds)``: row ``j`` of ``scores`` is every user's score by the ``j``-th classifier ``fit(rows)``
    makes on the other folds' users; None when a class has fewer than two users or a fold leaves no term."""
    from sklearn.model_selection import StratifiedKFold

    k = min(folds, int(min(y.sum(), len(y) - y.sum())))
    if k < 2:
        return None
    scores: np.ndarray | None = None
    for train, held in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
        try:
            models = fit(train.tolist())
        except ValueError:  # scikit-learn or fit_counts: no term left after min_df on a fold of a tiny set
            return None
        scores = np.empty((len(models), len(y))) if scores is None else scores
        x = counts.matrix(held.tolist())
        for j, model in enumerate(models):
            scores[j, held] = model.predict_proba_counted(counts, x)
    return scores, k


def _auc_figures(y: np.ndarray, scores: np.ndarray, seed: int, prefix: str = "cv_auc") -> dict[str, float]:
    from focuscrawl.relevance.evaluation import auc, bootstrap

    interval = bootstrap(y, scores, auc, seed=seed)
    return {prefix: interval.value, f"{prefix}_low": interval.low, f"{prefix}_high": interval.high}


def cross_validated(fit: Callable[[list[int]], UserClassifier], counts: TermCounts, labels: Sequence[int],
                    folds: int = FOLDS, seed: int = 0) -> dict[str, float]:
    """``{"cv_auc", "cv_auc_low", "cv_auc_high", "cv_folds"}``: ``fit(rows)`` is the classifier fitted on the example
    users ``rows`` only; ``counts`` holds every user's whole history, analysed (row ``i`` is user ``i``), from which
    each held-out user is scored. Empty when a class has fewer than two users or a fold leaves no term to fit on."""
    y = np.asarray(labels, dtype=int)
    found = _out_of_fold(lambda rows: (fit(rows),), counts, y, folds, seed)
    if found is None:
        return {}
    scores, k = found
    return {**_auc_figures(y, scores[0], seed), "cv_folds": float(k)}


def pseudo_cross_validated(counts: TermCounts, labels: Sequence[int], extracted: Sequence[int],
                           labelling: PseudoLabelling, folds: int = FOLDS, seed: int = 0) -> dict[str, float]:
    """The held-out figures of a pseudo-trained refresh (seed 000, section V), by cross-validation over the example
    users: in each fold a reference classifier is fitted on the other folds' users only, it judges the extracted
    users (rows ``extracted`` of ``counts``, after the ``labels``' users), ``labelling`` makes the pseudo-examples
    of its verdicts, and the refreshed classifier is fitted on those users plus the pseudo-examples, as
    :func:`focuscrawl.fue.pseudo.retrain_and_rescore` does; it scores the fold's users. No held-out user's text or
    label reaches its fold's models, through the pseudo-labels either. Returns ``cv_auc`` (``_low``, ``_high``) of
    the refreshed classifier, ``cv_auc_reference`` of the fold's reference (no pseudo-example) on the same users,
    and ``cv_auc_gain``, the refresh's AUC less the reference's, with its paired bootstrap interval over the
    users; ``cv_folds``, ``pseudo_examples`` (the mean over the folds). Empty as :func:`cross_validated`."""
    from focuscrawl.fue.classifier import reference_params
    from focuscrawl.relevance.evaluation import auc, bootstrap

    y, extracted = np.asarray(labels, dtype=int), list(extracted)
    joined: list[int] = []

    def fit(rows: list[int]) -> tuple[UserClassifier, UserClassifier]:
        params = reference_params(len(rows))
        reference = UserClassifier(**params).fit_counts(counts, y[rows], rows=rows)
        verdicts = reference.predict_proba_counted(counts, counts.matrix(extracted)) if extracted else []
        pseudo = [(row, label) for row, p in zip(extracted, verdicts) if (label := labelling.label(p)) is not None]
        joined.append(len(pseudo))
        refreshed = UserClassifier(**params).fit_counts(counts, [*y[rows], *(label for _, label in pseudo)],
                                                        rows=[*rows, *(row for row, _ in pseudo)])
        return refreshed, reference

    found = _out_of_fold(fit, counts, y, folds, seed)
    if found is None:
        return {}
    scores, k = found
    gain = bootstrap(y, scores.T, lambda y_, s: auc(y_, s[:, 0]) - auc(y_, s[:, 1]), seed=seed)
    return {**_auc_figures(y, scores[0], seed), **_auc_figures(y, scores[1], seed, "cv_auc_reference"),
            "cv_auc_gain": gain.value, "cv_auc_gain_low": gain.low, "cv_auc_gain_high": gain.high,
            "cv_folds": float(k), "pseudo_examples": float(np.mean(joined))}


__all__ = ["FOLDS", "cross_validated", "pseudo_cross_validated"]
