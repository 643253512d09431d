"""Kafka topics: each one's record key, and their creation with partition/replication counts from settings.

Issue 10, point 2 (scale-out). The record key decides the partition, and a partition has one
reader per consumer group, so the key is chosen for what must stay together: a user's records
(posts keyed by author, priorities by user name) so per-user state and the sink's
insert-if-absent on a post's ``name`` (``focuscrawl.delta_sink``) see every copy in one place;
a host's pages and dead letters (keyed by host, :func:`host_key`) so per-host work stays with one
instance. Partition and
replication counts come from ``FOCUSCRAWL_KAFKA_PARTITIONS`` / ``FOCUSCRAWL_KAFKA_REPLICATION``;
more partitions than consumer instances lets the group grow without re-keying.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    key: str  # what the record key is, in words
    compacted: bool = False


def host_key(url: str) -> bytes:
    """The partition key of a page: its host (with port), lower-case."""
    return urlsplit(url).netloc.lower().encode()


def ensure_topics(bootstrap: str, specs: list[TopicSpec], partitions: int, replication: int) -> list[str]:
    """Create the topics that do not exist yet (an existing topic keeps its counts); returns those created."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    created = []
    try:
        existing = set(admin.list_topics())
        for spec in specs:
            if spec.name in existing:
                continue
            configs = {"cleanup.policy": "compact"} if spec.compacted else {}
            try:
                # Returns once the broker's metadata lists the partitions: a consumer subscribing right
                # after would otherwise get an empty assignment and a second rebalance.
                admin.create_topics([NewTopic(spec.name, partitions, replication, topic_configs=configs)],
                                    wait_for_metadata=True)
                created.append(spec.name)
            except TopicAlreadyExistsError:  # another instance created it first
                pass
    finally:
        admin.close()
    if created:
        log.info("created topics %s with %d partitions, replication %d", created, partitions, replication)
    return created
