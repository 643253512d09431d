"""The source schedule's fitted parameters as versioned models: each ``source_schedule`` run's estimates.

Every run fits each source's λ, P and μ (:mod:`focuscrawl.ephemeral.estimate`) and stores them as the next version
of ``estimates`` in the sources model store (``$FOCUSCRAWL_VAR/models/sources``), with the knobs it ran with and
the Delta versions of the tables it read; the newest fit replaces the last (the store's champion), and the model
registry records it (docs/running.md#the-model-registry-mlflow). After a rollback (``focuscrawl models promote``)
the plan is made from the champion's estimates and nothing is fitted, until a newer version is promoted.
A version's held-out figures (:func:`held_out`) are measured when the registry records it, off the loop's run,
from the tables at the Delta versions the fit read.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from focuscrawl.outlinks.store import ModelStore, ModelVersion

KEY = "estimates"


def model_store(cfg) -> ModelStore:
    return ModelStore(Path(cfg.var_dir) / "models" / "sources")


def plan_estimates(store: ModelStore, fit: Callable[[], pd.DataFrame], params: Mapping[str, object],
                   delta_versions: Mapping[str, int]) -> tuple[pd.DataFrame, str]:
    """``(estimates, what was done)``: the rolled-back champion's, or ``fit()`` stored as the new champion (when it
    estimated any source)."""
    pinned, champion = store.rolled_back(KEY), store.champion(KEY)
    if pinned is not None:
        return store.load(KEY, pinned.version)[1], f"rolled back: v{pinned.version}'s estimates, none fitted"
    estimates = fit()
    if estimates.empty:  # no source recrawled or fetched yet: no model to keep, nor to roll back to
        return estimates, "none fitted: no source has a recrawl or a fetched page yet"
    meta = store.register(ModelVersion(
        name=KEY, version=0, metrics={}, data_version=0, eval_period=0, delta_versions=dict(delta_versions),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        params={**params, "sources": len(estimates)}), estimates.reset_index(drop=True))
    promoted, why = store.promote_newest(meta, champion)
    if not promoted:  # a rollback came during the fit: plan with the rolled-back champion's
        return store.load(KEY)[1], f"v{meta.version} fitted, not planned with: {why}"
    return estimates, f"v{meta.version} fitted"


def held_out(cfg, meta: ModelVersion) -> dict[str, float]:
    """The forward held-out figures of the fit ``meta`` (:func:`focuscrawl.ephemeral.evaluation.held_out_figures`),
    from ``source_recrawls`` and its profit signal's table at the Delta versions the fit read."""
    from focuscrawl.ephemeral.evaluation import held_out_figures
    from focuscrawl.ephemeral.feedback import profit_signal
    from focuscrawl.ephemeral.params import DEFAULT
    from focuscrawl.ephemeral.tables import BULKY_COLUMNS, HISTORY_TABLES, SOURCE_RECRAWLS
    from focuscrawl.lake import open_table

    signal = profit_signal(meta.params.get("feedback", DEFAULT.feedback),
                           meta.params.get("freshness_half_life_s", DEFAULT.freshness_half_life_s))

    def rows(spec) -> pd.DataFrame:
        table = open_table(spec.path(cfg), version=meta.delta_versions.get(spec.name))
        if table is None:
            return pd.DataFrame(columns=spec.column_names)
        columns = [f.name for f in table.schema().fields if f.name not in BULKY_COLUMNS]
        return table.to_pyarrow_table(columns=columns).to_pandas()

    return held_out_figures(rows(SOURCE_RECRAWLS), rows(HISTORY_TABLES[signal.table]), signal)


__all__ = ["KEY", "held_out", "model_store", "plan_estimates"]
