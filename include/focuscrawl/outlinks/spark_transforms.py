"""The seed-002 steps as pure DataFrame -> DataFrame functions for the Spark jobs (spark_jobs/outlinks_*.py).

Each wraps the pandas pieces so that the costly work is distributed: per-url functions run with
``applyInPandas``, per-row ones with ``mapInPandas``, the KNN search (FAISS) in blocks per partition against
an index built once and broadcast. pyspark is imported inside the functions only. Their twins on pandas, for a lake
too small for a Spark plan to pay, are :mod:`focuscrawl.outlinks.frame_transforms`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from focuscrawl.core.dedup import DEFAULT as NEAR_DUPLICATE_DEFAULT
from focuscrawl.core.dedup import NearDuplicateParams, spark_near_duplicates
from focuscrawl.lake.spark import parallelism
from focuscrawl.outlinks.embedding import LsaEmbedder
from focuscrawl.outlinks.features import page_look_back, page_statics
from focuscrawl.outlinks.frame_transforms import neighbour_rows
from focuscrawl.outlinks.related import RELATED, set_threads
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.schema import AROUND_SPEC, SCOPES, around_name, feature_groups, look_back_columns
from focuscrawl.outlinks.targets import TARGET_COLUMNS, keep_links, link_relevance, page_targets

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def latest_snapshots(snapshots: "DataFrame", before_period: int | None = None) -> "DataFrame":
    """Each url's latest snapshot (strictly before ``before_period`` when given)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if before_period is not None:
        snapshots = snapshots.where(F.col("period") < before_period)
    w = Window.partitionBy("url").orderBy(F.col("period").desc())
    return snapshots.withColumn("_r", F.row_number().over(w)).where("_r = 1").drop("_r")


def latest_texts(snapshots: "DataFrame", before_period: int | None = None) -> "DataFrame":
    """url, as_of_period, text of each url's latest snapshot (strictly before ``before_period`` when given):
    its main text where one was landed (boilerplate removed), else its visible text."""
    from pyspark.sql import functions as F

    text = F.col("text")
    if "main_text" in snapshots.columns:  # tables landed before the column have none
        text = F.when(F.length("main_text") > 0, F.col("main_text")).otherwise(text)
    return latest_snapshots(snapshots, before_period).select(
        "url", F.col("period").cast("int").alias("as_of_period"), text.alias("text"))


def near_duplicates(snapshots: "DataFrame", params: NearDuplicateParams = NEAR_DUPLICATE_DEFAULT) -> "DataFrame":
    """``page_snapshots`` -> ``near_duplicates`` rows: :func:`focuscrawl.core.dedup.spark_near_duplicates` over
    each page's latest text fetched whole (status null or 200)."""
    from pyspark.sql import functions as F

    return spark_near_duplicates(latest_texts(snapshots.where(F.col("status").isNull() | (F.col("status") == 200))),
                                 params)


def held_out_period(snapshots: "DataFrame") -> int | None:
    """The period ``training.held_out_split`` holds out for evaluation: the last snapshot period (seed 002,
    Section 7: learn from past weeks, rank pages for the held-out one). None when there are no snapshots.

    The embeddings (hence the related pages and the look-around features) that feed training and model
    selection must be built from texts strictly before it, as ``experiment.prepare`` does on pandas frames;
    the pages of this period are then scored from the same, one week older, neighbour lists.
    """
    from pyspark.sql import functions as F

    last = snapshots.agg(F.max("period")).first()[0]
    return None if last is None else int(last)


EMBEDDING_SCHEMA = "url string, as_of_period int, vector array<float>"


def embed(snapshots: "DataFrame", dimensions: int = DEFAULT.dimensions, sample_size: int = DEFAULT.sample_size, seed: int = 0,
          before_period: int | None = None) -> "DataFrame":
    """url, as_of_period, vector: LSA fitted on a sample of texts on the driver, applied per partition."""
    latest = latest_texts(snapshots, before_period)
    sample = latest.select("text").limit(sample_size).toPandas()["text"].fillna("").tolist()
    if not any(text.strip() for text in sample):
        # A young crawl has no text before its held-out period (the live platform's first periods): no
        # vectors yet, so no related pages and look-around features of zero, not a failed run.
        return snapshots.sparkSession.createDataFrame([], EMBEDDING_SCHEMA)
    embedder = LsaEmbedder(dimensions=dimensions, seed=seed).fit(sample)

    def transform(batches):
        for batch in batches:
            vectors = embedder.transform(batch["text"].fillna("").tolist())
            yield pd.DataFrame({"url": batch["url"], "as_of_period": batch["as_of_period"],
                                "vector": list(vectors)})

    return latest.mapInPandas(transform, EMBEDDING_SCHEMA)


def related(embeddings: "DataFrame", k: int = DEFAULT.k, method: str = DEFAULT.method, partitions: int | None = None,
            **options) -> "DataFrame":
    """url, neighbour, rank, similarity: the k related pages of every page (seed 002, Section 7).

    The index (a registered FAISS method, ``focuscrawl.outlinks.related``) is built once on the driver
    and shipped with the search function (classic pyspark broadcasts a function over 1 MB, Spark Connect
    sends it in the plan: a client has no SparkContext to broadcast with); query rows are split over
    partitions, each task searching its block with one FAISS thread per task core.
    The unit-length matrix is m x d float32: 400 MB for 1M pages at d=100 (HNSW adds ~256 MB of links).
    """
    spark = embeddings.sparkSession
    # In Arrow (row-by-row pickling of 1M vectors takes minutes), the vectors read as one flat buffer:
    # 0.11 s of driver CPU for 200k x 100 against 0.38 s through pandas and np.vstack of 200k arrays.
    rows = embeddings.select("url", "vector").toArrow()
    urls = rows.column("url").to_numpy(zero_copy_only=False)
    if not len(urls):
        return spark.createDataFrame([], "url string, neighbour string, rank int, similarity double")
    vectors = rows.column("vector").combine_chunks()
    matrix = vectors.flatten().to_numpy().astype(np.float32).reshape(len(urls), -1)
    del rows, vectors
    searcher = RELATED.create(method, k=k, **options).fit(matrix)
    partitions = partitions or parallelism(spark)
    task_cpus = int(spark.conf.get("spark.task.cpus", "1"))

    def search(batches):
        set_threads(task_cpus)
        for batch in batches:
            yield neighbour_rows(searcher, urls, batch["qid"].to_numpy())

    queries = spark.range(len(urls), numPartitions=max(1, partitions)).withColumnRenamed("id", "qid")
    return queries.mapInPandas(search, "url string, neighbour string, rank int, similarity double")


def relevant_links(snapshots: "DataFrame", score_texts: Callable[[list[str]], Sequence[float | None]],
                   threshold: float) -> set[str]:
    """The outlinks of ``snapshots`` about the page focus (:func:`focuscrawl.outlinks.targets.link_relevance`):
    a fetched page's latest ``relevance``, else ``score_texts`` (picklable: it runs on the executors) of its
    URL's words, at or above ``threshold``. Collected to the driver: one URL per relevant link."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = Window.partitionBy("url").orderBy(F.col("period").desc())
    scored = (snapshots.where(F.col("relevance").isNotNull()).withColumn("_n", F.row_number().over(latest))
              .where("_n = 1").select("url", "relevance"))
    links = snapshots.select(F.explode(F.concat(F.coalesce("internal_outlinks", F.array().cast("array<string>")),
                                                F.coalesce("external_outlinks", F.array().cast("array<string>"))))
                             .alias("url")).distinct()

    def judge(batches):
        for batch in batches:
            known = {u: (None if pd.isna(r) else float(r)) for u, r in zip(batch["url"], batch["relevance"])}
            found = link_relevance(batch["url"], known, score_texts)
            yield pd.DataFrame({"url": [u for u, r in found.items() if r is not None and r >= threshold]})

    return {r.url for r in links.join(scored, "url", "left").mapInPandas(judge, "url string").collect()}


def only_relevant_links(snapshots: "DataFrame", relevant: set[str]) -> "DataFrame":
    """``snapshots`` with their outlinks cut to ``relevant`` (:func:`focuscrawl.outlinks.targets.keep_links`)."""
    keep = frozenset(relevant)
    schema = snapshots.select("url", "period", "content_digest", "internal_outlinks", "external_outlinks").schema
    return snapshots.select(*schema.fieldNames()).mapInPandas(
        lambda batches: (keep_links(b, keep) for b in batches), schema)


def targets(snapshots: "DataFrame") -> "DataFrame":
    """NNL, NL and content change per (url, period), per url in parallel."""
    schema = ("url string, period int, nnl_int int, nnl_ext int, nl_int boolean, nl_ext boolean, "
              "content_changed boolean")
    assert [c.split()[0] for c in schema.split(", ")] == TARGET_COLUMNS
    cols = ["url", "period", "content_digest", "internal_outlinks", "external_outlinks"]
    return snapshots.select(*cols).groupBy("url").applyInPandas(page_targets, schema)


def features(snapshots: "DataFrame", related_pages: "DataFrame", history_size: int,
             counted: "DataFrame | None" = None) -> "DataFrame":
    """Feature rows with true targets (null for the next, not yet observed, period); see features.py.
    ``counted``: the snapshots whose outlinks the targets and look-back count (:func:`only_relevant_links`
    for ``new_relevant_outlinks``; default ``snapshots``), the page statics keeping every outlink."""
    from pyspark.sql import functions as F

    h = history_size
    target_cols = [f"{t}_{s}" for t in ("nnl", "nl", "lcr") for s in SCOPES]
    back_schema = ", ".join(["url string", "period int"] + [f"{c} double" for c in look_back_columns(h) + target_cols])
    back = targets(snapshots if counted is None else counted).groupBy("url").applyInPandas(
        partial(page_look_back, history_size=h), back_schema)
    statics = snapshots.select("url", "period", "text", "internal_outlinks", "external_outlinks").mapInPandas(
        lambda batches: (page_statics(b) for b in batches),
        "url string, period int, url_depth long, n_words long, n_links_int long, n_links_ext long")
    pages = back.join(statics, ["url", "period"], "left")
    aggs = {"mean": F.mean, "max": F.max}
    around = (related_pages.select("url", "neighbour", "similarity")
              .join(pages.withColumnRenamed("url", "neighbour"), "neighbour")
              .groupBy("url", "period")
              .agg(*[aggs[agg](src).alias(around_name(src, agg)) for src, agg in AROUND_SPEC]))
    feature_cols = [c for cols in feature_groups(h).values() for c in cols]
    out = pages.join(around, ["url", "period"], "left")
    out = out.select("url", F.col("period").cast("int"), *[F.col(c).cast("double") for c in feature_cols],
                     *target_cols)
    return out.fillna(0.0, subset=feature_cols)
