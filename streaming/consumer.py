"""Stream consumer: a Kafka topic -> a Delta table, exactly once (``focuscrawl.delta_sink``).

    python streaming/consumer.py --topic focuscrawl.posts --table reddit_posts --group posts-to-delta

A kafka-python consumer group member, auto-commit off. Batches (by size or age) go to the Delta
sink, whose commits carry the offsets; on every partition assignment the consumer seeks to the
offsets stored in the table, so a SIGKILL at any point neither loses nor duplicates a row.
Kafka's committed offsets follow the table only as a hint for tools. SIGTERM/SIGINT flush the
open batch and exit cleanly. No client or Delta error ends the process: it logs, drops the
uncommitted batch, seeks back to the table's offsets and goes on.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time

from focuscrawl.config import settings
from focuscrawl.crawl import dead_letters
from focuscrawl.crawl.listing_crawler import POSTS_TABLE, POSTS_UNIQUE_KEY
from focuscrawl.delta_sink import STREAM_DEAD_LETTER_TABLE, DeltaSink, StreamRecord, json_row
from focuscrawl.parse.rejection import DEAD_LETTER_TABLE
from focuscrawl.topics import TopicSpec, ensure_topics

log = logging.getLogger("focuscrawl.consumer")

# Tables a stream consumer can fill, by name (each is declared beside the code that produces it):
# the spec, the record -> row conversion, and the column the table holds once (None: every offset).
SINK_TABLES = {spec.name: (spec, convert, unique) for spec, convert, unique in (
    (POSTS_TABLE, json_row, POSTS_UNIQUE_KEY),
    (DEAD_LETTER_TABLE, dead_letters.decode_row, None),
)}


class StreamConsumer:
    def __init__(self, bootstrap: str, topic: str, group: str, sink: DeltaSink,
                 batch_size: int = 500, batch_seconds: float = 2.0, poll_ms: int = 500,
                 session_timeout_ms: int = 10000, topic_partitions: int = 4, topic_replication: int = 1) -> None:
        self.bootstrap, self.topic, self.group, self.sink = bootstrap, topic, group, sink
        self.topic_partitions, self.topic_replication = topic_partitions, topic_replication
        self.session_timeout_ms = session_timeout_ms
        self.batch_size, self.batch_seconds, self.poll_ms = batch_size, batch_seconds, poll_ms
        self.stopping = threading.Event()
        self.batch: list[StreamRecord] = []
        self.batch_started = 0.0
        self.consumer = None

    # -- Kafka wiring -----------------------------------------------------------------------

    def _connect(self):
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        # Subscribing to a topic that does not exist yet leaves the member without partitions
        # until a metadata refresh (minutes): make sure it exists first (a no-op when it does).
        ensure_topics(self.bootstrap, [TopicSpec(self.topic, "the producer's key")],
                      self.topic_partitions, self.topic_replication)
        outer = self

        class SeekToTable(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                # Flush what we hold while the partitions are still ours.
                outer._flush()

            def on_partitions_assigned(self, assigned):
                outer._seek_to_table(assigned)

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.group, enable_auto_commit=False,
            auto_offset_reset="earliest", max_poll_records=self.batch_size,
            # A killed member holds its partitions until its session expires (kafka-python's
            # default is 45 s): keep failover short.
            session_timeout_ms=self.session_timeout_ms, heartbeat_interval_ms=self.session_timeout_ms // 3,
            client_id=f"focuscrawl-consumer-{self.group}",
        )
        consumer.subscribe([self.topic], listener=SeekToTable())
        return consumer

    def _seek_to_table(self, partitions) -> None:
        positions = self.sink.positions(self.topic, [tp.partition for tp in partitions if tp.topic == self.topic])
        for tp in partitions:
            pos = positions.get(tp.partition)
            if pos is None:
                self.consumer.seek_to_beginning(tp)
            else:
                self.consumer.seek(tp, pos)
        log.info("assigned %s; resuming from the table's offsets %s", sorted(tp.partition for tp in partitions), positions)

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                if self.consumer is None:
                    self.consumer = self._connect()
                self._poll_once()
            except Exception:  # noqa: BLE001 - nothing may end the consumer; the table keeps the truth
                log.exception("consumer loop error; dropping the open batch and resuming from the table")
                self.batch.clear()
                self._reset()
                self.stopping.wait(2.0)
        try:
            self._flush()
        finally:
            if self.consumer is not None:
                self.consumer.close(autocommit=False)

    def _poll_once(self) -> None:
        polled = self.consumer.poll(timeout_ms=self.poll_ms, max_records=self.batch_size)
        for records in polled.values():
            for r in records:
                if not self.batch:
                    self.batch_started = time.monotonic()
                self.batch.append(StreamRecord(r.topic, r.partition, r.offset, r.value, r.key, r.timestamp))
        if len(self.batch) >= self.batch_size or (
            self.batch and time.monotonic() - self.batch_started >= self.batch_seconds
        ):
            self._flush()

    def _flush(self) -> None:
        if not self.batch:
            return
        batch, self.batch = self.batch, []
        result = self.sink.write(batch)
        log.info("batch of %d: %d rows, %d duplicates, %d dead letters, %d already in the table; next offsets %s",
                 len(batch), result.written, result.duplicates, result.dead_lettered, result.skipped, result.positions)
        self._commit_hint(result.positions)

    def _commit_hint(self, positions: dict[tuple[str, int], int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        assigned = self.consumer.assignment()
        offsets = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in positions.items()
                   if TopicPartition(t, p) in assigned}
        if not offsets:
            return
        try:
            self.consumer.commit(offsets)
        except Exception as exc:  # noqa: BLE001 - only a hint: the Delta commit already holds the offsets
            log.warning("Kafka offset commit failed (harmless, the table holds the offsets): %s", exc)

    def _reset(self) -> None:
        """After an error, re-read from the table's offsets (the Kafka position may be past a lost batch)."""
        if self.consumer is None:
            return
        try:
            assigned = self.consumer.assignment()
            if assigned:
                self._seek_to_table(assigned)
        except Exception:  # noqa: BLE001
            log.exception("seeking back to the table's offsets failed; reconnecting")
            try:
                self.consumer.close(autocommit=False)
            except Exception:  # noqa: BLE001
                pass
            self.consumer = None


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topic", required=True)
    ap.add_argument("--table", required=True, choices=sorted(SINK_TABLES))
    ap.add_argument("--group", required=True)
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--batch-seconds", type=float, default=2.0)
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    spec, convert, unique_key = SINK_TABLES[args.table]
    sink = DeltaSink(spec.path(cfg), spec, args.group, dead_letter_uri=STREAM_DEAD_LETTER_TABLE.path(cfg),
                     convert=convert, unique_key=unique_key)
    consumer = StreamConsumer(args.bootstrap, args.topic, args.group, sink, args.batch_size, args.batch_seconds,
                              session_timeout_ms=args.session_timeout_ms, topic_partitions=cfg.kafka_partitions,
                              topic_replication=cfg.kafka_replication)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: consumer.stopping.set())
    log.info("consuming %s as group %s into %s (%s)", args.topic, args.group, spec.name, sink.table.uri)
    consumer.run()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
