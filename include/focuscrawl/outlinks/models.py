"""Predictors of new outlinks and the baselines they are compared with (seed 002, Section 7).

One protocol, ``fit(features, y)`` / ``predict(features)``, honoured by every estimator, chosen by name:

- ``ET-REG``: ExtraTrees regressor (LCR, NNL); ``ET-CLF``: ExtraTrees classifier, the predicted
  class (NL); ``ET-PROB``: the same classifier's probability of new outlinks (PNL);
- ``NGB-POISSON``: NGBoost with a Poisson distribution for NNL, ranking by the learned mean mu(p);
- baselines, which learn nothing: ``NNL-AV`` (average number of new outlinks in previous periods),
  ``NNL-PR`` (number in the previous period), ``CCR`` (content change rate).

A :class:`ModelSpec` names what the seed's figures call e.g. ``NNL-ET_LBLA``: target, estimator and
feature set; :func:`model_specs` lists the seed's line-up.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from focuscrawl.outlinks.schema import feature_columns, target_column
from focuscrawl.registry import Registry


class Predictor(Protocol):
    def fit(self, features: pd.DataFrame, y: np.ndarray) -> "Predictor": ...

    def predict(self, features: pd.DataFrame) -> np.ndarray: ...


ESTIMATORS = Registry[Predictor]("outlink estimator")


class _ExtraTrees:
    """Shared by the three ExtraTrees uses; subclasses choose the sklearn class and the output."""

    def __init__(self, n_estimators: int = 200, min_samples_leaf: int = 3, seed: int = 0, n_jobs: int = 1) -> None:
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.seed = seed
        self.n_jobs = n_jobs

    def _make(self):
        raise NotImplementedError

    def fit(self, features, y):
        self.columns_ = list(features.columns)
        self.model_ = self._make()(n_estimators=self.n_estimators, min_samples_leaf=self.min_samples_leaf,
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
class NgboostPoisson:
    """NGBoost, Poisson distribution: predicts the mean number of new outlinks mu(p)."""

    def __init__(self, n_estimators: int = 300, learning_rate: float = 0.03, seed: int = 0) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.seed = seed

    def fit(self, features, y):
        from ngboost import NGBRegressor
        from ngboost.distns import Poisson

        self.columns_ = list(features.columns)
        self.model_ = NGBRegressor(Dist=Poisson, n_estimators=self.n_estimators, learning_rate=self.learning_rate,
                                   random_state=self.seed, verbose=False)
        self.model_.fit(features.to_numpy(float), np.asarray(y).round().astype(int))
        return self

    def predict(self, features):
        return np.asarray(self.model_.predict(features[self.columns_].to_numpy(float)), dtype=float)

    def importances(self) -> dict[str, float]:
        # Importance for the Poisson's only parameter (log mu).
        return dict(zip(self.columns_, np.asarray(self.model_.feature_importances_)[0].tolist()))


class _Baseline:
    """Ranks by one look-back column of the target scope; nothing to learn."""

    column = ""

    def __init__(self, scope: str = "int") -> None:
        self.scope = scope

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
        """The estimator; of ``options`` (e.g. ``n_estimators``) each gets those its constructor takes."""
        cls = ESTIMATORS.get(self.estimator)
        if self.feature_set is None:
            return cls(scope=scope)
        accepted = inspect.signature(cls.__init__).parameters
        return cls(seed=seed, **{k: v for k, v in options.items() if k in accepted})

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
