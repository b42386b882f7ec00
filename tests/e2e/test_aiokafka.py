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


def test_admin_client(broker: Broker, topic: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        await admin.start()
        try:
            await admin.create_topics(
                [NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"})]
            )
            assert topic in await admin.list_topics()
            described = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)]
            )
            entries = {e[0]: e[1] for r in described for res in r.resources for e in res[4]}
            assert entries["retention.ms"] == "3600000"
            assert entries["cleanup.policy"] == "delete"
            await admin.create_partitions({topic: NewPartitions(total_count=4)})
            (meta,) = await admin.describe_topics([topic])
            assert len(meta["partitions"]) == 4
            await admin.delete_topics([topic])
            assert topic not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())
