"""Mixed clusters (issue 25): Apache Kafka 3.9 brokers in ZooKeeper mode and kafkars
brokers under one ZooKeeper chroot, one cluster. `mixed_cluster(kafka=N, ours=M)` starts
ZooKeeper, then the Kafka brokers (ids 1..N), then the kafkars brokers (ids N+1..N+M);
the first broker up wins /controller, so Kafka starts as the controller."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kafkars.broker import Broker
from kafkars.testing.reference_kafka import ZOOKEEPER_VERSION, ReferenceKafka
from kafkars.testing.zookeeper import ZOOKEEPER_JAR, ZooKeeperServer

# The IBP the Kafka brokers run with: the newest whose LeaderAndIsr (v5), UpdateMetadata
# (v7) and StopReplica (v3) are the versions kafkars sends and accepts (README, "Migrating
# a ZooKeeper-based Apache Kafka cluster to kafkars").
INTER_BROKER_PROTOCOL_VERSION = "3.1-IV0"
CHROOT = "/mixed"
SESSION_TIMEOUT_MS = 6000

# Both kinds: the same session timeout, quick ISR shrink, RF=min(3, brokers) internals.
COMMON = {
    "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
    "replica.lag.time.max.ms": 5000,
    "controlled.shutdown.retry.backoff.ms": 500,
    "group.initial.rebalance.delay.ms": 0,
    "auto.create.topics.enable": False,
    # The consumers' group.id creates __consumer_offsets: few partitions keep every
    # controller move short on a shared machine.
    "offsets.topic.num.partitions": 5,
    "transaction.state.log.num.partitions": 5,
}
KAFKA_ONLY = {
    "inter.broker.protocol.version": INTER_BROKER_PROTOCOL_VERSION,
}

# KAFKARS_LONG=1 (`make mixed`) runs the tests marked `long` (tests/conftest.py) and
# holds each fault longer, twice.
LONG = os.environ.get("KAFKARS_LONG") == "1"
# A directory to copy every broker's whole log into after each test (KAFKARS_MIXED_LOGS).
KEEP_LOGS = os.environ.get("KAFKARS_MIXED_LOGS")


def _quiet(*_: object) -> None:
    pass


needs_mixed = pytest.mark.skipif(
    not ZOOKEEPER_JAR.exists(), reason="needs Debian's zookeeper package (make system-deps)"
)


class MixedCluster:
    """One ZooKeeper, Kafka brokers `kafka` and kafkars brokers `ours`, by broker id."""

    def __init__(
        self,
        kafka: int,
        ours: int,
        config: dict[str, Any] | None = None,
        *,
        ours_first: bool = False,
    ) -> None:
        self.ours_first = ours_first
        self.zk = ZooKeeperServer()
        self.kafka_ids = list(range(1, kafka + 1))
        self.our_ids = list(range(kafka + 1, kafka + ours + 1))
        size = kafka + ours
        self.config = {
            **COMMON,
            "offsets.topic.replication.factor": min(3, size),
            "transaction.state.log.replication.factor": min(3, size),
            "transaction.state.log.min.isr": min(2, size),
            **(config or {}),
        }
        self.kafka: dict[int, ReferenceKafka] = {}
        self.ours: dict[int, Broker] = {}
        self.zk_client: KazooClient | None = None
        # Client settings beyond bootstrap.servers (none: PLAINTEXT), as tests/cluster's.
        self.client_config: dict[str, str] = {}
        # Brokers replaced by the other kind: their temporary dirs go at the end.
        self.retired: list[ReferenceKafka | Broker] = []

    @property
    def connect(self) -> str:
        return f"{self.zk.connect}{CHROOT}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.bootstrap(i) for i in self.running())

    def bootstrap(self, broker_id: int) -> str:
        if broker_id in self.kafka:
            return self.kafka[broker_id].bootstrap_servers
        return self.ours[broker_id].bootstrap_servers

    def kind(self, broker_id: int) -> str:
        return "kafka" if broker_id in self.kafka_ids else "kafkars"

    def running(self) -> list[int]:
        return sorted(
            [i for i, k in self.kafka.items() if k.running]
            + [i for i, b in self.ours.items() if b.running]
        )

    def start(self) -> MixedCluster:
        self.zk.start()
        root = KazooClient(hosts=self.zk.connect)
        root.start()
        root.ensure_path(CHROOT)
        root.stop()
        self.zk_client = KazooClient(hosts=self.connect)
        self.zk_client.start()
        for i in self.kafka_ids:
            self.kafka[i] = ReferenceKafka(
                version=ZOOKEEPER_VERSION,
                zookeeper=self.connect,
                node_id=i,
                config={**self.config, **KAFKA_ONLY},
            )
        for i in self.our_ids:
            self.ours[i] = Broker(
                process=True,
                config={**self.config, "broker.id": i, "zookeeper.connect": self.connect},
            )
        order = self.our_ids + self.kafka_ids if self.ours_first else self.kafka_ids + self.our_ids
        for i in order:
            if i in self.kafka:
                self.kafka[i].start()
            else:
                self.ours[i].start()
            if i == order[0]:
                # The first broker up takes /controller.
                deadline = time.monotonic() + 30
                while self.controller() != i and time.monotonic() < deadline:
                    time.sleep(0.1)
        self.wait_registered()
        return self

    def start_broker(self, broker_id: int) -> None:
        if broker_id in self.kafka:
            self.kafka[broker_id].start()
        else:
            self.ours[broker_id].start()
        self.wait_registered()

    def kill(self, broker_id: int) -> None:
        if broker_id in self.kafka:
            self.kafka[broker_id].kill()
        else:
            self.ours[broker_id].kill()

    def replace_with_ours(self, broker_id: int) -> None:
        """Stops Kafka broker `broker_id` cleanly (controlled shutdown) and starts a
        kafkars broker in its place: the same broker.id, log dir and port."""
        kafka = self.kafka.pop(broker_id)
        kafka.stop(remove=False)
        self.retired.append(kafka)
        self.kafka_ids.remove(broker_id)
        broker = Broker(
            process=True,
            log_dir=kafka.log_dir,
            port=kafka.port,
            config={**self.config, "broker.id": broker_id, "zookeeper.connect": self.connect},
        )
        self.ours[broker_id] = broker
        self.our_ids.append(broker_id)
        broker.start()
        self.wait_registered()

    def replace_with_kafka(self, broker_id: int) -> None:
        """The way back: stops kafkars broker `broker_id` cleanly and starts a Kafka
        broker with its broker.id, log dir and port."""
        broker = self.ours.pop(broker_id)
        broker.stop(remove=False)
        self.retired.append(broker)
        self.our_ids.remove(broker_id)
        kafka = ReferenceKafka(
            version=ZOOKEEPER_VERSION,
            zookeeper=self.connect,
            node_id=broker_id,
            config={**self.config, **KAFKA_ONLY, "log.dirs": str(broker.log_dir)},
        )
        kafka.port = broker.port
        kafka.config["listeners"] = f"PLAINTEXT://127.0.0.1:{broker.port}"
        self.kafka[broker_id] = kafka
        self.kafka_ids.append(broker_id)
        kafka.start()
        self.wait_registered()

    def registered(self) -> list[int]:
        assert self.zk_client is not None
        return sorted(int(c) for c in self.zk_client.get_children("/brokers/ids"))

    def wait_registered(self, timeout: float = 60.0) -> None:
        """Waits until every running broker is registered and its metadata lists every
        running broker and a controller: a client sent to a broker before the
        controller's first UpdateMetadata reached it would find no controller to ask."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        while self.registered() != self.running():
            if time.monotonic() > deadline:
                raise TimeoutError(f"registered {self.registered()}, running {self.running()}")
            time.sleep(0.1)
        for broker_id in self.running():
            admin = AdminClient(
                {"bootstrap.servers": self.bootstrap(broker_id), "log_level": 0, "logger": _quiet}
            )
            while True:
                try:
                    md = admin.list_topics(timeout=10)
                except KafkaException:
                    md = None  # a broker just started can answer partially: ask again
                if md and md.controller_id >= 0 and sorted(md.brokers) == self.running():
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {broker_id} does not list every broker")
                time.sleep(0.1)

    def controller(self) -> int:
        """The broker id in /controller, -1 while nobody holds it."""
        import json

        from kazoo.exceptions import NoNodeError

        assert self.zk_client is not None
        try:
            raw, _ = self.zk_client.get("/controller")
        except NoNodeError:
            return -1
        return int(json.loads(raw)["brokerid"])

    def logs(self) -> str:
        out = []
        for i, k in self.kafka.items():
            lines = [
                line
                for line in k.log(200_000).splitlines()
                if " WARN " in line or " ERROR " in line
            ]
            out.append(f"--- Kafka broker {i}\n" + "\n".join(x[:400] for x in lines[-12:]))
        for i, b in self.ours.items():
            lines = [
                line
                for line in b.server_log().splitlines()
                if " WARNING " in line or " ERROR " in line
            ]
            out.append(f"--- kafkars broker {i}\n" + "\n".join(x[:400] for x in lines[-12:]))
        return "\n".join(out)

    def keep_logs(self, into: Path) -> None:
        """Copies every broker's whole log (the replaced ones' too) into `into`."""
        into.mkdir(parents=True, exist_ok=True)
        for broker in [*self.kafka.values(), *self.ours.values(), *self.retired]:
            if isinstance(broker, ReferenceKafka):
                source = broker.data_dir / "kafka.log"
                name = f"kafka-{broker.node_id}-{broker.data_dir.name}.log"
            else:
                source = broker.log_dir / ".kafkars-server.log"
                name = f"kafkars-{broker.overrides['broker.id']}-{broker.log_dir.name}.log"
            if source.exists():
                shutil.copyfile(source, into / name)

    def stop(self) -> None:
        for b in self.ours.values():
            b.stop()
        for k in self.kafka.values():
            k.stop()
        for retired in self.retired:
            retired.stop()
        if self.zk_client is not None:
            self.zk_client.stop()
        self.zk.stop()


def mixed_cluster(
    kafka: int, ours: int, config: dict[str, Any] | None = None, *, ours_first: bool = False
) -> Iterator[MixedCluster]:
    cluster = MixedCluster(kafka, ours, config, ours_first=ours_first)
    try:
        cluster.start()
        yield cluster
    finally:
        # Shown by pytest only when the test failed.
        print(cluster.logs())
        if KEEP_LOGS:
            cluster.keep_logs(Path(KEEP_LOGS) / f"{time.strftime('%H%M%S')}-{id(cluster)}")
        cluster.stop()


@pytest.fixture
def pair() -> Iterator[MixedCluster]:
    """One Kafka 3.9 broker (id 1, the first controller) and one kafkars broker (id 2)."""
    yield from mixed_cluster(1, 1)


@pytest.fixture
def trio() -> Iterator[MixedCluster]:
    """One Kafka 3.9 broker (id 1) and two kafkars brokers (ids 2, 3); kafkars broker 2
    starts first and holds /controller."""
    yield from mixed_cluster(1, 2, ours_first=True)
