"""Every Airflow Asset of focuscrawl, defined once: producers list them in ``outlets``, consumers in ``schedule``.

Delta tables are ``file://`` (or object-store) URIs of their lake location, named ``delta.<table>``;
Kafka topics use the Kafka provider's ``kafka://<bootstrap>/<topic>`` form.

Who emits the events. A table written by a DAG task gets its event from the task's ``outlets``. A
table the stream processes land and a DAG is scheduled on (``page_snapshots``, ``source_recrawls``,
``page_clicks``, ``graph_sample``) gets it from ``streaming/asset_events.py`` (``focuscrawl.orchestration.asset_events``),
which posts one through the REST API when the table's Delta version advances: it watches every
``delta.*`` Asset here that a DAG is scheduled on and no task produces.
"""

from __future__ import annotations

from airflow.sdk import Asset

from focuscrawl.config import settings
from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.ephemeral.schedule_topic import SOURCE_SCHEDULE_TOPIC
from focuscrawl.ephemeral.tables import PAGE_CLICKS, SOURCE_ESTIMATES, SOURCE_PAGES, SOURCE_RECRAWLS, SOURCE_SCHEDULE
from focuscrawl.fue.batch import CANDIDATE_SCORES_TABLE
from focuscrawl.fue.pipeline import STATS_TABLE, scores_topic
from focuscrawl.graph.tables import GRAPH_ESTIMATES, GRAPH_SAMPLE
from focuscrawl.outlinks import tables as outlinks
from focuscrawl.lake.tables import TableSpec

_cfg = settings()


def table_asset(spec: TableSpec) -> Asset:
    path = spec.path(_cfg)
    uri = path if "://" in path else f"file://{path}"
    return Asset(name=f"delta.{spec.name}", uri=uri, group="delta")


def topic_asset(topic: str) -> Asset:
    bootstrap = _cfg.kafka_bootstrap.split(",")[0]
    return Asset(name=f"kafka.{topic}", uri=f"kafka://{bootstrap}/{topic}", group="kafka")


# FUE (seed 000): landed posts and judged extractions -> candidate scores -> one score topic per method
POSTS = table_asset(POSTS_TABLE)
EXTRACTIONS = table_asset(STATS_TABLE)
CANDIDATE_SCORES = table_asset(CANDIDATE_SCORES_TABLE)


def fue_scores_pushed(method: str) -> Asset:
    """The compacted topic a FUE method's running choosers follow."""
    return topic_asset(scores_topic(method))


# Revisits (seed 002)
SNAPSHOTS = table_asset(outlinks.SNAPSHOTS)
EMBEDDINGS = table_asset(outlinks.EMBEDDINGS)
RELATED_PAGES = table_asset(outlinks.RELATED_PAGES)
OUTLINK_FEATURES = table_asset(outlinks.FEATURES)
OUTLINK_MODELS = table_asset(outlinks.MODELS)
PAGE_PRIORITIES = table_asset(outlinks.PAGE_PRIORITIES)
PAGE_PRIORITIES_PUSHED = topic_asset(outlinks.PAGE_PRIORITIES_TOPIC)
NEAR_DUPLICATES = table_asset(outlinks.NEAR_DUPLICATES)

# Sources (seed 001)
SOURCE_RECRAWLS_ASSET = table_asset(SOURCE_RECRAWLS)
PAGE_CLICKS_ASSET = table_asset(PAGE_CLICKS)
SOURCE_PAGES_ASSET = table_asset(SOURCE_PAGES)
SOURCE_ESTIMATES_ASSET = table_asset(SOURCE_ESTIMATES)
SOURCE_SCHEDULE_ASSET = table_asset(SOURCE_SCHEDULE)
SOURCE_SCHEDULE_PUSHED = topic_asset(SOURCE_SCHEDULE_TOPIC)

# The page relevance models' store, written by page_relevance (the model_registry DAG records it)
PAGE_MODELS = Asset(name="models.pages", uri=f"file://{_cfg.var_dir}/models", group="models")

# Graph (seed 003)
GRAPH_SAMPLES = table_asset(GRAPH_SAMPLE)
GRAPH_ESTIMATES_ASSET = table_asset(GRAPH_ESTIMATES)
