"""Every Airflow Asset of focuscrawl, defined once: producers list them in ``outlets``, consumers in ``schedule``.

Delta tables are ``file://`` (or object-store) URIs of their lake location, named after the
table; Kafka topics use the Kafka provider's ``kafka://<bootstrap>/<topic>`` form.
"""

from __future__ import annotations

from airflow.sdk import Asset

from focuscrawl.config import settings
from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.priority_topic import USER_PRIORITIES_TOPIC
from focuscrawl.tables import TableSpec
from focuscrawl.user_priority import USER_PRIORITIES_TABLE

_cfg = settings()


def table_asset(spec: TableSpec) -> Asset:
    path = spec.path(_cfg)
    uri = path if "://" in path else f"file://{path}"
    return Asset(name=f"delta.{spec.name}", uri=uri, group="delta")


def topic_asset(topic: str) -> Asset:
    bootstrap = _cfg.kafka_bootstrap.split(",")[0]
    return Asset(name=f"kafka.{topic}", uri=f"kafka://{bootstrap}/{topic}", group="kafka")


POSTS = table_asset(POSTS_TABLE)
USER_PRIORITIES = table_asset(USER_PRIORITIES_TABLE)
USER_PRIORITIES_PUSHED = topic_asset(USER_PRIORITIES_TOPIC)
