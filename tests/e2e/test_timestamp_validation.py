"""`message.timestamp.before.max.ms` / `after.max.ms` are enforced on CreateTime topics:
a batch with a record outside [now - before, now + after] is refused with
INVALID_TIMESTAMP (Kafka's LogValidator), with a record error naming each such record."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from raw_client import RawConnection

from kafkars import _core
from kafkars.broker import Broker

HOUR = 3_600_000


def set_op(name: str, value: str) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)


def now_ms() -> int:
    return int(time.time() * 1000)


def create(broker: Broker, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)


def produce(broker: Broker, topic: str, timestamps: list[int]) -> list[KafkaError | None]:
    results: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "retries": 0})
    for ts in timestamps:
        p.produce(topic, b"v", timestamp=ts, on_delivery=lambda err, _: results.append(err))
        p.flush(10)
    return results


def codes(results: list[KafkaError | None]) -> list[int]:
    return [0 if e is None else e.code() for e in results]


def test_create_time_bounds_are_enforced(broker: Broker, topic: str) -> None:
    create(
        broker,
        topic,
        **{"message.timestamp.before.max.ms": str(HOUR), "message.timestamp.after.max.ms": "60000"},
    )
    now = now_ms()
    results = produce(broker, topic, [now, now - 2 * HOUR, now + 2 * HOUR, now - HOUR // 2])
    assert codes(results) == [0, KafkaError.INVALID_TIMESTAMP, KafkaError.INVALID_TIMESTAMP, 0]


def test_record_errors_name_each_offending_record(broker: Broker, topic: str) -> None:
    create(broker, topic, **{"message.timestamp.before.max.ms": str(HOUR)})
    now = now_ms()
    batch = _core.build_batch(
        [(None, b"a", now, []), (None, b"b", now - 3 * HOUR, []), (None, b"c", now - 1, [])]
    )
    partition = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)
    request = ProduceRequest(
        version=9,
        acks=1,
        timeout_ms=5000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[partition])],
    )
    with RawConnection(broker) as conn:
        [t] = conn.call(request, ProduceResponse, 9).responses
    [p] = t.partition_responses
    assert p.error_code == 32  # INVALID_TIMESTAMP
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"
    assert p.base_offset == -1
    [error] = p.record_errors
    assert error.batch_index == 1
    assert error.batch_index_error_message.startswith(f"Timestamp {now - 3 * HOUR} of message")
    # Nothing of the refused batch was appended.
    assert codes(produce(broker, topic, [now_ms()])) == [0]


def test_log_append_time_topics_take_any_timestamp(broker: Broker, topic: str) -> None:
    create(
        broker,
        topic,
        **{"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "1000"},
    )
    assert codes(produce(broker, topic, [now_ms() - 2 * HOUR])) == [0]


def test_bounds_follow_config_changes(make_broker, topic: str) -> None:
    b = make_broker()
    create(b, topic)
    old = now_ms() - 2 * HOUR
    assert codes(produce(b, topic, [old])) == [0]  # unbounded by default
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    node = str(next(iter(admin.list_topics(timeout=10).brokers)))
    # A dynamic broker config flows into every topic without an override.
    broker_config = ConfigResource(
        ResourceType.BROKER,
        node,
        incremental_configs=[set_op("log.message.timestamp.before.max.ms", str(HOUR))],
    )
    admin.incremental_alter_configs([broker_config])[broker_config].result(10)
    assert codes(produce(b, topic, [old])) == [KafkaError.INVALID_TIMESTAMP]
    # A topic override outranks it, and survives a restart.
    override = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[set_op("message.timestamp.before.max.ms", str(3 * HOUR))],
    )
    admin.incremental_alter_configs([override])[override].result(10)
    assert codes(produce(b, topic, [old])) == [0]
    b.restart()
    assert codes(produce(b, topic, [now_ms() - 4 * HOUR, now_ms() - 2 * HOUR])) == [
        KafkaError.INVALID_TIMESTAMP,
        0,
    ]
