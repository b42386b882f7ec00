"""`partition.metadata`: every partition directory records its topic's id as Apache Kafka
writes it (`version: 0` / `topic_id: <Uuid.toString>`), and a directory holding another
topic id is never served as the topic: the partition stays offline and the broker serves
the rest."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker


def _kafka_uuid_string(raw: bytes) -> str:
    """Kafka's Uuid.toString (librdkafka prints the standard alphabet instead)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _topic_id(admin: AdminClient, topic: str) -> str:
    description = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    uid = description.topic_id
    msb, lsb = uid.get_most_significant_bits(), uid.get_least_significant_bits()
    return _kafka_uuid_string(((msb % 2**64) << 64 | (lsb % 2**64)).to_bytes(16, "big"))


def test_each_partition_dir_records_the_topic_id(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    topic_id = _topic_id(admin, topic)
    assert len(topic_id) == 22  # Kafka's Uuid.toString: URL-safe base64, unpadded
    for p in range(3):
        text = (broker.log_dir / f"{topic}-{p}" / "partition.metadata").read_text()
        assert text == f"version: 0\ntopic_id: {topic_id}"
    # A restart reads it back and leads the partitions again.
    broker.restart()
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic, b"after restart", partition=1)
    assert producer.flush(30) == 0


def test_a_directory_of_another_topic_id_stays_offline(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    other = f"{topic}-other"
    admin.create_topics([NewTopic(topic, 1, 1), NewTopic(other, 1, 1)])[topic].result(30)
    broker.stop(remove=False)
    # The directory now claims to belong to some other topic of the same name.
    encoded = _kafka_uuid_string(uuid.uuid4().bytes)
    path: Path = broker.log_dir / f"{topic}-0" / "partition.metadata"
    path.write_text(f"version: 0\ntopic_id: {encoded}")
    broker.start()
    assert "topic id" in broker.server_log() and topic in broker.server_log()
    # Its partition is not served; the broker's other topics are.
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 3000})
    failed: list[object] = []
    producer.produce(topic, b"x", on_delivery=lambda err, _m: failed.append(err))
    producer.produce(other, b"y")
    producer.flush(10)
    assert failed and failed[0] is not None
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([other])
    msg = None
    for _ in range(30):
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            break
    consumer.close()
    assert msg is not None and msg.value() == b"y"
    # The file is left as it was found: nothing overwrote the other id.
    assert path.read_text().endswith(encoded)
