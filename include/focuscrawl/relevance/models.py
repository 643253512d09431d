"""Page relevance models: a page's main text -> the probability that it is about the user's topic.

One protocol (:class:`PageRelevanceModel`), registered by name in :data:`PAGE_MODELS`, so a project
picks one with ``[profile.pages] model = "TFIDF-LR"``. Each is calibrated to [0, 1] by Platt
scaling fitted on cross-validation folds (Platt, "Probabilistic Outputs for Support Vector Machines
and Comparisons to Regularized Likelihood Methods", 1999, section 2; scikit-learn's
``CalibratedClassifierCV`` with ``method="sigmoid"``), so a threshold of 0.5 means "more likely about
the topic than not" whichever model is chosen, and scores of two models compare.

The shape users of focused crawlers expect (ACHE's page classifier: positive and negative example
pages, a linear model over word features, a relevance threshold) is the TF-IDF + logistic baseline;
the second model classifies the pages' LSA vectors, the embedding the revisits loop builds.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from focuscrawl.core.registry import Registry

# Fewest example pages of each class a model can be fitted and calibrated on (two calibration folds).
MIN_PER_CLASS = 2


class PageRelevanceModel(Protocol):
    """``fit(texts, labels)`` (1 = about the topic) returns the model; ``predict_proba(texts)`` gives
    one calibrated probability in [0, 1] per text."""

    def fit(self, texts: Sequence[str], labels: Sequence[int]): ...

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray: ...


PAGE_MODELS: Registry[PageRelevanceModel] = Registry("page relevance model")


def _check_examples(texts: Sequence[str], labels: Sequence[int]) -> np.ndarray:
    y = np.asarray(list(labels), dtype=int)
    if len(texts) != len(y):
        raise ValueError(f"{len(texts)} texts but {len(y)} labels; give one label per example page")
    counts = {c: int((y == c).sum()) for c in (0, 1)}
    if min(counts.values()) < MIN_PER_CLASS or set(np.unique(y)) - {0, 1}:
        raise ValueError(f"example pages by class {counts} (labels must be 0/1): each class needs at least "
                         f"{MIN_PER_CLASS} pages to fit and calibrate; add example pages of the missing class")
    return y


class _Calibrated:
    """A scikit-learn pipeline (:meth:`_pipeline`) wrapped in sigmoid calibration over stratified folds."""

    def __init__(self, *, C: float = 1.0, max_features: int = 50_000, seed: int = 0) -> None:
        self.C = C
        self.max_features = max_features
        self.seed = seed

    def _pipeline(self, n_texts: int):  # pragma: no cover - every model defines it
        raise NotImplementedError

    def fit(self, texts: Sequence[str], labels: Sequence[int]):
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.model_selection import StratifiedKFold

        y = _check_examples(texts, labels)
        folds = int(min(3, np.bincount(y).min()))
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=self.seed)
        self.model_ = CalibratedClassifierCV(self._pipeline(len(texts)), method="sigmoid", cv=cv)
        self.model_.fit(list(texts), y)
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros(0)
        return self.model_.predict_proba(list(texts))[:, 1]

    def _tfidf(self):
        from sklearn.feature_extraction.text import TfidfVectorizer

        return TfidfVectorizer(sublinear_tf=True, max_features=self.max_features, min_df=1, stop_words="english",
                               dtype=np.float64)

    def _logistic(self):
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.C, class_weight="balanced", max_iter=1000, random_state=self.seed)


@PAGE_MODELS.register("TFIDF-LR")
class TfidfLogistic(_Calibrated):
    """TF-IDF word weights (sublinear tf, English stop words removed) and an L2 logistic regression with
    balanced class weights: the linear text classifier of Joachims, "Text Categorization with Support
    Vector Machines: Learning with Many Relevant Features" (ECML 1998), sections 2-3, with the logistic
    loss in place of the hinge, calibrated by Platt scaling."""

    def _pipeline(self, n_texts: int):
        from sklearn.pipeline import make_pipeline

        return make_pipeline(self._tfidf(), self._logistic())


class _Lsa:
    """scikit-learn transformer over :class:`focuscrawl.outlinks.embedding.LsaEmbedder` (cloneable, so the
    calibration folds each fit their own)."""

    def __init__(self, dimensions: int = 100, seed: int = 0) -> None:
        self.dimensions = dimensions
        self.seed = seed

    def get_params(self, deep: bool = True) -> dict:
        return {"dimensions": self.dimensions, "seed": self.seed}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, texts, y=None):
        from focuscrawl.outlinks.embedding import LsaEmbedder

        self.embedder_ = LsaEmbedder(dimensions=self.dimensions, min_df=1, seed=self.seed).fit(list(texts))
        return self

    def transform(self, texts):
        return self.embedder_.transform(list(texts))


@PAGE_MODELS.register("LSA-LR")
class LsaLogistic(_Calibrated):
    """The pages' LSA vectors (TF-IDF then truncated SVD, unit length: Deerwester et al., "Indexing by
    Latent Semantic Analysis", JASIS 1990, section 4; the embedding of the revisits loop,
    :class:`focuscrawl.outlinks.embedding.LsaEmbedder`) and a logistic regression, calibrated by Platt
    scaling. Fewer, denser features than TF-IDF-LR: synonyms share dimensions, so few examples go further."""

    def __init__(self, *, dimensions: int = 100, C: float = 10.0, max_features: int = 50_000, seed: int = 0) -> None:
        super().__init__(C=C, max_features=max_features, seed=seed)
        self.dimensions = dimensions

    def _pipeline(self, n_texts: int):
        from sklearn.pipeline import make_pipeline

        return make_pipeline(_Lsa(dimensions=self.dimensions, seed=self.seed), self._logistic())


__all__ = ["MIN_PER_CLASS", "PAGE_MODELS", "LsaLogistic", "PageRelevanceModel", "TfidfLogistic"]
