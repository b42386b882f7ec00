"""What the cluster tests share: a 3-broker cluster fixture, quiet clients, topic
creation, partition metadata as clients see it, polling waits, a full read-back and a
producer that keeps producing."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.testing.cluster import Cluster
from kafkars.testing.zookeeper import ZOOKEEPER_JAR

needs_zookeeper = pytest.mark.skipif(
    not ZOOKEEPER_JAR.exists(), reason="needs Debian's zookeeper package (make system-deps)"
)
SESSION_TIMEOUT_MS = 6000


def running_cluster(brokers: int = 3, config: dict[str, object] | None = None) -> Iterator[Cluster]:
    config = {
        "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
        # ACLs matter only where a test creates some.
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": True,
        **(config or {}),
    }
    with Cluster(brokers, config=config) as c:
        yield c
        # Shown by pytest only when the test failed: what each broker complained about.
        for broker_id, broker in c.brokers.items():
            lines = [
                line
                for line in broker.server_log().splitlines()
                if " WARNING " in line or " ERROR " in line
            ]
            print(f"--- broker {broker_id}", *lines[-15:], sep="\n")


def connection(cluster: Cluster) -> dict[str, object]:
    """What a client needs to reach the cluster: its bootstrap servers and, when the
    listeners are secured, the cluster's client settings."""
    return {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config}


# librdkafka's log lines go to a logger's .log(): one that drops them.
_SILENT = logging.getLogger("kafkars.tests.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def quiet(conf: dict[str, object]) -> dict[str, object]:
    return {**conf, "log_level": 0, "logger": _SILENT}


def create_topic(cluster: Cluster, partitions: int = 3, rf: int = 3, **configs: str) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(quiet(connection(cluster)))
    futures = admin.create_topics([NewTopic(name, partitions, rf, config=configs)])
    futures[name].result(30)
    return name


def partition_metadata(cluster: Cluster, topic: str, partition: int) -> tuple[int, list, list]:
    """The partition as the metadata shows it. A topic just created may not have reached
    the broker asked yet (UpdateMetadata is asynchronous, as in Kafka): wait up to 10 s."""
    admin = AdminClient(quiet(connection(cluster)))
    deadline = time.monotonic() + 10
    while True:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        if partition in partitions or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    p = partitions[partition]
    return p.leader, sorted(p.replicas), sorted(p.isrs)


def wait_for(predicate, timeout: float, what: str) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if predicate():
                return time.monotonic() - start
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def consume_all(cluster: Cluster, topic: str, partitions: int) -> list[bytes]:
    c = Consumer(
        quiet(
            {
                **connection(cluster),
                "group.id": "unused",
                "enable.auto.commit": False,
            }
        )
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[bytes] = []
    idle = 0
    while idle < 5:
        msgs = c.consume(1000, 1.0)
        idle = 0 if msgs else idle + 1
        out += [m.value() for m in msgs if m.error() is None]
    c.close()
    return out


class Producing:
    """An idempotent acks=all producer writing "0", "1", ... to one partition on its own
    thread until stopped; it records what was acknowledged and what failed."""

    def __init__(self, cluster: Cluster, topic: str, partition: int = 0) -> None:
        self.acked: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cluster, topic, partition))

    def start(self) -> Producing:
        self._thread.start()
        return self

    def __enter__(self) -> Producing:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def _run(self, cluster: Cluster, topic: str, partition: int) -> None:
        p = Producer(
            quiet(
                {
                    **connection(cluster),
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "message.timeout.ms": 60000,
                }
            )
        )

        def on_delivery(err: KafkaError | None, msg: object) -> None:
            if err is None:
                self.acked.append(msg.value())  # type: ignore[attr-defined]
            else:
                self.errors.append(str(err))

        i = 0
        while not self._stop.is_set():
            p.produce(topic, value=b"%d" % i, partition=partition, on_delivery=on_delivery)
            p.poll(0.002)
            i += 1
        p.flush(60)


def leader_failover_under_load(cluster: Cluster, topic: str) -> float:
    """An idempotent acks=all producer writes to partition 0 while its leader is killed
    (SIGKILL), a new leader takes over, and the killed broker returns, truncates by leader
    epoch and rejoins the ISR. Checks nothing acknowledged is lost or written twice;
    returns the seconds from the kill to a new leader in the metadata."""
    producing = Producing(cluster, topic).start()
    acked = producing.acked
    wait_for(lambda: len(acked) > 200, 20, "the first acknowledgements")
    leader, _, _ = partition_metadata(cluster, topic, 0)
    cluster.kill(leader)
    killed_at = time.monotonic()
    wait_for(
        lambda: partition_metadata(cluster, topic, 0)[0] not in (leader, -1),
        SESSION_TIMEOUT_MS / 1000 + 10,
        "a new leader",
    )
    failover_s = time.monotonic() - killed_at
    count = len(acked)
    wait_for(lambda: len(acked) > count + 200, 30, "acknowledgements from the new leader")
    cluster.start(leader)
    everyone = sorted(cluster.brokers)
    wait_for(lambda: partition_metadata(cluster, topic, 0)[2] == everyone, 30, "a full ISR")
    producing.stop()
    assert not producing.errors, producing.errors[:3]
    values = consume_all(cluster, topic, 1)
    assert len(values) == len(set(values)), "a record was written twice"
    assert set(acked) <= set(values), "an acknowledged record was lost"
    return failover_s
