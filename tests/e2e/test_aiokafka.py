"""aiokafka (asyncio client) against a real broker process."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from kafkars.broker import Broker


def test_produce_and_consume(broker: Broker, topic: str) -> None:
    async def run() -> list:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, compression_type="lz4"
        )
        await producer.start()
        try:
            for i in range(300):
                await producer.send(topic, value=f"m{i}".encode(), key=b"k", partition=0)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False
        )
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            out: list = []
            while len(out) < 300:
                batch = await consumer.getmany(tp, timeout_ms=2000)
                if not batch:
                    break
                out.extend(batch[tp])
            return out
        finally:
            await consumer.stop()

    records = asyncio.run(run())
    assert [r.value for r in records] == [f"m{i}".encode() for i in range(300)]
    assert [r.offset for r in records] == list(range(300))
