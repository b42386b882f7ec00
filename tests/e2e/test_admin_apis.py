"""Admin APIs as Kafka 4.0 answers them, through real clients: DescribeLogDirs,
ListGroups filters, ListOffsets special timestamps."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as ConfluentNewTopic
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from raw_client import RawConnection

from kafkars.broker import Broker


def test_describe_log_dirs_lists_every_partition(broker: Broker, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for _ in range(3):
            producer.send(topic, b"x" * 100, partition=1)
        producer.flush()
        producer.close()

        [answer] = admin.describe_log_dirs()
        [log_dir] = answer["log_dirs"]
        assert log_dir["error_code"] == 0
        assert Path(log_dir["log_dir"]) == broker.log_dir.resolve()
        assert log_dir["total_bytes"] > 0 and 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        [mine] = [t for t in log_dir["topics"] if t["name"] == topic]
        partitions = {p["partition_index"]: p for p in mine["partitions"]}
        assert sorted(partitions) == [0, 1]
        assert partitions[0]["partition_size"] == 0
        assert partitions[1]["partition_size"] > 300  # three batches of 100-byte values
        assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in partitions.values())

        # Asking for one partition answers that partition only.
        [answer] = admin.describe_log_dirs({topic: [1]})
        [log_dir] = answer["log_dirs"]
        assert [
            (t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]
        ] == [(topic, [1])]
    finally:
        admin.close()


def list_offsets(conn: RawConnection, topic: str, timestamp: int, version: int) -> Any:
    partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        version=version, partition_index=0, timestamp=timestamp
    )
    request = ListOffsetsRequest(
        version=version,
        replica_id=-1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(version=version, name=topic, partitions=[partition])
        ],
    )
    [t] = conn.call(request, ListOffsetsResponse, version).topics
    [p] = t.partitions
    return p


def test_list_offsets_special_timestamps_as_kafka_4_0(broker: Broker, topic: str) -> None:
    """-4 (earliest local) is the log start without tiered storage, -5 (latest tiered) is
    no offset and no error; each needs its ListOffsets version (-3: v7, -4: v8, -5: v9),
    and any other negative timestamp is UNSUPPORTED_VERSION for its partition."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    for _ in range(5):
        producer.send(topic, b"v", partition=0)
    producer.flush()
    producer.close()
    with RawConnection(broker) as conn:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.delete_records({TopicPartition(topic, 0): 2})
        admin.close()
        for version in (8, 9, 10):
            earliest_local = list_offsets(conn, topic, -4, version)
            assert (earliest_local.error_code, earliest_local.offset) == (0, 2)
            assert earliest_local.timestamp == -1
        for version in (9, 10):
            tiered = list_offsets(conn, topic, -5, version)
            assert (tiered.error_code, tiered.timestamp, tiered.offset) == (0, -1, -1)
            assert tiered.leader_epoch == -1
        latest = list_offsets(conn, topic, -1, 10)
        assert (latest.error_code, latest.offset) == (0, 5)
        unsupported = [(-3, 6), (-4, 7), (-5, 8), (-6, 10), (-7, 10)]
        for timestamp, version in unsupported:
            p = list_offsets(conn, topic, timestamp, version)
            assert p.error_code == 35, (timestamp, version)  # UNSUPPORTED_VERSION
            assert (p.timestamp, p.offset) == (-1, -1)


def _joined(bootstrap: str, group: str, topic: str, **extra: Any) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    c.subscribe([topic])
    deadline = time.monotonic() + 20
    while not c.assignment():
        assert time.monotonic() < deadline, f"{group} got no assignment"
        c.poll(0.2)
    return c


def test_list_groups_filters_by_state_and_type(broker: Broker, topic: str) -> None:
    """ListGroups v4 `states_filter` and v5 `types_filter` (case-insensitive, combined)."""
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([ConfluentNewTopic(topic, 1, 1)])[topic].result(10)
    tag = uuid.uuid4().hex[:8]
    stable_classic, stable_consumer, empty_classic = (
        f"classic-{tag}",
        f"consumer-{tag}",
        f"empty-{tag}",
    )
    c1 = _joined(bootstrap, stable_classic, topic, **{"session.timeout.ms": 6000})
    c2 = _joined(bootstrap, stable_consumer, topic, **{"group.protocol": "consumer"})
    c3 = Consumer({"bootstrap.servers": bootstrap, "group.id": empty_classic})
    c3.commit(offsets=[ConfluentTopicPartition(topic, 0, 0)], asynchronous=False)
    c3.close()
    try:

        def listed(**filters: Any) -> set[tuple[str, str, str]]:
            groups = admin.list_consumer_groups(**filters).result(10).valid
            return {
                (g.group_id, g.state.name, g.type.name) for g in groups if g.group_id.endswith(tag)
            }

        stable = {ConsumerGroupState.STABLE}
        assert listed() == {
            (stable_classic, "STABLE", "CLASSIC"),
            (stable_consumer, "STABLE", "CONSUMER"),
            (empty_classic, "EMPTY", "CLASSIC"),
        }
        assert listed(states=stable) == {
            (stable_classic, "STABLE", "CLASSIC"),
            (stable_consumer, "STABLE", "CONSUMER"),
        }
        assert listed(states={ConsumerGroupState.EMPTY}) == {(empty_classic, "EMPTY", "CLASSIC")}
        assert {g for g, _, _ in listed(types={ConsumerGroupType.CLASSIC})} == {
            stable_classic,
            empty_classic,
        }
        assert listed(types={ConsumerGroupType.CONSUMER}) == {
            (stable_consumer, "STABLE", "CONSUMER")
        }
        assert listed(types={ConsumerGroupType.CLASSIC}, states=stable) == {
            (stable_classic, "STABLE", "CLASSIC")
        }
    finally:
        c1.close()
        c2.close()


def test_list_offsets_duplicates_and_unknown_topics(broker: Broker, topic: str) -> None:
    """A partition named twice gets INVALID_REQUEST (both times); an unknown topic asked
    with a timestamp its version cannot carry gets UNSUPPORTED_VERSION, as Kafka checks
    the timestamp before the partition."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    version = 8
    part = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition

    def ask(name: str, *partitions: tuple[int, int]) -> list[tuple[int, int]]:
        request = ListOffsetsRequest(
            version=version,
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    version=version,
                    name=name,
                    partitions=[
                        part(version=version, partition_index=i, timestamp=ts)
                        for i, ts in partitions
                    ],
                )
            ],
        )
        with RawConnection(broker) as conn:
            [t] = conn.call(request, ListOffsetsResponse, version).topics
        return [(p.partition_index, p.error_code) for p in t.partitions]

    assert ask(topic, (0, -1), (1, -1), (0, -2)) == [(0, 42), (1, 0), (0, 42)]
    assert ask("no-such-topic-" + topic, (0, -5), (1, -1)) == [(0, 35), (1, 3)]
