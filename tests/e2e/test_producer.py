"""`kafkars._core.Producer`, the Rust client's producer (`kafkars-client`), against a real
broker and checked with librdkafka: keyed rows land in the partitions Kafka's murmur2
partitioner gives them (librdkafka's `murmur2_random`, Java's default), headers and null
keys arrive as sent, and a second producer with the same transactional id fences the
first, whose transaction then never becomes visible."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import Errors, KafkaError
from kafkars.testing.consume import read_to_end

PARTITIONS = 6


def create(broker: Broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def bootstrap(broker: Broker) -> list[tuple[str, int]]:
    host, _, port = broker.bootstrap_servers.partition(",")[0].rpartition(":")
    return [(host, int(port))]


def consume(broker: Broker, topic: str, *, committed: bool = False) -> list[Message]:
    isolation = "read_committed" if committed else "read_uncommitted"
    return read_to_end(broker.bootstrap_servers, topic, PARTITIONS, isolation_level=isolation)


def test_keyed_rows_land_where_murmur2_puts_them(broker: Broker, topic: str) -> None:
    create(broker, topic)
    keys = [f"key-{i}".encode() for i in range(40)]
    expected: dict[bytes, int] = {}
    reference = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "partitioner": "murmur2_random"}
    )
    for k in keys:
        reference.produce(
            topic,
            key=k,
            value=b"",
            on_delivery=lambda _, m: expected.update({m.key(): m.partition()}),
        )
    assert reference.flush(30) == 0
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    batch = pa.RecordBatch.from_pydict(
        {
            "key": keys + [None],
            "value": [b"v-" + k for k in keys] + [b"unkeyed"],
            "headers": [[{"key": "h", "value": k}] for k in keys] + [None],
        },
        schema=pa.schema(
            [("key", pa.binary()), ("value", pa.binary()), ("headers", pa.list_(header))]
        ),
    )
    producer = _core.Producer(bootstrap(broker), compression="lz4")
    assert producer.send(batch, topic) == 41
    assert producer.producer_id_and_epoch[0] >= 0  # idempotent
    ours = [m for m in consume(broker, topic) if m.value() != b""]
    assert len(ours) == 41
    for m in ours:
        if m.key() is None:
            assert m.value() == b"unkeyed"
            continue
        assert m.partition() == expected[m.key()], m.key()
        assert m.value() == b"v-" + m.key()
        assert m.headers() == [("h", m.key())]


def test_a_second_producer_of_a_transactional_id_fences_the_first(
    broker: Broker, topic: str
) -> None:
    create(broker, topic)
    txn_id = f"fence-{uuid.uuid4().hex[:8]}"
    rows = pa.RecordBatch.from_pydict({"value": [b"first"] * 5})
    first = _core.Producer(bootstrap(broker), transactional_id=txn_id)
    first.init_transactions()
    first.begin_transaction()
    assert first.send(rows, topic) == 5
    second = _core.Producer(bootstrap(broker), transactional_id=txn_id)
    second.init_transactions()  # aborts the first's open transaction
    assert second.producer_id_and_epoch[1] > first.producer_id_and_epoch[1]
    with pytest.raises(KafkaError) as fenced:
        first.commit_transaction()
    assert fenced.value.code in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH)
    second.begin_transaction()
    second.send(pa.RecordBatch.from_pydict({"value": [b"second"] * 3}), topic)
    second.commit_transaction()
    assert sorted(m.value() for m in consume(broker, topic, committed=True)) == [b"second"] * 3


def test_null_keyed_rows_stick_to_a_partition_per_batch(broker: Broker, topic: str) -> None:
    """Kafka's sticky partitioner: a batch's null-keyed rows go to one partition, the next
    batch's to another."""
    create(broker, topic)
    producer = _core.Producer(bootstrap(broker))
    for i in range(3):
        producer.send(pa.RecordBatch.from_pydict({"value": [b"%d" % i] * 4}), topic)
    where: dict[bytes, set[int]] = {}
    for m in consume(broker, topic):
        where.setdefault(m.value(), set()).add(m.partition())
    assert all(len(p) == 1 for p in where.values()), where
    assert len(set().union(*where.values())) == 3, where


def test_a_failed_send_starts_a_new_epoch(broker: Broker, topic: str) -> None:
    """A batch the broker refuses (over the topic's max.message.bytes) took sequence
    numbers it never wrote: the next send comes with the next epoch from sequence 0, as
    Kafka's idempotent producer does (KIP-360), instead of OUT_OF_ORDER_SEQUENCE_NUMBER."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    new = NewTopic(topic, 1, 1, config={"max.message.bytes": "2000"})
    admin.create_topics([new])[topic].result(30)
    producer = _core.Producer(bootstrap(broker))
    producer.send(pa.RecordBatch.from_pydict({"value": [b"before"] * 3}), topic)
    producer_id, epoch = producer.producer_id_and_epoch
    with pytest.raises(KafkaError) as refused:
        producer.send(pa.RecordBatch.from_pydict({"value": [b"x" * 5000]}), topic)
    assert refused.value.code == Errors.MESSAGE_TOO_LARGE
    producer.send(pa.RecordBatch.from_pydict({"value": [b"after"] * 2}), topic)
    assert producer.producer_id_and_epoch == (producer_id, epoch + 1)
    values = [m.value() for m in read_to_end(broker.bootstrap_servers, topic, 1)]
    assert values == [b"before"] * 3 + [b"after"] * 2
