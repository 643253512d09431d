"""The seed's experiment on pandas frames: snapshots -> related pages -> features -> models -> rankings
compared with the truth (seed 002, Section 7, Table 4 and Figures 14-15).

Models train on every interval before the held-out period and are evaluated on the held-out period
(by default the last one), as a crawler would: learn from past weeks, rank pages for the next.
The Spark jobs run the same steps at scale; the report and the tests call this module directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from focuscrawl.outlinks.embedding import LsaEmbedder
from focuscrawl.outlinks.evaluation import curve_area, precision_at_k_curve, spearman
from focuscrawl.outlinks.features import build_features, labelled
from focuscrawl.outlinks.models import ModelSpec, model_specs, train
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.related import related_pages
from focuscrawl.outlinks.schema import SCOPES, TARGETS, target_column
from focuscrawl.outlinks.targets import targets


def latest_texts(snapshots: pd.DataFrame, before_period: int) -> pd.DataFrame:
    """Each url's latest text strictly before ``before_period`` (what the crawler had seen)."""
    seen = snapshots[snapshots["period"] < before_period].sort_values("period")
    return seen.groupby("url", as_index=False).last()[["url", "text"]]


def related_frame(urls: list[str], indices: np.ndarray, sims: np.ndarray) -> pd.DataFrame:
    """The related-pages table rows: url, neighbour, rank (1 = most similar), similarity."""
    k = indices.shape[1]
    return pd.DataFrame({
        "url": np.repeat(np.asarray(urls, dtype=object), k),
        "neighbour": np.asarray(urls, dtype=object)[indices.ravel()],
        "rank": np.tile(np.arange(1, k + 1, dtype=np.int32), len(urls)),
        "similarity": sims.ravel().astype(float),
    })


def prepare(snapshots: pd.DataFrame, history_size: int = DEFAULT.history_size, k: int = DEFAULT.k,
            dimensions: int = DEFAULT.dimensions, related_method: str = DEFAULT.method,
            eval_period: int | None = None) -> pd.DataFrame:
    """Feature rows (with true targets) for every page and interval with a full history."""
    eval_period = int(snapshots["period"].max()) if eval_period is None else eval_period
    texts = latest_texts(snapshots, eval_period)
    vectors = LsaEmbedder(dimensions=dimensions).fit_transform(texts["text"].tolist())
    idx, sims = related_pages(vectors, method=related_method, k=k)
    related = related_frame(texts["url"].tolist(), idx, sims)
    return build_features(snapshots, targets(snapshots), related, history_size)


@dataclass
class ExperimentResult:
    spearman: pd.DataFrame  # rows: (scope, model); columns: truth LCR, NL, NNL
    pk_curves: dict[tuple[str, str], np.ndarray]  # (scope, model) -> Precision@k% against NNL
    pk_area: pd.DataFrame  # rows: (scope, model); column: pk_area (against NNL)
    importances: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    n_train: int = 0
    n_test: int = 0
    # Held-out rows: url, scope, model, predicted, and the true nnl/nl/lcr of the scope (raw rows for
    # intervals and for rebuilding tables without retraining).
    predictions: pd.DataFrame | None = None


def run_experiment(features: pd.DataFrame, history_size: int, eval_period: int | None = None,
                   specs: dict[str, ModelSpec] | None = None, scopes=SCOPES, seed: int = 0,
                   **options) -> ExperimentResult:
    """Train every spec on the periods before ``eval_period`` and rank the pages of ``eval_period``."""
    specs = specs or model_specs()
    features = labelled(features)
    eval_period = int(features["period"].max()) if eval_period is None else eval_period
    train_rows = features[features["period"] < eval_period]
    test_rows = features[features["period"] == eval_period]
    if train_rows.empty or test_rows.empty:
        raise ValueError(f"need feature rows before and at the held-out period {eval_period}; "
                         f"have periods {sorted(features['period'].unique())}")
    rho_rows, area_rows, curves, importances, kept = [], [], {}, {}, []
    for scope in scopes:
        for name, spec in specs.items():
            model = train(spec, train_rows, scope, history_size, seed, **options)
            predicted = model.predict(test_rows[spec.columns(scope, history_size)])
            kept.append(pd.DataFrame({"url": test_rows["url"].to_numpy(), "scope": scope, "model": name, "predicted": predicted,
                                      **{t: test_rows[target_column(t, scope)].to_numpy(float) for t in TARGETS}}))
            rho_rows.append({"scope": scope, "model": name,
                             **{t: spearman(test_rows[target_column(t, scope)], predicted) for t in TARGETS}})
            curve = precision_at_k_curve(test_rows[target_column("NNL", scope)].to_numpy(), predicted, seed=seed)
            curves[(scope, name)] = curve
            area_rows.append({"scope": scope, "model": name, "pk_area": curve_area(curve)})
            if hasattr(model, "importances"):
                importances[(scope, name)] = model.importances()
    return ExperimentResult(
        spearman=pd.DataFrame(rho_rows).set_index(["scope", "model"]),
        pk_curves=curves,
        pk_area=pd.DataFrame(area_rows).set_index(["scope", "model"]),
        importances=importances,
        n_train=len(train_rows),
        n_test=len(test_rows),
        predictions=pd.concat(kept, ignore_index=True),
    )
