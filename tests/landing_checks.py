"""Exactly-once checks of the platform's landings, by Kafka offsets: every committed record of a topic below a
table's own positions is in the table once (or dead-lettered, or its unique key is). Used by the live
platform's end-to-end test (tests/platform/test_platform_e2e.py) and the chaos campaign
(tests/reliability/chaos.py)."""

from __future__ import annotations

import time

from deltalake import DeltaTable

from stream_positions import end_offsets


def topic_records(bootstrap: str, topic: str, below: dict[int, int]) -> dict[int, list]:
    """Committed records of ``topic`` per partition below ``below[p]``: ``(offset, key, value, timestamp)``."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(topic, p) for p, end in below.items() if end]
    out: dict[int, list] = {tp.partition: [] for tp in tps}
    if not tps:
        return out
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level="read_committed")
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + 300
        todo = set(tps)
        while todo and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500, max_records=5000).items():
                out[tp.partition] += [(r.offset, r.key, r.value, r.timestamp) for r in records if r.offset < below[tp.partition]]
            todo = {tp for tp in todo if consumer.position(tp) < below[tp.partition]}
        assert not todo, f"{topic}: could not read up to the table's positions {below}"
    finally:
        consumer.close()
    return out


def landing_snapshot(cfg, meta: dict):
    """``(positions, table)`` of one landing read from ONE Delta version: the next offset per partition
    its commits hold, and the table as of that commit."""
    from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE, DeltaSink
    from focuscrawl.stream.sinks import sink

    spec = sink(meta["sink"]).table
    landing = DeltaSink(spec.path(cfg), spec, meta["group"], DEAD_LETTER_TABLE.path(cfg))
    dt = landing.table.refresh()
    partitions = sorted(end_offsets(cfg.kafka_bootstrap, meta["topic"]))
    return {p: dt.transaction_version(landing.table.app_id(meta["topic"], p)) or 0 for p in partitions}, dt


def dead_lettered(cfg, topic: str) -> set[tuple[int, int]]:
    from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE

    uri = DEAD_LETTER_TABLE.path(cfg)
    if not DeltaTable.is_deltatable(uri):
        return set()
    # A sink's dead letters name their target table; the parsers' rejections landed from the
    # dead-letter topic (no target table) are that landing's rows, not its dead letters.
    return {(r["kafka_partition"], r["kafka_offset"]) for r in DeltaTable(uri).to_pyarrow_table(
        columns=["kafka_partition", "kafka_offset", "target_table"], filters=[("kafka_topic", "=", topic)]).to_pylist()
        if r["target_table"] is not None}


def landed_exactly_once(cfg, meta: dict, before: tuple | None, below: dict[int, int] | None = None) -> int:
    """Nothing lost, nothing twice. A table with lineage columns: every record below the table's own
    positions (or ``below``, per partition) is in it once (or dead-lettered, or, for a unique-key sink,
    its key is). Without them: the rows it gained since ``before`` are exactly the records between the
    two positions. Returns the records checked."""
    from focuscrawl.lake.delta_sink import StreamRecord
    from focuscrawl.stream.sinks import sink

    spec, topic = sink(meta["sink"]), meta["topic"]
    positions, dt = landing_snapshot(cfg, meta)
    positions = below if below is not None else positions
    dead = dead_lettered(cfg, topic)
    if "kafka_offset" not in spec.table.column_names:
        old_positions, old_dt = before
        gained = dt.to_pyarrow_dataset().count_rows() - old_dt.to_pyarrow_dataset().count_rows()
        records = [(p, r[0]) for p, rs in topic_records(cfg.kafka_bootstrap, topic, positions).items()
                   for r in rs if r[0] >= old_positions[p]]
        assert gained == len([k for k in records if k not in dead]), (spec.table.name, gained, len(records))
        return len(records)
    rows = dt.to_pyarrow_table(filters=[("kafka_topic", "=", topic)]).to_pylist()
    seen = [(r["kafka_partition"], r["kafka_offset"]) for r in rows]
    assert len(seen) == len(set(seen)), f"{spec.table.name}: a record of {topic} landed twice"
    landed = set(seen) | dead
    keys = {r[spec.unique_key] for r in rows} if spec.unique_key else set()
    checked = 0
    for partition, records in topic_records(cfg.kafka_bootstrap, topic, positions).items():
        for offset, key, value, ts in records:
            checked += 1
            if (partition, offset) in landed:
                continue
            assert spec.unique_key, f"{spec.table.name}: {topic}[{partition}]@{offset} below the table's position is lost"
            row = spec.convert(StreamRecord(topic, partition, offset, value, key, ts))
            assert row[spec.unique_key] in keys, f"{spec.table.name}: {topic}[{partition}]@{offset} is lost"
    return checked
