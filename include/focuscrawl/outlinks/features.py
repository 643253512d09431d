"""Features in the seed's taxonomy, with LBLA (seed 002, Sections 5.2, 6 and 7).

A feature row describes page ``p`` before target interval ``t`` (the interval that ends with the
snapshot of period ``t``) from what a crawler knows at period ``t-1``:

- SP, static page: URL depth, number of words, number of internal/external outlinks;
- DP, dynamic page (*look back*): the page's own history over ``history_size`` intervals: NNL per
  interval, its average (the NNL-Av baseline), NL of the last interval (NNL-Pr is ``nnl_*_lag1``),
  the rate of intervals with new outlinks (own LCR so far) and the content change rate (CCR);
- SN, static network: mean similarity of the related pages and their mean number of outlinks;
- DN, dynamic network (*look around*): mean and max of the related pages' look-back values.

LBLA keeps only the target's own history and the same over its related pages; for LCR only the
look around (Section 7: "predictions for LCR use LCR values only of related pages"), and the
all-features LCR models drop DP, which defines LCR.

The per-page look back and the look-around aggregation spec are shared with the Spark job
(``spark_jobs/outlinks_features.py``), which runs the first per url and expresses the second in SQL.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from focuscrawl.outlinks.schema import AROUND_SPEC, SCOPES, around_name, feature_groups, look_back_columns
from focuscrawl.outlinks.urls import url_depth

def page_look_back(pages: pd.DataFrame, history_size: int) -> pd.DataFrame:
    """Look-back features and true targets of the pages in ``pages`` (their target rows, targets.py),
    for every interval with a full history.

    Vectorised over a url x period grid; missing periods (failed fetches) leave holes, so
    intervals whose history window is incomplete are dropped rather than shifted. Spark runs it per
    url with applyInPandas; pandas callers pass every page at once.
    """
    h = history_size
    out_cols = ["url", "period"] + look_back_columns(h) + [f"{t}_{s}" for t in ("nnl", "nl", "lcr") for s in SCOPES]
    if pages.empty:
        return pd.DataFrame(columns=out_cols)
    periods = range(int(pages["period"].min()), int(pages["period"].max()) + 2)
    wide = pages.pivot(index="url", columns="period").reindex(columns=periods, level=1)

    def grid(col: str) -> np.ndarray:
        return wide[col].reindex(columns=periods).to_numpy(float)

    def lag(matrix: np.ndarray, i: int) -> np.ndarray:
        out = np.full_like(matrix, np.nan)
        out[:, i:] = matrix[:, :-i] if i < matrix.shape[1] else out[:, i:]
        return out

    feats: dict[str, np.ndarray] = {}
    for s in SCOPES:
        nnl, nl = grid(f"nnl_{s}"), grid(f"nl_{s}")
        lags = [lag(nnl, i) for i in range(1, h + 1)]
        for i, m in enumerate(lags, start=1):
            feats[f"nnl_{s}_lag{i}"] = m
        feats[f"nnl_{s}_av"] = np.mean(lags, axis=0)
        feats[f"nl_{s}_rate"] = np.mean([lag(nl, i) for i in range(1, h + 1)], axis=0)
        feats[f"nl_{s}_lag1"] = lag(nl, 1)
    changed = grid("content_changed")
    feats["ccr"] = np.mean([lag(changed, i) for i in range(1, h + 1)], axis=0)
    for s in SCOPES:
        feats[f"nnl_{s}"] = grid(f"nnl_{s}")
        feats[f"nl_{s}"] = grid(f"nl_{s}")
        # LCR over the window: the history intervals plus the target interval (Section 7, "LCR over 9 weeks").
        feats[f"lcr_{s}"] = (feats[f"nl_{s}_rate"] * h + feats[f"nl_{s}"]) / (h + 1)
    n_urls, n_periods = len(wide.index), len(periods)
    out = pd.DataFrame({"url": np.repeat(wide.index.to_numpy(), n_periods),
                        "period": np.tile(np.asarray(periods), n_urls),
                        **{c: m.ravel() for c, m in feats.items()}})
    out = out.dropna(subset=look_back_columns(h))
    return out[out_cols].reset_index(drop=True)


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows whose targets are observed (drops the next-period rows that only carry features)."""
    return frame.dropna(subset=[f"nnl_{s}" for s in SCOPES])


def look_back(targets: pd.DataFrame, history_size: int) -> pd.DataFrame:
    return page_look_back(targets, history_size)


def page_statics(snapshots: pd.DataFrame) -> pd.DataFrame:
    """Static page features per snapshot, keyed to the *next* interval (``period + 1``), whose features they are."""
    out = pd.DataFrame({
        "url": snapshots["url"],
        "period": snapshots["period"].astype(int) + 1,
        "url_depth": [url_depth(u) for u in snapshots["url"]],
        "n_words": [len(t.split()) if isinstance(t, str) else 0 for t in snapshots["text"]],
        "n_links_int": [len(x) if x is not None else 0 for x in snapshots["internal_outlinks"]],
        "n_links_ext": [len(x) if x is not None else 0 for x in snapshots["external_outlinks"]],
    })
    return out


def look_around(pages: pd.DataFrame, related: pd.DataFrame) -> pd.DataFrame:
    """Aggregate the related pages' rows per (url, period) by :data:`AROUND_SPEC`.

    ``pages``: url, period and every source column; ``related``: url, neighbour, similarity.
    """
    rel = related[["url", "neighbour", "similarity"]]
    joined = rel.merge(pages.drop(columns=["similarity"], errors="ignore").rename(columns={"url": "neighbour"}),
                       on="neighbour")
    named = {around_name(src, agg): (src, agg) for src, agg in AROUND_SPEC}
    return joined.groupby(["url", "period"], as_index=False).agg(**named)


def build_features(snapshots: pd.DataFrame, targets: pd.DataFrame, related: pd.DataFrame,
                   history_size: int) -> pd.DataFrame:
    """One row per (url, target period) with full history: every feature group and every true target."""
    back = look_back(targets, history_size)
    pages = back.merge(page_statics(snapshots), on=["url", "period"], how="left")
    around = look_around(pages, related)
    out = pages.merge(around, on=["url", "period"], how="left")
    cols = [c for cols in feature_groups(history_size).values() for c in cols]
    out[cols] = out[cols].astype(float).fillna(0.0)
    return out.sort_values(["period", "url"], ignore_index=True)
