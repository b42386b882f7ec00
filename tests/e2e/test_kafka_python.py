"""kafka-python (pure Python client) against a real broker process."""

from __future__ import annotations

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewPartitions, NewTopic

from kafkars.broker import Broker


def test_produce_consume_with_headers(broker: Broker, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="gzip")
    for i in range(500):
        producer.send(
            topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % 2,
            headers=[("dup", b"a"), ("dup", b"b")],
        )
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        consumer_timeout_ms=5000,
        enable_auto_commit=False,
    )
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    consumer.seek_to_beginning()
    records = list(consumer)
    consumer.close()
    assert len(records) == 500
    assert records[0].headers == [("dup", b"a"), ("dup", b"b")]
    per_partition = {p: [r.offset for r in records if r.partition == p] for p in (0, 1)}
    assert per_partition[0] == list(range(250))
    assert per_partition[1] == list(range(250))


def test_admin_client(broker: Broker, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics([NewTopic(topic, 3, 1)])
    assert topic in admin.list_topics()
    admin.create_partitions({topic: NewPartitions(6)})
    described = admin.describe_topics([topic])
    assert len(described[0]["partitions"]) == 6
    admin.delete_topics([topic])
    admin.close()


def test_admin_describe_topic_partitions_pages(broker: Broker, topic: str) -> None:
    # kafka-python's own codec and client for DescribeTopicPartitions (KIP-966).
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics([NewTopic(topic, 5, 1)])
    seen: list[int] = []
    cursor = None
    for _ in range(10):
        page = admin.describe_topic_partitions([topic], response_partition_limit=2, cursor=cursor)
        [described] = page["topics"]
        assert described["error_code"] == 0 and len(described["partitions"]) <= 2
        seen += [p["partition_index"] for p in described["partitions"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [0, 1, 2, 3, 4]
    admin.close()


def test_offsets_for_times_and_end_offsets(broker: Broker, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    for i in range(5):
        producer.send(topic, value=b"x", partition=0, timestamp_ms=1_000_000 + i)
        producer.flush()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    tp = TopicPartition(topic, 0)
    assert consumer.end_offsets([tp])[tp] == 5
    assert consumer.beginning_offsets([tp])[tp] == 0
    assert consumer.offsets_for_times({tp: 1_000_003})[tp].offset == 3
    consumer.close()
