"""confluent-kafka (librdkafka) against a real broker process."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkars.broker import Broker

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def produce(bootstrap: str, topic: str, n: int, codec: str, partitions: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 5,
            "batch.num.messages": 2000,
        }
    )
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for i in range(n):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"value-{i}".encode() * 3,
            partition=i % partitions,
            headers=[("h", b"1"), ("h", b"2"), ("idx", str(i).encode())],
            on_delivery=on_delivery,
        )
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert not errors, errors[:3]


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused-no-commit",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages = []
    deadline = time.monotonic() + 60
    while len(messages) < expected and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=10000, timeout=1.0):
            assert msg.error() is None, msg.error()
            messages.append(msg)
    consumer.close()
    return messages


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume_every_codec(broker: Broker, topic: str, codec: str) -> None:
    n, partitions = 20000, 4
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    produce(broker.bootstrap_servers, topic, n, codec, partitions)
    messages = consume_all(broker.bootstrap_servers, topic, partitions, n)
    assert len(messages) == n
    by_partition: dict[int, list] = {}
    for m in messages:
        by_partition.setdefault(m.partition(), []).append(m)
    for p, msgs in by_partition.items():
        offsets = [m.offset() for m in msgs]
        assert offsets == list(range(len(msgs))), f"partition {p} offsets not contiguous"
        indexes = [int(dict(m.headers())["idx"]) for m in msgs]
        assert indexes == sorted(indexes), "order within a partition is kept"
        assert all(i % partitions == p for i in indexes)
    first = next(m for m in messages if m.key() == b"k0")
    assert first.value() == b"value-0" * 3
    # Duplicate header keys survive in order.
    assert first.headers()[:2] == [("h", b"1"), ("h", b"2")]


def test_hundred_thousand_records(broker: Broker, topic: str) -> None:
    n = 100_000
    produce(broker.bootstrap_servers, topic, n, "lz4", 4)
    messages = consume_all(broker.bootstrap_servers, topic, 4, n)
    assert len(messages) == n
    assert len({(m.partition(), m.offset()) for m in messages}) == n


def test_list_offsets_by_timestamp(broker: Broker, topic: str) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    base = 1_700_000_000_000
    for i in range(10):
        producer.produce(topic, value=b"x", partition=0, timestamp=base + i * 1000)
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ts"})
    found = consumer.offsets_for_times([TopicPartition(topic, 0, base + 4500)], timeout=10)
    assert found[0].offset == 5, "first offset whose timestamp is >= the target"
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    assert (low, high) == (0, 10)
    past = consumer.offsets_for_times([TopicPartition(topic, 0, base + 99_000)], timeout=10)
    assert past[0].offset == -1
    consumer.close()


def test_admin_topics_and_partitions(broker: Broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})])[topic].result(
        10
    )
    dup = admin.create_topics([NewTopic(topic, 2, 1)])[topic]
    with pytest.raises(Exception, match="already exists"):
        dup.result(10)
    bad_rf = admin.create_topics([NewTopic(topic + "-rf", 1, 3)])[topic + "-rf"]
    with pytest.raises(Exception, match="(?i)replication"):
        bad_rf.result(10)
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(10)
    md = admin.list_topics(topic, timeout=10)
    assert len(md.topics[topic].partitions) == 5
    admin.delete_topics([topic])[topic].result(10)
    deadline = time.monotonic() + 10
    while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.1)
    assert topic not in admin.list_topics(timeout=10).topics


def test_message_too_large_is_refused(make_broker, topic: str) -> None:
    b = make_broker(config={"message.max.bytes": 2000})
    producer = Producer({"bootstrap.servers": b.bootstrap_servers, "message.max.bytes": 100000})
    errors = []
    producer.produce(topic, value=b"x" * 5000, on_delivery=lambda err, m: errors.append(err))
    producer.flush(20)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_restart_keeps_everything(make_broker, topic: str) -> None:
    b = make_broker()
    produce(b.bootstrap_servers, topic, 1000, "zstd", 4)
    b.restart()
    messages = consume_all(b.bootstrap_servers, topic, 4, 1000)
    assert len(messages) == 1000
    # And an unclean stop loses nothing that was acknowledged and flushed by the OS.
    b.kill()
    b.start()
    assert len(consume_all(b.bootstrap_servers, topic, 4, 1000)) == 1000
