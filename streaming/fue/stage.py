"""Shared wiring of the focused-user-extraction processes: a consumer-group member that turns
records into records, and the SIGTERM handling. No decision is made here (see focuscrawl.fue.pipeline).

Each stage is a kafka-python group member (``group``), so N instances of a stage split the
topic's partitions (keyed by user: one user's records always reach the same instance). Outputs
go through an idempotent producer (acks=all) and the input offsets are committed after the
outputs were flushed: a crash replays at most the last batch (at-least-once; the Delta sink of
the stats is exactly once by its own offsets).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Callable, Iterable

log = logging.getLogger("focuscrawl.fue.stage")

Output = tuple[str, str, bytes]  # (topic, key, value)


def stop_on_signals() -> threading.Event:
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    return stopping


def producer(bootstrap: str):
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=20)


def run_stage(bootstrap: str, topics: list[str], group: str, handle: Callable[[object], Iterable[Output]],
              stopping: threading.Event, idle: Callable[[], Iterable[Output]] = lambda: (),
              poll_ms: int = 500, max_records: int = 100) -> None:
    """Consume ``topics`` as ``group``; publish what ``handle(record)`` and ``idle()`` return."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    out = producer(bootstrap)
    try:
        while not stopping.is_set():
            sent = 0
            for records in consumer.poll(timeout_ms=poll_ms, max_records=max_records).values():
                for record in records:
                    try:
                        outputs = list(handle(record))
                    except Exception:  # noqa: BLE001 - one bad record or fetch must not stop the stage
                        log.exception("record %s@%d:%d failed; skipped", record.topic, record.partition, record.offset)
                        continue
                    for topic, key, value in outputs:
                        out.send(topic, key=key.encode(), value=value)
                        sent += 1
            for topic, key, value in idle():
                out.send(topic, key=key.encode(), value=value)
                sent += 1
            out.flush()
            consumer.commit()
            if sent:
                log.info("published %d records", sent)
    finally:
        out.close()
        consumer.close()
