"""Train, evaluate on the held-out period, register, promote; and score pages with the champion
(seed 002, Section 7). Pure pandas: the Spark jobs and Airflow tasks wire it.

The store's files are what the running processes read; the ``model_registry`` DAG records each stored version in
the model registry (MLflow) with its parameters, held-out metrics and the feature table's Delta version, and the
promotion rule's champion as its ``champion`` alias (:mod:`focuscrawl.orchestration.model_families`,
docs/running.md#the-model-registry-mlflow).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from focuscrawl.config import Settings
from focuscrawl.outlinks.evaluation import evaluate
from focuscrawl.outlinks.features import labelled
from focuscrawl.outlinks.models import model_specs, train
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.schema import SCOPES
from focuscrawl.outlinks.store import ModelStore, ModelVersion
from focuscrawl.outlinks.tables import FEATURES

def model_store(cfg: Settings) -> ModelStore:
    """The store under the run-time folder (``$FOCUSCRAWL_VAR/models/outlinks``)."""
    return ModelStore(cfg.var_dir / "models" / "outlinks")


def model_key(name: str, scope: str) -> str:
    return f"{name}/{scope}"


def periods_to_train(history_size: int) -> int:
    """Periods of snapshots the first model needs: a labelled feature row of period ``t`` needs a page's snapshots
    of ``t - history_size`` to ``t + 1`` (its look-back intervals, ``features.page_look_back``, and its target's),
    and training holds one labelled period out (:func:`held_out_split`)."""
    return history_size + 3


def features_of_no_use(periods: int, history_size: int, store: ModelStore) -> str | None:
    """Why features of snapshots spanning ``periods`` periods are of no use yet, ``None`` once they are: too few
    periods for a model to train on, and no champion to score them with. A young crawl's first features runs
    computed embeddings, related pages and features that nothing read (the first run on the warm Spark is its
    slowest: 134 s of the loaded freshness bench at 88a2183) and kept the DAG busy past the period that could
    train."""
    needed = periods_to_train(history_size)
    if periods >= needed or any(store.champion(name) for name in store.names()):
        return None
    return (f"{periods} period(s) of snapshots: the first model trains on {needed} ({history_size} to look back, "
            "one labelled by its next, one more held out), and no model is trained yet to score with")


class NotEnoughHistory(ValueError):
    """The feature table holds fewer than two labelled periods: one to train on and one to hold out."""


def held_out_split(features: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """``(train rows, test rows, eval period)``: the last labelled period is held out, every earlier one
    trains, so train and test never share a period. :class:`NotEnoughHistory` until there are two: a
    period's label is its next period's snapshot, so the live platform's first features have none (the
    freshness bench at 0f265f0: the first ``outlinks_train`` run, 85 s after the first snapshots landed)."""
    rows = labelled(features)
    periods = sorted(rows["period"].unique())
    if len(periods) < 2:
        raise NotEnoughHistory(
            f"{len(periods)} labelled period(s) in the feature table ({len(features)} rows): training needs two, "
            "one to train on and one held out; a period is labelled once the revisitor has snapshotted its next")
    eval_period = int(periods[-1])
    return rows[rows["period"] < eval_period], rows[rows["period"] == eval_period], eval_period


def sample_rows(rows: pd.DataFrame, train_sample: int = DEFAULT.train_sample, seed: int = 0) -> pd.DataFrame:
    """At most ``train_sample`` of ``rows``, drawn at random without replacement (0: all of them)."""
    if not train_sample or len(rows) <= train_sample:
        return rows
    return rows.sample(n=train_sample, random_state=seed)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's or ``taskset``'s share)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _fit_and_evaluate(spec, scope: str, train_rows: pd.DataFrame, test_rows: pd.DataFrame, history_size: int,
                      seed: int, options: dict):
    """One (model, scope): fitted on ``train_rows``, its metrics on ``test_rows``."""
    model = train(spec, train_rows, scope, history_size, seed, **options)
    predicted = model.predict(test_rows[spec.columns(scope, history_size)])
    return model, evaluate(test_rows[spec.target_column(scope)].to_numpy(), predicted, seed=seed)


# Fewer training rows than this and ``cores=0`` fits one after another in process: two loky workers cost 11 s of CPU
# to start (each imports pandas, scikit-learn and NGBoost again), more than the fits of the world's live lake take
# in all (2,222 rows: 8 s of CPU), while at 40,000 rows side by side took 61.2 s against 99.5 s (bench/fits_bench.py,
# docs/benchmarks.md). Workers forked from the task instead hung a task of the CI of 1809855, most likely because its
# process has threads (delta-rs's runtime among them) and a fork copies the locks they hold.
SIDE_BY_SIDE_ROWS = 10_000


def fit_models(pairs: list[tuple], train_rows: pd.DataFrame, test_rows: pd.DataFrame, history_size: int,
               seed: int = 0, cores: int = 0, **options) -> list[tuple]:
    """``(model, metrics)`` of each ``(spec, scope)`` in ``pairs``, in their order, fitted side by side.

    At most ``cores`` fits at once (0: :func:`usable_cores`, or one after another with fewer than
    :data:`SIDE_BY_SIDE_ROWS` training rows), each in a worker process of joblib's loky pool with its BLAS/OpenMP
    pools held to one thread (``inner_max_num_threads``), so k fits use k cores and no more. A fit depends only on
    its rows and ``seed``, so the models and metrics are those of fitting one after another
    (``tests/outlinks/test_training_fits.py``); one core fits in process. Each worker receives only its model's
    columns.
    """
    if cores < 0:
        raise ValueError(f"cores is the number of fits at once, 0 for every usable core; got {cores}")
    if cores == 0 and len(train_rows) < SIDE_BY_SIDE_ROWS:
        cores = 1
    jobs = max(1, min(cores or usable_cores(), len(pairs)))
    tasks = []
    for spec, scope in pairs:
        cols = list(dict.fromkeys([*spec.columns(scope, history_size), spec.target_column(scope)]))
        tasks.append((spec, scope, train_rows[cols], test_rows[cols], history_size, seed, options))
    if jobs == 1:
        return [_fit_and_evaluate(*task) for task in tasks]
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend="loky", inner_max_num_threads=1):
        return Parallel(n_jobs=jobs)(delayed(_fit_and_evaluate)(*task) for task in tasks)


def train_and_register(features: pd.DataFrame, data_version: int, store: ModelStore, history_size: int,
                       models=DEFAULT.models, scopes=SCOPES, seed: int = 0, promote: bool = True,
                       train_sample: int = DEFAULT.train_sample, cores: int = 0, **options) -> list[dict]:
    """One new version per (model, scope), fitted on ``train_sample`` rows of the periods before the last
    observed one and evaluated on that one; returns the rows of the ``outlink_models`` table.
    The fits run side by side on up to ``cores`` cores (:func:`fit_models`); registering and promoting
    follow in the models' order. ``promote=False`` leaves promotion to :func:`promote_latest` (the DAG's
    own step). Each version keeps the parameters it was trained with (the model registry records them)."""
    train_rows, test_rows, eval_period = held_out_split(features)
    train_rows = sample_rows(train_rows, train_sample, seed)
    specs = model_specs()
    pairs = [(specs[name], scope) for name in models for scope in scopes]
    out = []
    for (spec, scope), (model, metrics) in zip(pairs, fit_models(pairs, train_rows, test_rows, history_size,
                                                                  seed, cores, **options)):
        meta = store.register(ModelVersion(
            name=model_key(spec.name, scope), version=0, metrics=metrics, data_version=data_version,
            eval_period=eval_period, features=spec.columns(scope, history_size), history_size=history_size,
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            params={"model": spec.name, "scope": scope, "history_size": history_size, "seed": seed,
                    "train_sample": train_sample, "train_rows": len(train_rows), "test_rows": len(test_rows),
                    "eval_period": eval_period, **options}), model)
        promoted, reason = store.promote_if_not_worse(meta) if promote else (False, "candidate")
        out.append({"name": meta.name, "version": meta.version, "spearman": metrics["spearman"],
                    "pk_area": metrics["pk_area"], "data_version": data_version, "eval_period": eval_period,
                    "promoted": promoted, "reason": reason, "created_at": meta.created_at})
    return out


@dataclass(frozen=True)
class Promotion:
    """What :func:`promote_latest` did with one model's newest version."""

    model: str  # e.g. "NNL-ET_LBLA/int"
    version: int
    promoted: bool
    reason: str

    def __str__(self) -> str:
        return f"{self.model}: v{self.version} {'promoted' if self.promoted else 'kept champion'}: {self.reason}"


def promote_latest(store: ModelStore, models=DEFAULT.models, scopes=SCOPES) -> list[Promotion]:
    """Promote each model's newest version when it is not worse than the champion. A version is judged once:
    after a rollback (``focuscrawl models promote``) the champion stays until a newer version is trained."""
    outcome = []
    for name in models:
        for scope in scopes:
            versions = store.versions(model_key(name, scope))
            if not versions:
                raise LookupError(f"no trained version of {model_key(name, scope)} in {store.root}")
            latest = versions[-1]
            if latest.considered:
                champion = store.champion(latest.name)
                outcome.append(Promotion(latest.name, latest.version, False, "judged before; the champion stays v"
                                         + (str(champion.version) if champion is not None else "none")))
                continue
            promoted, reason = store.promote_if_not_worse(latest)
            outcome.append(Promotion(latest.name, latest.version, promoted, reason))
    return outcome


def score_pages(features: pd.DataFrame, store: ModelStore, model: str, scope: str) -> pd.DataFrame:
    """The champion's prediction for every page at the latest period (the one not yet observed),
    with a 0-1 percentile score (1 = revisit first), as rows of ``page_priorities``."""
    meta, predictor = store.load(model_key(model, scope))
    period = int(features["period"].max())
    rows = features[features["period"] == period]
    predicted = np.asarray(predictor.predict(rows[meta.features]), dtype=float)
    score = pd.Series(predicted).rank(method="average", pct=True).to_numpy() if len(rows) else predicted
    return pd.DataFrame({"url": rows["url"].to_numpy(), "predicted": predicted, "score": score,
                         "model": meta.name, "model_version": np.int32(meta.version), "period": np.int32(period)})
