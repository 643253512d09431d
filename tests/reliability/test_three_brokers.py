"""Issue 33, point 5: a three-broker KRaft cluster on this machine (each node broker and controller,
replication 3, ``min.insync.replicas`` 2), the crawl pipeline's processes on it (the listing crawler,
an idempotent ``acks=all`` producer, and the posts landing, exactly once through the offsets in its
Delta commits), and one broker SIGKILLed mid-run and started again: nothing lost, nothing doubled, and
no process restarted (each rode through on the other two brokers).

Nothing lost and nothing doubled are read as in the fault suite: once the clock stops and one clean
pass re-served the whole listing, the posts in Delta are exactly the posts the world served to the
crawler (its access log), each once. No fixed sleeps: the kill comes after a number of the crawler's
requests, the restart after more requests made with one broker down.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import Pipeline, served_to, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

SIZE = 3


class KafkaCluster:
    """``SIZE`` KRaft nodes of ``focuscrawl.services.kafka.KafkaBroker``, one cluster id, one quorum; node i
    listens on the session broker's port + 200 + 2i (broker) and + 201 + 2i (controller)."""

    def __init__(self, cfg, base: Path) -> None:
        from focuscrawl.services.kafka import KafkaBroker

        ports = [(cfg.kafka_port + 200 + 2 * i, cfg.kafka_port + 201 + 2 * i) for i in range(SIZE)]
        voters = ",".join(f"{i + 1}@{cfg.bind_host}:{c}" for i, (_, c) in enumerate(ports))
        self.url = ",".join(f"{cfg.bind_host}:{p}" for p, _ in ports)
        self.nodes = [KafkaBroker(dataclasses.replace(cfg, var_dir=base / f"node{i + 1}", kafka_port=p,
                                                      kafka_controller_port=c, kafka_bootstrap=self.url,
                                                      kafka_replication=SIZE),
                                  node_id=i + 1, voters=voters, cluster_size=SIZE)
                      for i, (p, c) in enumerate(ports)]

    def start(self, timeout: float = 240.0) -> None:
        cluster_id = None
        for node in self.nodes:
            node.data_dir.mkdir(parents=True, exist_ok=True)
            if cluster_id is not None:
                (node.data_dir / "cluster.id").write_text(cluster_id)
            node.prepare()
            cluster_id = (node.data_dir / "cluster.id").read_text()
            node.process.start()
        wait_for(lambda: self.brokers() == SIZE, timeout, f"all {SIZE} brokers registered")

    def brokers(self) -> int:
        """Brokers the cluster's metadata lists as registered (0 while none answers)."""
        from kafka import KafkaAdminClient

        try:
            admin = KafkaAdminClient(bootstrap_servers=self.url, request_timeout_ms=3000)
        except Exception:  # noqa: BLE001 - none answers yet
            return 0
        try:
            return len(admin.describe_cluster()["brokers"])
        except Exception:  # noqa: BLE001
            return 0
        finally:
            admin.close()

    def stop(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(SIZE) as pool:
            list(pool.map(lambda node: node.stop(), self.nodes))


@pytest.fixture
def cluster(cfg, tmp_path_factory):
    c = KafkaCluster(cfg, tmp_path_factory.mktemp("three-brokers"))
    try:
        c.start()
        yield c
    finally:  # also after a failed start: no node is left holding its ports
        c.stop()


def test_a_broker_killed_mid_run_loses_and_doubles_nothing_and_no_process_restarts(cfg, tmp_path, topic, cluster,
                                                                                  live_world):
    from kafka import KafkaAdminClient

    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    pipeline = Pipeline(cfg, tmp_path, topic, cluster)
    ensure_topics(cluster.url, [TopicSpec(pipeline.topic, "author"), TopicSpec(pipeline.dl_topic, "host")],
                  cfg.kafka_partitions, SIZE)
    admin = KafkaAdminClient(bootstrap_servers=cluster.url)
    try:
        described = admin.describe_topics([pipeline.topic])[0]
        assert {len(p["replica_nodes"]) for p in described["partitions"]} == {SIZE}
        leader = next(p["leader_id"] for p in described["partitions"] if p["partition_index"] == 0)
    finally:
        admin.close()
    client = f"127.0.0.1|{cfg.user_agent}"
    crawler = pipeline.crawler().start()
    posts = pipeline.consumer("posts").start()
    try:
        wait_for(lambda: pipeline.names(), 150, "the first rows", pipeline.procs)

        def crawled(n: int, what: str) -> None:
            since = live_world.requests_of(client)
            wait_for(lambda: live_world.requests_of(client) >= since + n, 120, f"{n} more requests: {what}",
                     pipeline.procs)

        crawled(5, "before the kill")
        victim = next(n for n in cluster.nodes if n.node_id == leader)  # a leader fails over, not a bystander
        victim.kill()
        wait_for(lambda: not victim.healthy(), 30, "the broker to die")
        rows_before = pipeline.rows("reddit_posts")
        crawled(10, "with one broker down")
        wait_for(lambda: pipeline.rows("reddit_posts") > rows_before, 120, "rows landed with one broker down",
                 pipeline.procs)
        victim.start(timeout=240)
        wait_for(lambda: cluster.brokers() == SIZE, 240, "the restarted broker registered again")
        crawled(5, "after the restart")
        live_world.pause()
        mark = len(live_world.access_log())
        listed = live_world.listing_names()
        wait_for(lambda: served_to(live_world.access_log()[mark:], client) >= listed, 120, "a clean pass",
                 pipeline.procs)
        # No process restarted: each was started once and is still that process (a broker error it could not
        # ride through would have ended it).
        assert crawler.alive() and crawler.stop() == 0, crawler.tail()
        wait_for(lambda: pipeline.landed("reddit_posts"), 120, "the posts topic landed", pipeline.procs)
        assert posts.alive(), posts.tail()
    finally:
        pipeline.stop_all()
    names, served = pipeline.names(), served_to(live_world.access_log(), client)
    print(f"\nthree brokers: posts served {len(served)}, rows {sum(names.values())}, distinct {len(names)}")
    assert max(names.values()) == 1  # nothing doubled
    assert set(names) == served  # nothing lost
    assert len(served) >= len(listed) > 200
