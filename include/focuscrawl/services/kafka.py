"""A Kafka broker in KRaft mode, run from Apache's own jars (fetched by ``make jars``).

Combined broker+controller, listeners on the bind host only, small heap, data under ``var/kafka``.
The storage is formatted once with a random cluster id kept beside it. Alone (the embedded default)
it is its own quorum and its internal topics have one replica; as one node of ``cluster_size``
(``node_id``, the quorum's ``voters``, the same ``cluster.id`` file in each node's folder) the
internal topics get min(3, size) replicas and every topic ``min.insync.replicas`` 2, so a write
acknowledged by ``acks=all`` survives the loss of one node (tests/reliability/test_three_brokers.py).
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

from focuscrawl.config import Settings
from focuscrawl.services.probe import PROBE_TIMEOUT, Probe, failed
from focuscrawl.services.process import ManagedProcess, port_open


def cluster_id() -> str:
    """A new KRaft cluster id, as ``kafka-storage random-uuid`` prints one, without a JVM's start for it (~1.5
    CPU-s, once per fresh broker): Kafka's ``Uuid.randomUuid().toString()`` is a random UUID's 16 bytes in
    URL-safe base64 without padding, drawn again while it starts with '-' (a command line would read it as an
    option)."""
    while (cid := base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()).startswith("-"):
        pass
    return cid


class KafkaBroker:
    name = "kafka"

    def __init__(self, cfg: Settings, node_id: int = 1, voters: str | None = None, cluster_size: int = 1) -> None:
        self.cfg = cfg
        self.node_id, self.cluster_size = node_id, cluster_size
        self.voters = voters or f"{node_id}@{cfg.bind_host}:{cfg.kafka_controller_port}"
        self.data_dir = Path(cfg.var_dir) / "kafka"
        self.properties = self.data_dir / "server.properties"
        self.process = ManagedProcess(
            name=self.name,
            run_dir=Path(cfg.var_dir) / "run",
            log_dir=Path(cfg.var_dir) / "logs",
            command=[],  # built in start(): status/down must work before `make jars`
            env={"KAFKA_HEAP_OPTS": f"-Xmx{cfg.kafka_heap}"},
        )
        self.processes = {self.name: self.process}

    @property
    def url(self) -> str:
        return self.cfg.kafka_bootstrap

    def _classpath(self) -> str:
        jars = Path(self.cfg.kafka_jars)
        if not any(jars.glob("kafka_2.13-*.jar")):
            raise FileNotFoundError(f"no Kafka jars in {jars}; run `make jars` (mvn, jvm/kafka/pom.xml)")
        return f"{jars}/*"

    def _java(self, main: str, *args: str, heap: str = "256m") -> list[str]:
        log4j = self.data_dir / "log4j.properties"
        return [
            "java", f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{log4j}", f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
            "-cp", self._classpath(), main, *args,
        ]

    def _write_config(self) -> None:
        c = self.cfg
        logs = self.data_dir / "data"
        replicas, min_isr = min(3, self.cluster_size), min(2, self.cluster_size)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.properties.write_text(
            "\n".join([
                "process.roles=broker,controller",
                f"node.id={self.node_id}",
                f"controller.quorum.voters={self.voters}",
                f"listeners=PLAINTEXT://{c.bind_host}:{c.kafka_port},CONTROLLER://{c.bind_host}:{c.kafka_controller_port}",
                f"advertised.listeners=PLAINTEXT://{c.bind_host}:{c.kafka_port}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                f"log.dirs={logs}",
                f"num.partitions={c.kafka_partitions}",
                f"offsets.topic.replication.factor={replicas}",
                "offsets.topic.num.partitions=8",
                f"transaction.state.log.replication.factor={replicas}",
                f"transaction.state.log.min.isr={min_isr}",
                f"share.coordinator.state.topic.replication.factor={replicas}",
                f"share.coordinator.state.topic.min.isr={min_isr}",
                f"default.replication.factor={c.kafka_replication}",
                f"min.insync.replicas={min_isr}",
                "group.initial.rebalance.delay.ms=0",
                "auto.create.topics.enable=true",
                "log.retention.hours=168",
                "log.cleaner.enable=true",
                "",
            ])
        )
        (self.data_dir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.server.KafkaServer=INFO\n"
            "log4j.logger.kafka.server.BrokerServer=INFO\n"
        )

    def _format_storage(self) -> None:
        if (self.data_dir / "data" / "meta.properties").exists():
            return
        cluster_id_file = self.data_dir / "cluster.id"
        if not cluster_id_file.exists():
            cluster_id_file.write_text(cluster_id())
        out = subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "-t", cluster_id_file.read_text().strip(),
                       "-c", str(self.properties), "--ignore-formatted"),
            capture_output=True, text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"formatting Kafka storage in {self.data_dir} failed:\n{out.stdout}\n{out.stderr}")

    def start(self, timeout: float = 180.0) -> None:
        if self.healthy():
            return
        self.prepare()
        self.process.start_until(self.ready, timeout, f"Kafka broker on {self.url}")

    def prepare(self) -> None:
        """Config written, storage formatted, command set: what precedes the JVM's start. The nodes of a
        cluster are started together after it (none answers before a quorum of them runs)."""
        self._write_config()
        self._format_storage()
        self.process.command = self._java("kafka.Kafka", str(self.properties), heap=self.cfg.kafka_heap)

    def ready(self) -> bool:
        return self.probe(timeout=3.0).up

    def probe(self, timeout: float = PROBE_TIMEOUT) -> Probe:
        """A real metadata exchange with the broker (bootstrap, then the cluster's description), bounded by
        ``timeout``: a port that accepts but a broker that does not answer is down."""
        if not port_open(self.cfg.bind_host, self.cfg.kafka_port, timeout=min(timeout, 0.5)):
            return Probe(False, f"nothing listens on {self.url}")
        try:
            from kafka import KafkaAdminClient

            ms = int(timeout * 1000)
            admin = KafkaAdminClient(bootstrap_servers=self.url, request_timeout_ms=ms, bootstrap_timeout_ms=ms,
                                     client_id="focuscrawl-probe")
            try:
                cluster = admin.describe_cluster()
            finally:
                admin.close()
        except Exception as exc:  # noqa: BLE001 - any client error is the broker not answering
            return failed(exc)
        brokers = cluster.get("brokers") or []
        return Probe(bool(brokers), f"{len(brokers)} broker{'s' * (len(brokers) != 1)}, controller "
                                    f"{cluster.get('controller_id')}")

    def stop(self) -> bool:
        return self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def healthy(self) -> bool:
        """Ours runs and the broker answers its metadata request."""
        return self.process.running() and self.probe().up

    def alive(self) -> bool:
        """Ours runs and its port accepts: what the platform's watch restarts on (a broker slow to answer
        under load is not dead)."""
        return self.process.running() and port_open(self.cfg.bind_host, self.cfg.kafka_port)
