"""consume-transform-produce with send_offsets_to_transaction, and zombie fencing, with
kafka-python and aiokafka (confluent-kafka's are in test_transactions.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from test_transactions import create_topic, read_values

from kafkars.broker import Broker


def fill(broker: Broker, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(n):
        p.produce(topic, value=str(i).encode(), partition=0)
    p.flush(10)


def test_kafka_python_consume_transform_produce(broker: Broker, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

    source, sink, group = topic, f"{topic}-out", f"kp-{topic}"
    create_topic(broker, source)
    create_topic(broker, sink)
    fill(broker, source, 6)
    tp = TopicPartition(source, 0)

    def step(count: int, commit: bool) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        consumer.assign([tp])
        records = []
        while len(records) < count:
            records += consumer.poll(timeout_ms=1000, max_records=count - len(records)).get(tp, [])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=group)
        producer.init_transactions()
        producer.begin_transaction()
        for r in records:
            producer.send(sink, b"y" + r.value, partition=0)
        offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1)}
        producer.send_offsets_to_transaction(offsets, group)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
        producer.close()
        consumer.close()

    step(2, commit=True)
    step(3, commit=False)
    step(4, commit=True)
    assert read_values(broker, sink, "read_committed", 6) == [
        b"y" + str(i).encode() for i in range(6)
    ]


def test_kafka_python_zombie_is_fenced(broker: Broker, topic: str) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    create_topic(broker, topic)
    txn_id = f"kpz-{topic}"
    zombie = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=txn_id)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, b"zombie", partition=0).get(10)
    fresh = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=txn_id)
    fresh.init_transactions()
    fresh.begin_transaction()
    fresh.send(topic, b"fresh", partition=0)
    fresh.commit_transaction()
    with pytest.raises(KafkaError):
        zombie.commit_transaction()
    fresh.close()
    zombie.close(timeout=1)
    assert read_values(broker, topic, "read_committed", 1) == [b"fresh"]


def test_aiokafka_consume_transform_produce_and_fencing(broker: Broker, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.errors import KafkaError

    source, sink, group = topic, f"{topic}-out", f"aio-{topic}"
    create_topic(broker, source)
    create_topic(broker, sink)
    fill(broker, source, 5)
    tp = TopicPartition(source, 0)

    async def run() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        await consumer.start()
        consumer.assign([tp])
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, transactional_id=group
        )
        await producer.start()

        async def take(n: int) -> list[Any]:
            got: list[Any] = []
            while len(got) < n:
                batch = await consumer.getmany(tp, timeout_ms=1000, max_records=n - len(got))
                got += batch.get(tp, [])
            return got

        try:
            for count, commit in ((2, True), (3, False), (3, True)):
                records = await take(count)
                await producer.begin_transaction()
                for r in records:
                    await producer.send(sink, b"z" + r.value, partition=0)
                offsets = {tp: records[-1].offset + 1}
                await producer.send_offsets_to_transaction(offsets, group)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
                    consumer.seek(tp, records[0].offset)  # reprocess what was aborted
            assert (await consumer.committed(tp)) == 5

            # A second producer with the same id fences the first.
            zombie_txn = f"{group}-z-{uuid.uuid4().hex[:4]}"
            zombie = AIOKafkaProducer(
                bootstrap_servers=broker.bootstrap_servers, transactional_id=zombie_txn
            )
            await zombie.start()
            await zombie.begin_transaction()
            await zombie.send_and_wait(sink, b"zombie", partition=0)
            fresh = AIOKafkaProducer(
                bootstrap_servers=broker.bootstrap_servers, transactional_id=zombie_txn
            )
            await fresh.start()
            await fresh.stop()
            with pytest.raises(KafkaError):
                await zombie.commit_transaction()
            await zombie.stop()
        finally:
            await producer.stop()
            await consumer.stop()

    asyncio.run(run())
    out = read_values(broker, sink, "read_committed", 5)
    assert out == [b"z" + str(i).encode() for i in range(5)]
