"""Issue 10, point 2: two crawler instances and two consumer instances in one group on a partitioned topic;
SIGKILL of one consumer hands its partitions to the other, which carries on: every post produced is
in Delta exactly once (the crawlers overlap, so the topic holds copies the sink must not double).

No fixed sleeps (issue 19): after the rebalance the test waits until the crawlers have produced on
every partition, and reads the rows once the table's Delta positions reached the end offsets.
"""

from __future__ import annotations

import json
import re

import pytest
import requests

from harness import wait_for
from stream_positions import end_offsets

pytestmark = pytest.mark.integration


def topic_records(bootstrap: str, topic: str) -> tuple[int, list[str], int]:
    """(partitions, post names in the topic, records) read from the beginning to the end offsets."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        names: list[str] = []
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            for records in consumer.poll(timeout_ms=1000).values():
                names += [json.loads(r.value)["name"] for r in records]
        return len(parts), names, sum(ends.values())
    finally:
        consumer.close()


def assigned(proc) -> list[set[int]]:
    return [set(map(int, re.findall(r"\d+", m))) for m in re.findall(r"assigned \[([\d, ]*)\]", proc.tail(200_000))]


def split(one: list[set[int]], two: list[set[int]], partitions: int) -> bool:
    """Whether the two consumers' last assignments share the topic's partitions between them, none twice."""
    return bool(one and two and one[-1] and two[-1]) and one[-1].isdisjoint(two[-1]) and \
        len(one[-1] | two[-1]) == partitions


def test_two_crawlers_two_consumers_survive_a_consumer_kill(live_world, pipeline, cfg):
    communities = requests.get(cfg.world_eval_url + "/truth/population", timeout=30).json()["communities"]
    crawl_a = pipeline.crawler("crawler-a").start()
    crawl_b = pipeline.crawler("crawler-b")
    # The second instance crawls one community: its posts are also in r/all, so copies meet at the sink.
    crawl_b.args += ["--listing-path", f"/r/{communities[0]}/new.json"]
    crawl_b.start()
    one, two = pipeline.consumer("consumer-1").start(), pipeline.consumer("consumer-2").start()
    everyone = [crawl_a, crawl_b, one, two]
    # Split as both last logged it: consumer-2's assignment can reach its log before consumer-1's of the same
    # rebalance, whose last line then still holds every partition (seen in a clean-clone CI at 8904088).
    wait_for(lambda: split(assigned(one), assigned(two), cfg.kafka_partitions) and len(pipeline.names()) > 100, 150,
             "both consumers holding partitions and rows landing", everyone)
    partitions_before = assigned(one)[-1] | assigned(two)[-1]
    rows_at_kill = len(pipeline.names())
    one.kill()
    wait_for(lambda: assigned(two)[-1] == partitions_before, 90, "consumer-2 taking every partition", everyone)
    after_rebalance = end_offsets(pipeline.broker.url, pipeline.topic)
    # The crawlers go on producing after the rebalance, into consumer-1's former partitions too.
    wait_for(lambda: all(end > after_rebalance[p] for p, end in end_offsets(pipeline.broker.url, pipeline.topic).items()),
             90, "records on every partition after the rebalance", everyone)
    assert crawl_a.stop() == 0 and crawl_b.stop() == 0
    partitions, produced, records = topic_records(pipeline.broker.url, pipeline.topic)
    # consumer-2 through every record of every partition, consumer-1's former ones too: nothing more can land.
    wait_for(lambda: pipeline.landed("reddit_posts"), 120, "the table's positions at the end offsets", everyone)
    names = pipeline.names()
    assert two.alive() and two.stop() == 0
    print(f"\nscale-out: {partitions} partitions, {records} records produced by 2 crawlers, {len(set(produced))} "
          f"distinct posts; {rows_at_kill} rows when consumer-1 died, {sum(names.values())} rows at the end")
    assert partitions == cfg.kafka_partitions == len(partitions_before)
    assert len(assigned(one)[-1]) < partitions  # the group had really split the partitions
    assert records > len(set(produced))  # the crawlers overlapped: copies reached the topic
    assert max(names.values()) == 1
    assert set(names) == set(produced)
