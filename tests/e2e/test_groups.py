"""Consumer groups end to end: real clients against a real broker process."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200}


def group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def create_topic(b: Broker, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def produce(b: Broker, topic: str, count: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    for i in range(count):
        p.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    p.flush(10)


def consumer(b: Broker, group_id: str, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "group.id": group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **FAST,
            **extra,
        }
    )


def poll_until(consumers: list[Consumer], done: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            c.poll(0.05)


def sizes(consumers: list[Consumer]) -> list[int]:
    return sorted(len(c.assignment()) for c in consumers)


def test_three_consumers_share_six_partitions_then_two(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, 6)
    g = group()
    cs = [consumer(broker, g) for _ in range(3)]
    for c in cs:
        c.subscribe([topic])
    poll_until(cs, lambda: sizes(cs) == [2, 2, 2], 20)
    owned = [tp for c in cs for tp in c.assignment()]
    assert sorted((tp.topic, tp.partition) for tp in owned) == [(topic, p) for p in range(6)]
    # A consumer that dies without leaving: the others take over after its session times out.
    stopped = cs.pop()
    started = time.monotonic()
    threading.Thread(target=stopped.close, daemon=True).start()
    poll_until(cs, lambda: sizes(cs) == [3, 3], 15)
    assert time.monotonic() - started < 6 + 5
    for c in cs:
        c.close()


def test_cooperative_sticky_keeps_untouched_partitions(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, 6)
    g = group()
    revoked: list[list[int]] = []
    extra = {"partition.assignment.strategy": "cooperative-sticky"}
    first = consumer(broker, g, **extra)
    first.subscribe(
        [topic], on_revoke=lambda c, parts: revoked.append([p.partition for p in parts])
    )
    poll_until([first], lambda: len(first.assignment()) == 6, 15)
    before = {tp.partition for tp in first.assignment()}
    second = consumer(broker, g, **extra)
    second.subscribe([topic])
    poll_until([first, second], lambda: sizes([first, second]) == [3, 3], 20)
    kept = {tp.partition for tp in first.assignment()}
    assert kept < before
    # Incremental: only the partitions that moved were ever revoked from the first member.
    assert all(set(r) <= before - kept for r in revoked)
    first.close()
    second.close()


def test_committed_offsets_round_trip_metadata(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, 2)
    g = group()
    c = consumer(broker, g)
    tps = [TopicPartition(topic, 0, 7, metadata="hello"), TopicPartition(topic, 1, 3)]
    c.commit(offsets=tps, asynchronous=False)  # a simple commit: no subscription
    got = {
        tp.partition: tp
        for tp in c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], 10)
    }
    assert got[0].offset == 7 and got[0].metadata == "hello"
    assert got[1].offset == 3
    unknown = consumer(broker, group()).committed([TopicPartition(topic, 0)], 10)
    assert unknown[0].offset < 0 and unknown[0].error is None
    c.close()


def test_offsets_survive_restart(make_broker: Callable[..., Broker], topic: str) -> None:
    b = make_broker()
    create_topic(b, topic, 3)
    produce(b, topic, 30, 3)
    g = group()
    c = consumer(b, g)
    c.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(seen) < 12:
        assert time.monotonic() < deadline
        m = c.poll(0.1)
        if m is not None and not m.error():
            seen.append(m.value())
            c.commit(message=m, asynchronous=False)
    c.close()
    b.restart()
    c = consumer(b, g)
    c.subscribe([topic])
    deadline = time.monotonic() + 20
    while len(seen) < 30:
        assert time.monotonic() < deadline
        m = c.poll(0.1)
        if m is not None and not m.error():
            seen.append(m.value())
    c.close()
    # Every record once: commits were per record, so nothing is read twice.
    assert sorted(seen) == sorted(f"v{i}".encode() for i in range(30))


def test_kafka_python_range_and_roundrobin(broker: Broker, topic: str) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    create_topic(broker, topic, 4)
    for assignor in (RangePartitionAssignor, RoundRobinPartitionAssignor):
        g = group()
        cs = [
            KafkaConsumer(
                topic,
                bootstrap_servers=broker.bootstrap_servers,
                group_id=g,
                partition_assignment_strategy=[assignor],
                session_timeout_ms=6000,
                heartbeat_interval_ms=200,
                auto_offset_reset="earliest",
            )
            for _ in range(2)
        ]
        deadline = time.monotonic() + 30
        while sorted(len(c.assignment()) for c in cs) != [2, 2]:
            assert time.monotonic() < deadline, [c.assignment() for c in cs]
            for c in cs:
                c.poll(timeout_ms=50)
        for c in cs:
            c.close()


def test_aiokafka_group_consumer(broker: Broker, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer

    create_topic(broker, topic, 2)
    produce(broker, topic, 10, 2)
    g = group()

    async def run() -> int:
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap_servers,
            group_id=g,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=200,
        )
        await c.start()
        got = 0
        try:
            while got < 10:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=200), 20)
                got += sum(len(v) for v in batch.values())
            await c.commit()
            committed = await c.committed(next(iter(c.assignment())))
            assert committed is not None and committed > 0
        finally:
            await c.stop()
        return got

    assert asyncio.run(run()) == 10


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_group_consumes_then_has_nothing_left(broker: Broker, topic: str) -> None:
    B, G = broker.bootstrap_servers, group()
    subprocess.run(
        ["kcat", "-b", B, "-P", "-t", topic, "-p", "0"], input=b"a\nb\nc\n", check=True, timeout=30
    )
    first = subprocess.run(
        ["timeout", "30", "kcat", "-b", B, "-G", G, "-X", "auto.offset.reset=earliest",
         "-c", "3", "-q", "-f", "%p %o %s\n", topic],
        capture_output=True, timeout=40,
    )  # fmt: skip
    assert first.stdout.decode().splitlines() == ["0 0 a", "0 1 b", "0 2 c"]
    second = subprocess.run(
        ["timeout", "20", "kcat", "-b", B, "-G", G, "-e", "-q", topic],
        capture_output=True, timeout=30,
    )  # fmt: skip
    assert second.stdout == b""


def test_consumer_groups_cli(broker: Broker, topic: str) -> None:
    from click.testing import CliRunner

    from kafkars.tools.consumer_groups import main

    create_topic(broker, topic, 2)
    produce(broker, topic, 10, 2)
    g = group()
    c = consumer(broker, g)
    c.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 5)], asynchronous=False)
    c.close()
    run = CliRunner().invoke
    b = ["-b", broker.bootstrap_servers]
    listed = run(main, [*b, "--list"])
    assert listed.exit_code == 0 and g in listed.output.split()
    described = run(main, [*b, "--describe", "--group", g])
    assert described.exit_code == 0, described.output
    rows = [line.split() for line in described.output.splitlines() if line.startswith(g)]
    assert [r[2:6] for r in rows] == [["0", "2", "5", "3"], ["1", "5", "5", "0"]]
    reset = [*b, "--reset-offsets", "--group", g, "--topic", topic, "--to-earliest", "--execute"]
    assert run(main, reset).exit_code == 0
    check = consumer(broker, g)
    committed = check.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], 10)
    check.close()
    assert [tp.offset for tp in committed] == [0, 0]
    deleted = run(main, [*b, "--delete", "--group", g])
    assert deleted.exit_code == 0, deleted.output
    assert g not in run(main, [*b, "--list"]).output.split()
