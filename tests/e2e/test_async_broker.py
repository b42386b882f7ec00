"""`async with kafkars.Broker()` in an asyncio test suite, with aiokafka as the client."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

import kafkars


async def round_trip(process: bool) -> list[bytes]:
    async with kafkars.Broker(process=process) as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("async-topic", f"m{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "async-topic", bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            got = []
            while len(got) < 3:
                batch = await consumer.getmany(timeout_ms=10_000)
                assert batch, "no records within 10 s"
                got += [r.value for records in batch.values() for r in records]
            return got
        finally:
            await consumer.stop()


def test_async_with_embedded_broker() -> None:
    assert asyncio.run(round_trip(process=False)) == [b"m0", b"m1", b"m2"]


def test_async_with_broker_process() -> None:
    assert asyncio.run(round_trip(process=True)) == [b"m0", b"m1", b"m2"]
