"""Predictors of new outlinks and the baselines they are compared with (seed 002, Section 7).

One protocol, ``fit(features, y)`` / ``predict(features)``, honoured by every estimator, chosen by name:

- ``ET-REG``: ExtraTrees regressor (LCR, NNL); ``ET-CLF``: ExtraTrees classifier, the predicted
  class (NL); ``ET-PROB``: the same classifier's probability of new outlinks (PNL);
- ``NGB-POISSON``: NGBoost with a Poisson distribution for NNL, ranking by the learned mean mu(p);
- baselines, which learn nothing: ``NNL-AV`` (average number of new outlinks in previous periods),
  ``NNL-PR`` (number in the previous period), ``CCR`` (content change rate).

Every estimator takes the same keyword-only constructor arguments (:class:`OutlinkEstimator`), as
the ranking methods do, so one set of options serves the whole line-up: ``ESTIMATORS.create("NGB-POISSON",
seed=1, n_estimators=50)``; an argument a method has no use for (a baseline's ``seed``, NGBoost's
``min_samples_leaf``) is stored and ignored.

A :class:`ModelSpec` names what the seed's figures call e.g. ``NNL-ET_LBLA``: target, estimator and
feature set; :func:`model_specs` lists the seed's line-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
import pandas as pd

from focuscrawl.outlinks.schema import feature_columns, target_column
from focuscrawl.core.registry import Registry


class Predictor(Protocol):
    def fit(self, features: pd.DataFrame, y: np.ndarray) -> "Predictor": ...

    def predict(self, features: pd.DataFrame) -> np.ndarray: ...


ESTIMATORS = Registry[Predictor]("outlink estimator")


class OutlinkEstimator:
    """The one constructor of every outlink estimator: ``scope`` (``int``/``ext``) is the look-back a
    baseline reads; ``seed`` and the hyper-parameters are the learned models'. ``n_estimators=None`` is
    the method's own default (:attr:`default_n_estimators`)."""

    default_n_estimators: ClassVar[int] = 0

    def __init__(self, *, scope: str = "int", seed: int = 0, n_estimators: int | None = None,
                 min_samples_leaf: int = 3, learning_rate: float = 0.03, n_jobs: int = 1) -> None:
        self.scope = scope
        self.seed = seed
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.learning_rate = learning_rate
        self.n_jobs = n_jobs

    def _trees(self) -> int:
        return self.n_estimators or self.default_n_estimators


class _ExtraTrees(OutlinkEstimator):
    """Shared by the three ExtraTrees uses; subclasses choose the sklearn class and the output."""

    default_n_estimators = 200

    def _make(self):
        raise NotImplementedError

    def fit(self, features, y):
        self.columns_ = list(features.columns)
        self.model_ = self._make()(n_estimators=self._trees(), min_samples_leaf=self.min_samples_leaf,
                                   random_state=self.seed, n_jobs=self.n_jobs)
        self.model_.fit(features.to_numpy(float), y)
        return self

    def predict(self, features):
        return self.model_.predict(features[self.columns_].to_numpy(float)).astype(float)

    def importances(self) -> dict[str, float]:
        return dict(zip(self.columns_, self.model_.feature_importances_.tolist()))


@ESTIMATORS.register("ET-REG")
class ExtraTreesRegressor(_ExtraTrees):
    def _make(self):
        from sklearn.ensemble import ExtraTreesRegressor as cls

        return cls


@ESTIMATORS.register("ET-CLF")
class ExtraTreesClassifier(_ExtraTrees):
    def _make(self):
        from sklearn.ensemble import ExtraTreesClassifier as cls

        return cls

    def fit(self, features, y):
        return super().fit(features, np.asarray(y) > 0)


@ESTIMATORS.register("ET-PROB")
class ExtraTreesProbability(ExtraTreesClassifier):
    def predict(self, features):
        proba = self.model_.predict_proba(features[self.columns_].to_numpy(float))
        classes = list(self.model_.classes_)
        return proba[:, classes.index(True)] if True in classes else np.zeros(len(features))


@ESTIMATORS.register("NGB-POISSON")
class NgboostPoisson(OutlinkEstimator):
    """NGBoost, Poisson distribution: predicts the mean number of new outlinks mu(p)
    (its base learner is NGBoost's default tree: ``min_samples_leaf`` does not apply)."""

    default_n_estimators = 300

    def fit(self, features, y):
        from ngboost import NGBRegressor

        from focuscrawl.outlinks.ngboost_poisson import Poisson

        self.columns_ = list(features.columns)
        self.model_ = NGBRegressor(Dist=Poisson, n_estimators=self._trees(), learning_rate=self.learning_rate,
                                   random_state=self.seed, verbose=False)
        self.model_.fit(features.to_numpy(float), np.asarray(y).round().astype(int))
        return self

    def predict(self, features):
        return np.asarray(self.model_.predict(features[self.columns_].to_numpy(float)), dtype=float)

    def importances(self) -> dict[str, float]:
        # Importance for the Poisson's only parameter (log mu).
        return dict(zip(self.columns_, np.asarray(self.model_.feature_importances_)[0].tolist()))


class _Baseline(OutlinkEstimator):
    """Ranks by one look-back column of the target scope; nothing to learn."""

    column = ""

    def fit(self, features, y):
        return self

    def predict(self, features):
        return features[self.column.format(scope=self.scope)].to_numpy(float)


@ESTIMATORS.register("NNL-AV")
class NnlAverage(_Baseline):
    column = "nnl_{scope}_av"


@ESTIMATORS.register("NNL-PR")
class NnlPrevious(_Baseline):
    column = "nnl_{scope}_lag1"


@ESTIMATORS.register("CCR")
class ContentChangeRate(_Baseline):
    column = "ccr"


BASELINES = ("NNL-AV", "NNL-PR", "CCR")


@dataclass(frozen=True)
class ModelSpec:
    """One line of the seed's figures: ``name`` predicts ``target`` with ``estimator`` on ``feature_set``."""

    name: str
    target: str
    estimator: str
    feature_set: str | None  # "all", "lbla", or None for a baseline

    def columns(self, scope: str, history_size: int) -> list[str]:
        if self.feature_set is None:
            return [self.baseline_column(scope)]
        return feature_columns(self.target, scope, self.feature_set, history_size)

    def baseline_column(self, scope: str) -> str:
        return ESTIMATORS.get(self.estimator).column.format(scope=scope)

    def create(self, scope: str, seed: int = 0, **options) -> Predictor:
        """The estimator, with ``options`` (e.g. ``n_estimators``) of :class:`OutlinkEstimator`."""
        return ESTIMATORS.create(self.estimator, scope=scope, seed=seed, **options)

    def target_column(self, scope: str) -> str:
        return target_column(self.target, scope)


def model_specs() -> dict[str, ModelSpec]:
    """The seed's line-up (Figure 14): each learned model on all features and on LBLA only, and the baselines."""
    learned = [("LCR-ET", "LCR", "ET-REG"), ("NL-ET", "NL", "ET-CLF"), ("PNL-ET", "NL", "ET-PROB"),
               ("NNL-ET", "NNL", "ET-REG"), ("NNL-NGB", "NNL", "NGB-POISSON")]
    specs = {}
    for name, target, est in learned:
        specs[name] = ModelSpec(name, target, est, "all")
        specs[f"{name}_LBLA"] = ModelSpec(f"{name}_LBLA", target, est, "lbla")
    for name in BASELINES:
        display = {"NNL-AV": "NNL-Av", "NNL-PR": "NNL-Pr", "CCR": "CCR"}[name]
        specs[display] = ModelSpec(display, "NNL", name, None)
    return specs


def train(spec: ModelSpec, frame: pd.DataFrame, scope: str, history_size: int, seed: int = 0,
          **options) -> Predictor:
    """Fit ``spec`` on the rows of ``frame`` (features and true targets)."""
    cols = spec.columns(scope, history_size)
    return spec.create(scope, seed, **options).fit(frame[cols], frame[spec.target_column(scope)].to_numpy(float))
