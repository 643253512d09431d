"""Delta tables of the look-back-look-around pipeline (seed 002), declared once (focuscrawl.lake.tables).

``outlink_features`` is declared for the default history size; a run with another history size
writes the same groups with more or fewer ``nnl_*_lag<i>`` columns.
"""

from __future__ import annotations

import pyarrow as pa

from focuscrawl.fetch.warc import WARC_COLUMNS
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.schema import SCOPES, feature_groups
from focuscrawl.lake.decision import DECISION_COLUMNS
from focuscrawl.lake.tables import UNIT_INTERVAL, Column, table

# Compacted topic the revisitor follows: key = page URL, value = {"score": 0-1, ...}.
PAGE_PRIORITIES_TOPIC = "focuscrawl.page_priorities"

SNAPSHOTS = table(
    "page_snapshots",
    "Every revisit of a known page: its outlinks split internal/external by registered domain and a "
    "content digest that excludes the outlinks (seed 002, Section 5.1).",
    [
        Column("url", pa.string(), "page URL", nullable=False),
        Column("period", pa.int32(), "revisit period (week index on the simulated clock)", nullable=False),
        Column("fetched_at", pa.timestamp("us", tz="UTC"), "when the page was fetched"),
        Column("status", pa.int32(), "HTTP status"),
        Column("content_digest", pa.string(), "digest of the page content excluding outlinks"),
        Column("text", pa.string(), "visible text of the page (for the content embedding)"),
        Column("main_text", pa.string(), "main text of the page, boilerplate removed (trafilatura; the visible "
                                         "text when it finds none): what relevance, embedding and near-duplicates read"),
        Column("language", pa.string(), "ISO 639-1 code of the main text's language (py3langid); null: too short to tell"),
        Column("language_score", pa.float64(), "the language identifier's probability of that language",
               bounds=UNIT_INTERVAL),
        Column("relevance", pa.float64(), "the page's relevance to the user's topic, calibrated (the champion page "
                                          "relevance model; 0 outside the project's languages; null: no model yet)",
               bounds=UNIT_INTERVAL),
        Column("relevance_model", pa.string(), "the model and version that scored it, e.g. TFIDF-LR/v3"),
        Column("internal_outlinks", pa.list_(pa.string()), "outlinks on the page's registered domain"),
        Column("external_outlinks", pa.list_(pa.string()), "outlinks to other registered domains"),
        *WARC_COLUMNS,
        Column("fetched_url", pa.string(), "the URL requested, when it is not the canonical key url (it redirected "
                                           "there or declared it rel=canonical); null otherwise"),
        Column("unchanged", pa.bool_(), "the page had not changed since its previous snapshot: a 304 to a conditional "
                                        "GET, or a full body identical to the last (text and outlinks are the "
                                        "previous snapshot's: no new outlinks, no content change)"),
        Column("revisit_outcome", pa.string(), "new, changed, not_modified (304) or same_body "
                                               "(focuscrawl.fetch.conditional); null when fetched unconditionally"),
        Column("etag", pa.string(), "the ETag the server gave (sent back as If-None-Match)"),
        Column("last_modified", pa.string(), "the Last-Modified the server gave (sent back as If-Modified-Since)"),
        Column("body_digest", pa.string(), "sha1 of the last full body (catches servers that ignore validators)"),
        Column("body_length", pa.int64(), "bytes of the last full body (what a 304 saved)"),
        *DECISION_COLUMNS,
    ],
    partition_by=("period",),
)

EMBEDDINGS = table(
    "page_embeddings",
    "TF-IDF + LSA content vector per page (unit length), from its latest text (seed 002, Section 7).",
    [
        Column("url", pa.string(), "page URL", nullable=False),
        Column("as_of_period", pa.int32(), "latest snapshot period the text came from"),
        Column("vector", pa.list_(pa.float32()), "unit-length LSA vector"),
    ],
    layer="silver",
)

RELATED_PAGES = table(
    "related_pages",
    "The k most content-similar pages of each page (cosine of LSA vectors), exact or approximate.",
    [
        Column("url", pa.string(), "page URL", nullable=False),
        Column("neighbour", pa.string(), "a related page", nullable=False),
        Column("rank", pa.int32(), "1 = most similar"),
        Column("similarity", pa.float64(), "cosine similarity"),
    ],
    layer="silver",
)

_feature_cols = [c for cols in feature_groups(DEFAULT.history_size).values() for c in cols]
FEATURES = table(
    "outlink_features",
    "One row per page and target period: static/dynamic x page/network features with LBLA, and the "
    "true targets NNL, NL, LCR for internal and external outlinks (seed 002, Sections 5-6).",
    [
        Column("url", pa.string(), "page URL", nullable=False),
        Column("period", pa.int32(), "target period: the interval that ends with this period's snapshot",
               nullable=False),
        *(Column(c, pa.float64(), "feature") for c in _feature_cols),
        *(Column(f"{t}_{s}", pa.float64(), f"true {t.upper()} ({s}ernal outlinks)")
          for t in ("nnl", "nl", "lcr") for s in SCOPES),
    ],
    partition_by=("period",),
    layer="silver",
)

MODELS = table(
    "outlink_models",
    "Every trained new-outlink model version: held-out metrics, training data version, promotion.",
    [
        Column("name", pa.string(), "model name and scope, e.g. NNL-ET_LBLA/int", nullable=False),
        Column("version", pa.int32(), "version number in the model store", nullable=False),
        Column("spearman", pa.float64(), "Spearman's rho on the held-out period"),
        Column("pk_area", pa.float64(), "area under Precision@k% on the held-out period"),
        Column("data_version", pa.int64(), "Delta version of outlink_features it trained on"),
        Column("eval_period", pa.int32(), "held-out period"),
        Column("promoted", pa.bool_(), "became the champion"),
        Column("reason", pa.string(), "why it was (not) promoted"),
        Column("created_at", pa.string(), "ISO time of training"),
    ],
    layer="gold",
)

PAGE_PRIORITIES = table(
    "page_priorities",
    "Revisit priority per page from the champion model: predicted value and a 0-1 rank score.",
    [
        Column("url", pa.string(), "page URL", nullable=False),
        Column("predicted", pa.float64(), "the model's predicted value (e.g. expected new outlinks)"),
        Column("score", pa.float64(), "percentile rank of predicted in 0-1 (1 = revisit first)", bounds=UNIT_INTERVAL),
        Column("model", pa.string(), "model name/scope"),
        Column("model_version", pa.int32(), "model store version"),
        Column("period", pa.int32(), "period the priority is for"),
    ],
    layer="gold",
)

NEAR_DUPLICATES = table(
    "near_duplicates",
    "Pairs of pages whose latest texts are near-duplicates: word-shingle Jaccard at or above the threshold "
    "(focuscrawl.core.dedup.NearDuplicateParams), LSH candidates checked exactly, grouped into clusters.",
    [
        Column("url_a", pa.string(), "one page (the smaller URL of the pair)", nullable=False),
        Column("url_b", pa.string(), "the other page", nullable=False),
        Column("estimated_jaccard", pa.float64(), "MinHash estimate of the shingle Jaccard similarity"),
        Column("jaccard", pa.float64(), "exact Jaccard similarity of the two pages' shingle sets"),
        Column("cluster_id", pa.string(), "the pair's cluster (connected component): its smallest URL"),
        Column("as_of_period", pa.int32(), "latest snapshot period the two texts came from"),
    ],
    layer="silver",
)
