"""What the stream tests wait on instead of fixed sleeps (issue 19): a landing has taken in a topic
when its Delta table's own positions (the next offset per partition, committed with the rows,
``focuscrawl.lake.delta_sink``) reach the topic's end offsets. From then on nothing already in the topic
can still land, so a count read after it is final: a duplicate would have landed already.
"""

from __future__ import annotations

import dataclasses


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """The topic's end offset per partition, as the broker says now."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        return {tp.partition: end for tp, end in consumer.end_offsets(parts).items()} if parts else {}
    finally:
        consumer.close()


def delta_lag(cfg, lake: str, sink: str, group: str, topic: str, bootstrap: str) -> int | None:
    """Records of ``topic`` not yet behind the table's positions (landed, skipped as a copy or
    dead-lettered); None while the broker knows no partition of the topic."""
    from focuscrawl.platform.status import delta_positions

    ends = end_offsets(bootstrap, topic)
    if not ends:
        return None
    positions = delta_positions(dataclasses.replace(cfg, lake=lake), sink, group, topic, sorted(ends))
    return sum(max(0, end - (positions[p] or 0)) for p, end in ends.items())
