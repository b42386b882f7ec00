"""Parallel reads and leader failover: a topic of N partitions read as N Spark tasks (more
with `minPartitions`), from a 3-broker cluster over ZooKeeper (RF=3,
min.insync.replicas=2, written with acks=all), the leader of one partition SIGKILLed
while its task is in the middle of reading it. The task carries on against the new
leader; the rows read are exactly the rows written."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.testing.cluster import Cluster
from kafkars.testing.zookeeper import ZOOKEEPER_JAR
from kafkars_spark.source import KafkaRange, KafkarsDataSource, KafkarsReader, _Options

pytestmark = [
    pytest.mark.skipif(
        not ZOOKEEPER_JAR.exists(), reason="needs Debian's zookeeper package (make system-deps)"
    ),
    pytest.mark.timeout(240),
]

PARTITIONS = 3
PER_PARTITION = 600


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(3, config={"zookeeper.session.timeout.ms": 6000}) as c:
        yield c


@pytest.fixture(scope="module")
def written(cluster: Cluster) -> tuple[str, set[tuple[int, int, bytes]]]:
    """A topic of 3 partitions, RF=3, min.insync.replicas=2, and what acks=all wrote to
    it, as (partition, offset, value), in small batches (many fetches per partition)."""
    topic = f"failover-{time.monotonic_ns()}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    new = NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(30)
    acked: set[tuple[int, int, bytes]] = set()
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.add((msg.partition(), msg.offset(), msg.value()))
        else:
            errors.append(err)

    p = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1024,  # ~30 records a batch
        }
    )
    for i in range(PARTITIONS * PER_PARTITION):
        part = i % PARTITIONS
        p.produce(topic, value=b"p%d-%06d" % (part, i), partition=part, on_delivery=on_delivery)
    assert p.flush(60) == 0 and not errors, errors[:3]
    assert len(acked) == PARTITIONS * PER_PARTITION
    return topic, acked


def gated_source(signals: Path, victim: int) -> type:
    """The `kafkars` source, each task marking in `signals` that it started, and the task
    reading partition `victim` pausing after its first fetch until `signals/killed`
    exists. Defined in a function so Spark ships the classes by value to its workers."""

    class GatedReader(KafkarsReader):
        def read(self, partition: Any) -> Iterator[Any]:
            assert isinstance(partition, KafkaRange)
            (signals / f"task-{partition.partition}-{partition.start}").touch()
            batches = super().read(partition)
            if partition.partition != victim:
                yield from batches
                return
            first = next(batches)
            (signals / "first").write_text(str(first.num_rows))
            yield first
            deadline = time.monotonic() + 60
            while not (signals / "killed").exists():
                if time.monotonic() > deadline:
                    raise TimeoutError("the test never killed the leader")
                time.sleep(0.02)
            yield from batches

    class GatedSource(KafkarsDataSource):
        @classmethod
        def name(cls) -> str:
            return "kafkars_gated"

        def reader(self, schema: Any) -> Any:
            return GatedReader(_Options(self.options, streaming=False), schema)

    return GatedSource


def leader_of(cluster: Cluster, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader)


def wait_for_file(path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"timed out waiting for {path.name}"
        time.sleep(0.02)


def rows_of(df: Any) -> list[tuple[int, int, bytes]]:
    return [(r.partition, r.offset, bytes(r.value)) for r in df.collect()]


def test_min_partitions_splits_offset_ranges(
    spark: Any, cluster: Cluster, written: tuple[str, set]
) -> None:
    topic, acked = written
    reader = (
        spark.read.format("kafkars")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
    )
    plain = reader.load()
    assert plain.rdd.getNumPartitions() == PARTITIONS
    split = reader.option("minPartitions", "7").load()
    # Spark's arithmetic: each partition's share round(600/1800 * 7) = 2, so 6 tasks.
    assert split.rdd.getNumPartitions() == 6
    rows = rows_of(split)
    assert len(rows) == len(acked) and set(rows) == acked


def test_leader_killed_mid_read(
    spark: Any, cluster: Cluster, written: tuple[str, set], tmp_path: Path
) -> None:
    topic, acked = written
    victim = 0
    spark.dataSource.register(gated_source(tmp_path, victim))
    df = (
        spark.read.format("kafkars_gated")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("kafka.max.partition.fetch.bytes", "2048")  # a batch or two per fetch
        .load()
    )
    assert df.rdd.getNumPartitions() == PARTITIONS
    leader = leader_of(cluster, topic, victim)
    got: list[Any] = []
    failure: list[BaseException] = []

    def collect() -> None:
        try:
            got.extend(rows_of(df))
        except BaseException as e:
            failure.append(e)

    reading = threading.Thread(target=collect)
    reading.start()
    try:
        wait_for_file(tmp_path / "first", 90)
        first_rows = int((tmp_path / "first").read_text())
        # The victim (Spark partition 0) starts in the first wave; another task starting
        # while it still holds shows tasks running side by side (local[2]: two slots).
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("task-*"))) < 2:
            assert time.monotonic() < deadline, "no second task ran beside the first"
            time.sleep(0.02)
        cluster.kill(leader)
    finally:
        (tmp_path / "killed").touch()
        reading.join(180)
    assert not reading.is_alive(), "the read did not finish"
    assert not failure, failure[0]
    assert 0 < first_rows < PER_PARTITION, "the victim's rows must span more than one fetch"
    assert leader_of(cluster, topic, victim) not in (leader, -1)
    assert len(got) == len(acked), "rows lost or read twice"
    assert set(got) == acked


def test_planning_outlives_a_killed_leader(cluster: Cluster, written: tuple[str, set]) -> None:
    """Driver-side planning (Metadata, ListOffsets) after the leader of a partition is
    SIGKILLed while the client has it cached and a connection open to it: the request
    goes to the new leader after a metadata refresh instead of failing the query."""
    from kafkars_spark.wire import LATEST, KafkaClient

    topic, acked = written
    tps = [(topic, p) for p in range(PARTITIONS)]
    with KafkaClient(cluster.bootstrap_servers) as client:
        latest = client.list_offsets(dict.fromkeys(tps, LATEST))
        assert sum(latest.values()) == len(acked)
        leader = client.leaders[(topic, 1)]
        cluster.kill(leader)
        assert client.list_offsets(dict.fromkeys(tps, LATEST)) == latest
        assert [p.partition for p in client.metadata([topic])[topic]] == list(range(PARTITIONS))
    assert leader_of(cluster, topic, 1) not in (leader, -1)
