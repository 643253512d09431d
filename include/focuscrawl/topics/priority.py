"""Priorities pushed back to running crawlers through a compacted Kafka topic (docs/architecture.md, loop 3).

Key = the candidate (a user name), value = JSON ``{"score": s, ...}``, a null value deletes it.
Compaction keeps the latest value per key, so a crawler that (re)starts reads the topic from the
beginning and holds the current ranking, with no restart of the crawler when it changes
(seed 000 (*Real-time focused extraction of social media users*) section III: the ranking is refreshed while users are extracted).

The batch side calls :func:`publish_table` after the Spark job; crawlers run :class:`PriorityFollower`.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from focuscrawl.core.records import field_value, json_object

log = logging.getLogger(__name__)

USER_PRIORITIES_TOPIC = "focuscrawl.user_priorities"


@dataclass(frozen=True)
class Priority:
    """A priority topic's value: ``{"score": s, ...}``, the pushed row's other plain columns beside the score
    (a schedule's ``skip_below``, ``P``, ``mu``; a score's ``extracted_users``)."""

    score: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return json.dumps({"score": float(self.score), **self.extra}).encode()

    @classmethod
    def from_json(cls, value: bytes | str) -> "Priority":
        row = json_object(value, cls.__name__)
        return cls(field_value(cls.__name__, row, "score", float), {k: v for k, v in row.items() if k != "score"})

    def row(self) -> dict[str, Any]:
        """The pushed row as it was sent: ``score`` and the other columns."""
        return {"score": self.score, **self.extra}


def ensure_compacted_topic(bootstrap: str, topic: str, partitions: int | None = None,
                           replication: int | None = None) -> None:
    """Create ``topic`` compacted unless it exists, with the settings' partitions and replication
    (the one topic factory, :func:`focuscrawl.topics.specs.ensure_topics`)."""
    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    ensure_topics(bootstrap, [TopicSpec(topic, "the pushed item", compacted=True)], partitions, replication)


def ranked(priorities: Iterable[tuple[str, float | None, dict]]) -> list[tuple[str, float | None, dict]]:
    """The push with each scored item's ``rank`` in it (1 = the highest score; ties in the order given), kept
    where the row has its own: the rank a crawler lands as ``chosen_rank`` (:mod:`focuscrawl.lake.decision`)."""
    items = list(priorities)
    order = sorted((i for i, (_, score, _) in enumerate(items) if score is not None), key=lambda i: -items[i][1])
    rank = {i: r for r, i in enumerate(order, 1)}
    return [(key, score, extra if score is None or "rank" in extra else {**extra, "rank": rank[i]})
            for i, (key, score, extra) in enumerate(items)]


def publish(bootstrap: str, topic: str, priorities: Iterable[tuple[str, float | None, dict]]) -> int:
    """Send ``(key, score, extra)`` triples (score None: delete the key), each scored one with its ``rank``
    (:func:`ranked`); ``extra`` names the model that made the push (``model``, ``model_version``).
    Returns how many were sent."""
    from kafka import KafkaProducer

    ensure_compacted_topic(bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=20)
    sent = 0
    try:
        for key, score, extra in ranked(priorities):
            value = None if score is None else Priority(score, extra).to_json()
            producer.send(topic, key=key.encode(), value=value)
            sent += 1
        producer.flush(timeout=60)
    finally:
        producer.close()
    log.info("published %d priorities to %s", sent, topic)
    return sent


def publish_table(table_uri: str, bootstrap: str, topic: str = USER_PRIORITIES_TOPIC,
                  key_column: str = "author", score_column: str = "priority",
                  storage_options: dict[str, str] | None = None, model: str | None = None) -> int:
    """Publish every row of a priority Delta table (read with delta-rs: no JVM in the Airflow task).

    ``model``: the name of what computed the table when its rows do not name it (a ``model`` column); each
    row is then pushed with that ``model`` and, as its ``model_version``, the table's Delta version read."""
    from deltalake import DeltaTable

    table = DeltaTable(table_uri, storage_options=storage_options)
    named = {} if model is None else {"model": model, "model_version": int(table.version())}
    rows = table.to_pyarrow_table().to_pylist()
    return publish(bootstrap, topic, (
        (str(r[key_column]), r[score_column],
         {**named, **{k: v for k, v in r.items()
                      if k not in (key_column, score_column) and isinstance(v, (int, float, str))}})
        for r in rows
    ))


def decode(value: bytes | None) -> float | None:
    """The score carried by a record value (None for a deletion); :class:`~focuscrawl.core.records.RecordError`
    (a ``ValueError``) naming ``score`` for a value that is not a :class:`Priority`."""
    if value is None:
        return None
    return Priority.from_json(value).score


class PriorityFollower(threading.Thread):
    """Background thread: read the compacted topic from the beginning, then follow it forever.

    Every record calls ``apply(key, score)``, then ``on_applied(record)`` when given (the Kafka record: its
    timestamp says when it was pushed). No consumer group: each crawler needs every key,
    and reading from the beginning on start rebuilds the current ranking. Client errors (broker
    restart) are logged and the loop goes on; kafka-python reconnects by itself.
    """

    def __init__(self, bootstrap: str, topic: str, apply: Callable[[str, float | None], None],
                 poll_ms: int = 500, on_applied: Callable[[Any], None] | None = None) -> None:
        super().__init__(name=f"priority-follower-{topic}", daemon=True)
        self.bootstrap, self.topic, self.apply, self.poll_ms = bootstrap, topic, apply, poll_ms
        self.on_applied = on_applied
        self.stopping = threading.Event()
        self.caught_up = threading.Event()  # set once the backlog present at start was applied

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        from kafka import KafkaConsumer, TopicPartition

        ensure_compacted_topic(self.bootstrap, self.topic)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                 group_id=None, auto_offset_reset="earliest")
        try:
            partitions = [TopicPartition(self.topic, p) for p in sorted(consumer.partitions_for_topic(self.topic) or [0])]
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            end = consumer.end_offsets(partitions)
            while not self.stopping.is_set():
                try:
                    batches = consumer.poll(timeout_ms=self.poll_ms)
                    for records in batches.values():
                        for rec in records:
                            self._apply(rec)
                            if self.on_applied is not None:
                                self.on_applied(rec)
                    if not self.caught_up.is_set() and all(consumer.position(tp) >= end[tp] for tp in partitions):
                        self.caught_up.set()
                except Exception:  # noqa: BLE001 - a broker outage must not end the crawler's feedback
                    log.exception("following %s failed; retrying", self.topic)
                    self.stopping.wait(1.0)
        finally:
            consumer.close()

    def _apply(self, rec) -> None:
        try:
            self.apply(rec.key.decode(), decode(rec.value))
        except (AttributeError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring malformed priority %s@%d key=%r: %s", self.topic, rec.offset, rec.key, exc)


class RowFollower(PriorityFollower):
    """A :class:`PriorityFollower` that hands over the whole pushed row (:meth:`Priority.row`: ``score`` with the
    push's ``model``, ``model_version``, ``rank`` and other columns), not only the score: what a crawler keeps to
    land with each fetch what chose it (:mod:`focuscrawl.lake.decision`). ``apply(key, row)`` (None: deleted)."""

    def _apply(self, rec) -> None:
        try:
            self.apply(rec.key.decode(), None if rec.value is None else Priority.from_json(rec.value).row())
        except (AttributeError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring malformed pushed row %s@%d key=%r: %s", self.topic, rec.offset, rec.key, exc)
