"""Kafka topics: each one's record key, and their creation with partition/replication counts from settings.

Scale-out: the record key decides the partition, and a partition has one
reader per consumer group, so the key is chosen for what must stay together: a user's records
(posts keyed by author, priorities by user name) so per-user state and the sink's
insert-if-absent on a post's ``name`` (``focuscrawl.lake.delta_sink``) see every copy in one place;
a host's pages and dead letters (keyed by host, :func:`host_key`) so per-host work stays with one
instance. Partition and
replication counts come from ``FOCUSCRAWL_KAFKA_PARTITIONS`` / ``FOCUSCRAWL_KAFKA_REPLICATION``;
more partitions than consumer instances lets the group grow without re-keying.

:func:`ensure_topics` is the one topic factory: data topics, compacted feedback
topics (priorities, schedules, scores) and changelogs all get the configured counts; a compacted
topic's followers read every partition (:class:`focuscrawl.topics.priority.PriorityFollower`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:  # pragma: no cover
    from focuscrawl.config import Settings

log = logging.getLogger(__name__)

# A compacted topic keeps the latest value per key; cleaning once a tenth of the log is stale keeps
# a follower's start-up read short (it reads the topic from the beginning). Kafka never cleans the
# segment being written, and by default rolls one after 7 days or 1 GiB: a changelog would then grow
# uncompacted for a whole run (the chooser's restore read all of it). Rolling every 10 minutes or
# 16 MiB lets the cleaner keep it near one record per key while the platform runs.
COMPACTED_CONFIGS = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1",
                     "segment.ms": str(10 * 60 * 1000), "segment.bytes": str(16 * 1024 * 1024)}


@dataclass(frozen=True)
class TopicSpec:
    name: str
    key: str  # what the record key is, in words
    compacted: bool = False


def host_key(url: str) -> bytes:
    """The partition key of a page: its host (with port), lower-case."""
    return urlsplit(url).netloc.lower().encode()


def ensure_topics(bootstrap: str, specs: list[TopicSpec], partitions: int | None = None,
                  replication: int | None = None, cfg: "Settings | None" = None, wait_ms: int = 120_000) -> list[str]:
    """Create the topics that do not exist yet (an existing topic keeps its counts); returns those created.

    ``partitions``/``replication`` default to the settings' ``kafka_partitions``/``kafka_replication``
    (``cfg``, else :func:`focuscrawl.config.settings`); a :class:`TopicSpec` with ``compacted`` gets
    :data:`COMPACTED_CONFIGS`. Waits up to ``wait_ms`` for every partition of ``specs`` to have a leader.
    """
    if partitions is None or replication is None:
        from focuscrawl.config import settings

        cfg = cfg or settings()
        partitions = cfg.kafka_partitions if partitions is None else partitions
        replication = cfg.kafka_replication if replication is None else replication
    if partitions < 1 or replication < 1:
        raise ValueError(f"topics need at least 1 partition and replication 1 (got {partitions}, {replication}): "
                         "fix FOCUSCRAWL_KAFKA_PARTITIONS / FOCUSCRAWL_KAFKA_REPLICATION")
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
            configs = dict(COMPACTED_CONFIGS) if spec.compacted else {}
            try:
                admin.create_topics([NewTopic(spec.name, partitions, replication, topic_configs=configs)])
                created.append(spec.name)
            except TopicAlreadyExistsError:  # another instance created it first
                pass
        # Return once every partition has a leader: a consumer subscribing right after would otherwise
        # get an empty assignment and a second rebalance. kafka-python waits 10 s by default, which a
        # loaded machine exceeds (seen at load ~55); the broker's own answer is what we wait for.
        admin.wait_for_topics([spec.name for spec in specs], timeout_ms=wait_ms)
    finally:
        admin.close()
    if created:
        log.info("created topics %s with %d partitions, replication %d", created, partitions, replication)
    return created
