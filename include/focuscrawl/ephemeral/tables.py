"""Delta tables of ephemeral-content scheduling (seed 001, *Timely crawling of high-quality ephemeral new content*) and their Spark steps.

The crawler appends ``source_recrawls`` (what each recrawl of a content source revealed) and the new
pages it fetched (``source_pages``, with their relevance), the click feedback lands in ``page_clicks``;
the Spark job fits per-source λ, and P, μ from the project's profit signal
(:mod:`focuscrawl.ephemeral.feedback`: the clicks or the pages' relevance) into ``source_estimates``,
and the optimiser's recrawl plan (``source_schedule``), which is pushed to the crawlers. The transforms here are DataFrame -> DataFrame; the per-source fits call the pure
pandas functions of :mod:`focuscrawl.ephemeral.estimate` through ``applyInPandas``, or on pandas for a small lake
(:func:`estimate_in_process`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa

from focuscrawl.core.records import JsonRecord
from focuscrawl.ephemeral.feedback import OBSERVATION_SCHEMA
from focuscrawl.ephemeral.estimate import (ESTIMATE_COLUMNS, LinkRatePrior, ProfitPrior, combine_estimates,
                                           optimistic, pooled_prior, profit_fit_one_source)
from focuscrawl.ephemeral.optimiser import allocate
from focuscrawl.ephemeral.params import DEFAULT
from focuscrawl.fetch.warc import WARC_COLUMNS
from focuscrawl.lake.decision import DECISION_COLUMNS
from focuscrawl.lake.delta_sink import OPTIONAL_LINEAGE_COLUMNS, RecordRejected
from focuscrawl.lake.tables import UNIT_INTERVAL, Column, table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from focuscrawl.ephemeral.feedback import ProfitSignal

SOURCE_RECRAWLS = table(
    "source_recrawls",
    "One row per recrawl of a content source: new links it revealed since the previous recrawl (seed 001)",
    [
        Column("source_url", pa.string(), "content source (hub, category page, feed, sitemap)", nullable=False),
        Column("host", pa.string(), "host of the source: politeness caps are per host", nullable=False),
        Column("recrawled_at", pa.timestamp("us", tz="UTC"), "when the source was fetched", nullable=False),
        Column("elapsed_s", pa.float64(), "seconds since the previous recrawl (or since watching began)", nullable=False),
        Column("new_links", pa.int64(), "links not seen on the source before", nullable=False),
        *WARC_COLUMNS,
        *OPTIONAL_LINEAGE_COLUMNS,
        *DECISION_COLUMNS,
    ],
)

SOURCE_PAGES = table(
    "source_pages",
    "One row per new page the source crawler fetched: its main text, language and relevance to the user's topic "
    "(the champion page relevance model, scored in the crawler), beside the raw page in the WARC",
    [
        Column("page_url", pa.string(), "the fetched page", nullable=False),
        Column("source_url", pa.string(), "content source the page was discovered on", nullable=False),
        Column("host", pa.string(), "host of the source", nullable=False),
        Column("fetched_at", pa.timestamp("us", tz="UTC"), "when the page was fetched", nullable=False),
        Column("published_at", pa.timestamp("us", tz="UTC"), "publication time the source gave; null: none"),
        Column("main_text", pa.string(), "main text, boilerplate removed (trafilatura; the visible text when none)"),
        Column("language", pa.string(), "ISO 639-1 code of the main text's language (py3langid); null: too short"),
        Column("language_score", pa.float64(), "the language identifier's probability of that language",
               bounds=UNIT_INTERVAL),
        Column("relevance", pa.float64(), "calibrated relevance to the user's topic (0 outside the project's "
                                          "languages; null: no page model yet)", bounds=UNIT_INTERVAL),
        Column("relevance_model", pa.string(), "the model and version that scored it, e.g. TFIDF-LR/v3"),
        *WARC_COLUMNS,
        *OPTIONAL_LINEAGE_COLUMNS,
        *DECISION_COLUMNS,
    ],
)

PAGE_CLICKS = table(
    "page_clicks",
    "Click feedback on crawled new pages: clicks counted from a time (the crawl, or creation) to a later one (seed 001, section 2)",
    [
        Column("source_url", pa.string(), "content source the page was discovered on", nullable=False),
        Column("page_url", pa.string(), "the crawled page", nullable=False),
        Column("created_at", pa.timestamp("us", tz="UTC"), "page creation (publication) time", nullable=False),
        Column("observed_at", pa.timestamp("us", tz="UTC"), "when the click count was read", nullable=False),
        Column("clicks", pa.int64(), "clicks from counted_from to observed_at", nullable=False),
        Column("counted_from", pa.timestamp("us", tz="UTC"),
               "when counting began: the crawl (what a search engine sees after indexing); null: creation"),
        *OPTIONAL_LINEAGE_COLUMNS,
    ],
)


@dataclass(frozen=True)
class ClickRecord(JsonRecord):
    """One :data:`PAGE_CLICKS` row as it travels on a clicks topic: what the source crawler writes from the click
    log, and what a project's own analytics writes to its ``[loops.sources] clicks_topic``. Timestamps are
    integers, microseconds since the Unix epoch (UTC); ``clicks`` is the page's total from ``counted_from`` (null:
    from ``created_at``) to ``observed_at``, so a page's latest record is its count."""

    source_url: str
    page_url: str
    created_at: int
    observed_at: int
    clicks: int
    counted_from: int | None = None

    def __post_init__(self) -> None:
        if self.clicks < 0:
            raise ValueError(f"ClickRecord.clicks: {self.clicks} is negative; a count is 0 or more")


def click_row(record) -> dict:
    """A clicks topic's record as a :data:`PAGE_CLICKS` row, read as the :class:`ClickRecord` it must be: a
    malformed one is dead-lettered naming its field (the sink's rule for what does not fit its table)."""
    try:
        return asdict(ClickRecord.from_json(record.value))
    except ValueError as exc:
        raise RecordRejected(f"not a page_clicks record: {exc}") from None


SOURCE_ESTIMATES = table(
    "source_estimates",
    "Per-source posterior of the new-link rate λ, page profit P and decay μ, P·(1−e^(−μ·Δt)) model (seed 001)",
    [
        Column("source_url", pa.string(), "content source", nullable=False),
        Column("lam", pa.float64(), "new links per second, posterior mean (Gamma–Poisson)"),
        Column("lam_sd", pa.float64(), "posterior standard deviation of lam"),
        Column("P", pa.float64(), "total clicks of a new page, posterior mean"),
        Column("P_sd", pa.float64(), "posterior standard deviation of P"),
        Column("mu", pa.float64(), "profit decay per second (geometric posterior mean)"),
        Column("mu_sd", pa.float64(), "posterior spread of mu"),
        Column("n_pages", pa.int64(), "crawled pages with click feedback"),
        Column("n_recrawls", pa.int64(), "recrawls observed"),
    ],
    layer="silver",
)

SOURCE_SCHEDULE = table(
    "source_schedule",
    "Recrawl plan of content sources for a crawl budget: Lagrangian optimum of expected profit per second (seed 001)",
    [
        Column("source_url", pa.string(), "content source", nullable=False),
        Column("host", pa.string(), "host of the source"),
        Column("recrawl_rate", pa.float64(), "recrawls per second; 0: do not recrawl", nullable=False),
        Column("recrawl_interval_s", pa.float64(), "seconds between recrawls; null: do not recrawl"),
        Column("page_rate", pa.float64(), "page fetches per second planned for the source's new pages"),
        Column("expected_profit_rate", pa.float64(), "expected clicks per second gained from the source"),
        Column("skip_below", pa.float64(), "skip discovered pages whose expected remaining clicks are below this"),
        Column("lam", pa.float64(), "new links per second used for the plan"),
        Column("P", pa.float64(), "page profit used for the plan"),
        Column("mu", pa.float64(), "profit decay per second used for the plan"),
        Column("budget", pa.float64(), "crawl budget of the plan, fetches per second"),
    ],
    layer="gold",
)

# Crawl history streams through Kafka before it lands in Delta: one topic per table, keyed by host.
HISTORY_TOPICS = {SOURCE_RECRAWLS.name: "focuscrawl.source_recrawls", PAGE_CLICKS.name: "focuscrawl.page_clicks",
                  SOURCE_PAGES.name: "focuscrawl.source_pages"}
HISTORY_TABLES = {SOURCE_RECRAWLS.name: SOURCE_RECRAWLS, PAGE_CLICKS.name: PAGE_CLICKS, SOURCE_PAGES.name: SOURCE_PAGES}


def schedule_sources(estimates: pd.DataFrame, hosts, budget: float, host_min_interval_s: float,
                     optimism: float = DEFAULT.optimism) -> pd.DataFrame:
    """The ``source_schedule`` rows: :func:`allocate` with politeness shared by the sources of a host.

    A host allows one fetch per ``host_min_interval_s``; its sources split that cap evenly.
    """
    hosts = pd.Series(list(hosts), index=estimates.index)
    max_rate = 1.0 / host_min_interval_s / hosts.map(hosts.value_counts()).to_numpy(float)
    plan = optimistic(estimates, optimism)
    allocation = allocate(plan["lam"], plan["P"], plan["mu"], max_rate, budget)
    out = allocation.to_frame(estimates["source_url"])
    out["recrawl_interval_s"] = out["recrawl_interval_s"].where(np.isfinite(out["recrawl_interval_s"]))
    out["host"] = hosts.to_numpy()
    for column in ("lam", "P", "mu"):
        out[column] = plan[column].to_numpy(float)
    out["budget"] = float(budget)
    return out[SOURCE_SCHEDULE.column_names]


# the page text and its WARC record's reference: no profit signal reads them
BULKY_COLUMNS = frozenset({"main_text", *(c.name for c in WARC_COLUMNS)})


def recrawl_sums(recrawls: "DataFrame") -> "DataFrame":
    """Per source: summed new links and seconds, number of recrawls, its host."""
    from pyspark.sql import functions as F

    return recrawls.groupBy("source_url").agg(
        F.sum("new_links").cast("double").alias("new_links"), F.sum("elapsed_s").alias("elapsed_s"),
        F.count("*").alias("n_recrawls"), F.first("host").alias("host"))


def observations(rows: "DataFrame", signal: "ProfitSignal") -> "DataFrame":
    """The profit signal's observations (one row per page) from its table's rows, per source in Spark."""
    columns = [c for c in rows.columns if c not in BULKY_COLUMNS]
    # a lambda of one argument: Spark counts a bound method's (self, rows) as (key, rows) and passes the key
    return rows.select(*columns).groupBy("source_url").applyInPandas(lambda pdf: signal.observations(pdf),
                                                                     OBSERVATION_SCHEMA)


def profit_fits(feedback: "DataFrame", prior: ProfitPrior, mu_grid) -> "DataFrame":
    """P, μ per source, fitted in Spark by ``applyInPandas`` over each source's pages."""
    schema = "source_url string, P double, P_sd double, mu double, mu_sd double, n_pages long"
    return feedback.groupBy("source_url").applyInPandas(lambda pdf: profit_fit_one_source(pdf, prior, mu_grid), schema)


def estimate_in_spark(recrawls: "DataFrame", feedback_rows: "DataFrame", signal: "ProfitSignal",
                      prior_sample_rows: int = 200_000) -> pd.DataFrame:
    """``source_estimates`` rows (pandas: one per source) from the recrawls and the rows of ``signal``'s
    table (:mod:`focuscrawl.ephemeral.feedback`: the clicks, or the fetched pages' relevance)."""
    sums = recrawl_sums(recrawls).toPandas()
    feedback = observations(feedback_rows, signal).cache()
    sample = feedback.limit(prior_sample_rows).toPandas()  # the pooled prior needs only a sample
    prior, grid = _profit_prior(sample, signal)
    fits = profit_fits(feedback, prior, grid).toPandas()
    feedback.unpersist()
    return _estimates(sums, fits, prior, grid)


def estimate_in_process(recrawls: pd.DataFrame, feedback_rows: pd.DataFrame, signal: "ProfitSignal",
                        prior_sample_rows: int = 200_000) -> pd.DataFrame:
    """:func:`estimate_in_spark` on pandas, the same steps per source, for a small lake read into this process
    (:func:`focuscrawl.lake.spark.in_process`)."""
    sums = recrawls.groupby("source_url", as_index=False, sort=False).agg(
        new_links=("new_links", "sum"), elapsed_s=("elapsed_s", "sum"), n_recrawls=("source_url", "size"),
        host=("host", "first"))
    sums["new_links"] = sums["new_links"].astype(float)
    columns = [name for name, _ in (part.split() for part in OBSERVATION_SCHEMA.split(", "))]
    feedback = _per_source(feedback_rows, signal.observations, columns)
    prior, grid = _profit_prior(feedback.head(prior_sample_rows), signal)
    fits = _per_source(feedback, lambda pdf: profit_fit_one_source(pdf, prior, grid),
                       ["source_url", "P", "P_sd", "mu", "mu_sd", "n_pages"])
    return _estimates(sums, fits, prior, grid)


def _per_source(rows: pd.DataFrame, apply, columns: list[str]) -> pd.DataFrame:
    """``apply`` on each source's rows (``applyInPandas`` after ``groupBy("source_url")``, on pandas)."""
    parts = [apply(group) for _, group in rows.groupby("source_url", sort=False)]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def _profit_prior(sample: pd.DataFrame, signal: "ProfitSignal") -> tuple[ProfitPrior, np.ndarray]:
    """The pooled prior of P, μ over a sample of every source's observations, and the μ grid it is on."""
    grid = signal.mu_grid()
    return pooled_prior(sample["age_s"].to_numpy(float), sample["clicks"].to_numpy(float), signal.prior(),
                        sample["start_age_s"].to_numpy(float), grid), grid


def _estimates(sums: pd.DataFrame, fits: pd.DataFrame, prior: ProfitPrior, grid) -> pd.DataFrame:
    """One row per source seen in the recrawls or the fits, with its host."""
    total_s = float(sums["elapsed_s"].sum()) if len(sums) else 0.0
    link_prior = LinkRatePrior.with_mean(float(sums["new_links"].sum()) / total_s) if total_s > 0 else LinkRatePrior()
    sources = sorted(set(sums["source_url"]) | set(fits["source_url"]))
    estimates = combine_estimates(sources, sums, fits, link_prior, prior, grid)
    hosts = estimates["source_url"].map(sums.set_index("source_url")["host"])
    estimates["host"] = hosts.fillna(estimates["source_url"].map(lambda url: urlsplit(url).netloc))
    return estimates[[*ESTIMATE_COLUMNS, "host"]]
