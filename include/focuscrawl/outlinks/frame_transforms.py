"""The ``outlinks_features`` steps on pandas frames, in the job's own process: the twins of
:mod:`focuscrawl.outlinks.spark_transforms` for a lake too small to be worth a Spark plan.

On the live platform's world (tens of pages a period) each step on the warm Spark paid for planning, shuffles and
Python-worker round trips, not for work: per run, embed 18-33 s, related 6-22 s, features 21-57 s, near duplicates
8-28 s (Airflow's task logs, 2026-12-06, the loops under their test load). Up to ``Settings.spark_in_process_mib``
of input Parquet (:func:`focuscrawl.lake.spark.in_process`), ``spark_jobs/outlinks_embed.py``, ``outlinks_related.py``,
``outlinks_features.py`` and ``near_duplicates.py`` read with delta-rs, call these and write with delta-rs
(:func:`focuscrawl.lake.replace_frame`). Each function here is built from the same pieces as its Spark twin of the
same name (LSA, the registered related-pages search, look back, page statics and look around, MinHash + LSH), and
``tests/outlinks/test_frame_transforms.py`` holds each pair equal on one lake.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from focuscrawl.core.dedup import DEFAULT as NEAR_DUPLICATE_DEFAULT
from focuscrawl.core.dedup import NearDuplicateParams, clusters, near_duplicate_pairs
from focuscrawl.outlinks.embedding import LsaEmbedder
from focuscrawl.outlinks.features import build_features
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.related import RELATED, RelatedPages
from focuscrawl.outlinks.schema import SCOPES, feature_groups
from focuscrawl.outlinks.targets import LINK_COLUMNS, link_relevance, targets

EMBEDDING_COLUMNS = ["url", "as_of_period", "vector"]
RELATED_COLUMNS = ["url", "neighbour", "rank", "similarity"]
NEAR_DUPLICATE_COLUMNS = ["url_a", "url_b", "estimated_jaccard", "jaccard", "cluster_id", "as_of_period"]


def latest_snapshots(snapshots: pd.DataFrame, before_period: int | None = None) -> pd.DataFrame:
    """Each url's latest snapshot (strictly before ``before_period`` when given), the whole row."""
    seen = snapshots if before_period is None else snapshots[snapshots["period"] < before_period]
    return seen.sort_values(["url", "period"]).drop_duplicates("url", keep="last")


def latest_texts(snapshots: pd.DataFrame, before_period: int | None = None) -> pd.DataFrame:
    """url, as_of_period, text of each url's latest snapshot: its main text where one was landed, else its
    visible text (:func:`focuscrawl.outlinks.spark_transforms.latest_texts`)."""
    latest = latest_snapshots(snapshots, before_period)
    text = latest["text"]
    if "main_text" in latest.columns:
        main = latest["main_text"]
        text = main.where(main.notna() & (main.str.len() > 0), text)
    return pd.DataFrame({"url": latest["url"].to_numpy(object), "as_of_period": latest["period"].to_numpy(np.int32),
                         "text": text.to_numpy(object)})


def held_out_period(snapshots: pd.DataFrame) -> int | None:
    """The last snapshot period (:func:`focuscrawl.outlinks.spark_transforms.held_out_period`)."""
    return None if snapshots.empty else int(snapshots["period"].max())


def embed(snapshots: pd.DataFrame, dimensions: int = DEFAULT.dimensions, sample_size: int = DEFAULT.sample_size,
          seed: int = 0, before_period: int | None = None) -> pd.DataFrame:
    """url, as_of_period, vector: LSA fitted on the first ``sample_size`` pages by url, applied to every page."""
    latest = latest_texts(snapshots, before_period).sort_values("url", ignore_index=True)
    texts = latest["text"].fillna("").tolist()
    sample = texts[:sample_size]
    if not any(text.strip() for text in sample):  # a young crawl: no text before its held-out period yet
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(EMBEDDING_COLUMNS, (object, np.int32, object))})
    vectors = LsaEmbedder(dimensions=dimensions, seed=seed).fit(sample).transform(texts)
    return pd.DataFrame({"url": latest["url"], "as_of_period": latest["as_of_period"], "vector": list(vectors)})


def neighbour_rows(searcher: RelatedPages, urls: np.ndarray, ids: np.ndarray) -> pd.DataFrame:
    """url, neighbour, rank, similarity of the pages ``ids`` (rows of the matrix ``searcher`` was fitted on,
    named by ``urls``); an approximate method may find fewer than k. Spark's ``related`` calls it per block."""
    idx, sims = searcher.search(searcher.vectors_[ids], query_ids=ids)
    k = idx.shape[1]
    found = idx.ravel() >= 0
    return pd.DataFrame({"url": np.repeat(urls[ids], k)[found], "neighbour": urls[idx.ravel()[found]],
                         "rank": np.tile(np.arange(1, k + 1, dtype=np.int32), len(ids))[found],
                         "similarity": sims.ravel()[found].astype(float)})


def related(embeddings: pd.DataFrame, k: int = DEFAULT.k, method: str = DEFAULT.method, **options) -> pd.DataFrame:
    """url, neighbour, rank, similarity: the k related pages of every page (seed 002, Section 7)."""
    if embeddings.empty:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(RELATED_COLUMNS, (object, object, np.int32, float))})
    urls = embeddings["url"].to_numpy(object)
    matrix = np.vstack(embeddings["vector"].to_numpy()).astype(np.float32)
    searcher = RELATED.create(method, k=k, **options).fit(matrix)
    return neighbour_rows(searcher, urls, np.arange(len(urls)))


def relevant_links(snapshots: pd.DataFrame, score_texts: Callable[[list[str]], Sequence[float | None]],
                   threshold: float) -> set[str]:
    """The outlinks about the page focus: a fetched page's latest ``relevance``, else ``score_texts`` of its
    URL's words, at or above ``threshold`` (:func:`focuscrawl.outlinks.targets.link_relevance`)."""
    scored = latest_snapshots(snapshots[snapshots["relevance"].notna()])
    known = dict(zip(scored["url"], scored["relevance"].astype(float)))
    links = (u for column in LINK_COLUMNS.values() for page in snapshots[column] if page is not None for u in page)
    found = link_relevance(links, known, score_texts)
    return {u for u, r in found.items() if r is not None and r >= threshold}


def features(snapshots: pd.DataFrame, related_pages: pd.DataFrame, history_size: int,
             counted: pd.DataFrame | None = None) -> pd.DataFrame:
    """The feature table's rows (:func:`focuscrawl.outlinks.spark_transforms.features`): url, period, every
    feature, every true target; ``counted``: the snapshots whose outlinks the targets count."""
    out = build_features(snapshots, targets(snapshots if counted is None else counted), related_pages, history_size)
    feature_cols = [c for cols in feature_groups(history_size).values() for c in cols]
    target_cols = [f"{t}_{s}" for t in ("nnl", "nl", "lcr") for s in SCOPES]
    return out[["url", "period", *feature_cols, *target_cols]].astype(
        {"period": np.int32, **{c: float for c in feature_cols + target_cols}})


def near_duplicates(snapshots: pd.DataFrame, params: NearDuplicateParams = NEAR_DUPLICATE_DEFAULT) -> pd.DataFrame:
    """``near_duplicates`` rows over each page's latest text fetched whole (status null or 200):
    :func:`focuscrawl.core.dedup.near_duplicate_pairs`, the reference the Spark job agrees with."""
    whole = snapshots[snapshots["status"].isna() | (snapshots["status"] == 200)]
    latest = latest_texts(whole)
    pairs = near_duplicate_pairs(dict(zip(latest["url"], latest["text"])), params)
    period = dict(zip(latest["url"], latest["as_of_period"]))
    ids = clusters((p.url_a, p.url_b) for p in pairs)
    out = pd.DataFrame([(*p, ids[p.url_a], max(period[p.url_a], period[p.url_b])) for p in pairs],
                       columns=NEAR_DUPLICATE_COLUMNS)
    return out.astype({"estimated_jaccard": float, "jaccard": float, "as_of_period": np.int32}).sort_values(
        ["cluster_id", "url_a", "url_b"], ignore_index=True)
