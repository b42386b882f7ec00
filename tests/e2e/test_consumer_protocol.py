"""KIP-848 consumer groups (`group.protocol=consumer`) with confluent-kafka against a real
broker process: server-side assignment, reconciliation, commits, restart."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker

# Short heartbeats and sessions so a test sees rebalances in about a second.
CONFIG = {
    "group.consumer.heartbeat.interval.ms": 300,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.session.timeout.ms": 1000,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(process=True, config=CONFIG) as b:
        yield b


def create_topic(b: Broker, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def produce(b: Broker, topic: str, count: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    for i in range(count):
        p.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert p.flush(10) == 0


def new_group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def consumer(b: Broker, group_id: str, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "group.id": group_id,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )


def poll_until(consumers: list[Consumer], done: Callable[[], bool], timeout: float = 30) -> float:
    start = time.monotonic()
    # Short polls each: many consumers in one thread must each be served often.
    wait = 0.05 if len(consumers) < 10 else 0
    while not done():
        assert time.monotonic() - start < timeout, "timed out"
        for c in consumers:
            c.poll(wait)
        if not wait:
            time.sleep(0.02)
    return time.monotonic() - start


def commit(c: Consumer, m: Any) -> None:
    """A synchronous commit, retried while the member's epoch is moving: the broker
    answers STALE_MEMBER_EPOCH to a commit sent just before the member learnt its new
    epoch, as Kafka does, and the client retries with the new one."""
    for _ in range(50):
        try:
            c.commit(message=m, asynchronous=False)
            return
        except KafkaException as e:
            if e.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                raise
            time.sleep(0.1)
    raise AssertionError("the member epoch stayed stale")


def partitions(c: Consumer) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


def test_three_members_then_two(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, 6)
    g = new_group()
    cs = [consumer(broker, g) for _ in range(3)]
    for c in cs:
        c.subscribe([topic])
    poll_until(cs, lambda: [len(c.assignment()) for c in cs] == [2, 2, 2])
    assert sorted(p for c in cs for p in partitions(c)) == list(range(6))
    cs[2].close()
    # A clean leave: the other two take over at once, well within the session timeout.
    took = poll_until(cs[:2], lambda: [len(c.assignment()) for c in cs[:2]] == [3, 3], 5)
    assert sorted(p for c in cs[:2] for p in partitions(c)) == list(range(6))
    print(f"rebalance after a leave: {took:.2f} s")
    for c in cs[:2]:
        c.close()


def test_range_assignor_and_describe(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, 4)
    g = new_group()
    cs = [consumer(broker, g, **{"group.remote.assignor": "range"}) for _ in range(2)]
    for c in cs:
        c.subscribe([topic])
    poll_until(cs, lambda: [len(c.assignment()) for c in cs] == [2, 2])
    # Range gives each member a contiguous block.
    assert sorted(partitions(c) for c in cs) == [[0, 1], [2, 3]]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    listed = admin.list_consumer_groups().result(10)
    mine = [x for x in listed.valid if x.group_id == g]
    assert len(mine) == 1 and getattr(mine[0].type, "name", "") == "CONSUMER"
    for c in cs:
        c.close()


def test_every_record_once_with_commits_and_restart(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker(config=CONFIG)
    create_topic(b, topic, 4)
    produce(b, topic, 400, 4)
    g = new_group()
    seen: list[tuple[int, int]] = []

    def consume(cs: list[Consumer], until: int) -> None:
        deadline = time.monotonic() + 60
        while len(seen) < until:
            assert time.monotonic() < deadline, f"only {len(seen)} of {until} records"
            for c in cs:
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    seen.append((m.partition(), m.offset()))
                    commit(c, m)

    first = [consumer(b, g) for _ in range(2)]
    for c in first:
        c.subscribe([topic])
    consume(first, 200)
    for c in first:
        c.close()

    b.restart()
    produce(b, topic, 100, 4)
    second = [consumer(b, g) for _ in range(2)]
    for c in second:
        c.subscribe([topic])
    consume(second, 500)
    time.sleep(1)  # nothing beyond the 500 records may still come
    for c in second:
        assert c.poll(0.2) is None
    committed = second[0].committed([TopicPartition(topic, p) for p in range(4)], 10)
    for c in second:
        c.close()
    # Every record exactly once: commits were synchronous, so nothing is replayed.
    assert len(seen) == len(set(seen)) == 500
    assert sum(tp.offset for tp in committed) == 500


def test_fifty_members_join(broker: Broker, topic: str) -> None:
    """A measurement, not a timed assertion: 50 members on 100 partitions, until each
    owns two."""
    create_topic(broker, topic, 100)
    g = new_group()
    cs = [consumer(broker, g) for _ in range(50)]
    start = time.monotonic()
    for c in cs:
        c.subscribe([topic])
    took = poll_until(cs, lambda: all(len(c.assignment()) == 2 for c in cs), 90)
    assert len({(tp.partition) for c in cs for tp in c.assignment()}) == 100
    print(f"50 members joined and reconciled in {time.monotonic() - start:.2f} s ({took:.2f})")
    for c in cs:
        c.close()


def test_describe_static_member_and_classic_member(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, 4)
    g = new_group()
    a = consumer(broker, g, **{"group.instance.id": "a", "client.id": "ca"})
    b = consumer(broker, g, **{"group.instance.id": "b"})
    for c in (a, b):
        c.subscribe([topic])
    poll_until([a, b], lambda: [len(c.assignment()) for c in (a, b)] == [2, 2])
    before = partitions(a)

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    described = admin.describe_consumer_groups([g])[g].result(10)
    assert getattr(described.type, "name", "") == "CONSUMER"
    assert described.state.name == "STABLE"
    assert sorted(m.group_instance_id for m in described.members) == ["a", "b"]
    assert {m.client_id for m in described.members} >= {"ca"}
    assert sum(len(m.assignment.topic_partitions) for m in described.members) == 4

    # A classic member joins the live consumer-protocol group (as in Kafka 4, whose
    # groups take classic members) and gets its share of the partitions.
    classic = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": g})
    classic.subscribe([topic])
    poll_until(
        [a, b, classic],
        lambda: (
            len(classic.assignment()) >= 1
            and sum(len(c.assignment()) for c in (a, b, classic)) == 4
        ),
    )
    assert getattr(admin.describe_consumer_groups([g])[g].result(10).type, "name", "") == (
        "CONSUMER"
    )
    classic.close()
    poll_until([a, b], lambda: [len(c.assignment()) for c in (a, b)] == [2, 2])
    before = partitions(a)

    # A static member that restarts gets its partitions back; the other keeps its own.
    a.close()
    a = consumer(broker, g, **{"group.instance.id": "a"})
    a.subscribe([topic])
    poll_until([a, b], lambda: len(a.assignment()) == 2)
    assert partitions(a) == before and len(b.assignment()) == 2
    for c in (a, b):
        c.close()


def test_group_state_survives_a_broker_restart(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    """The consumer group records in __consumer_offsets bring the members back: after a
    restart they carry on with their member ids instead of rejoining."""
    with socket.socket() as s:  # a fixed port, so the clients find the restarted broker
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # A session long enough to outlast the restart and the clients' reconnect backoff.
    b = make_broker(config={**CONFIG, "group.consumer.session.timeout.ms": 30000}, port=port)
    create_topic(b, topic, 4)
    g = new_group()
    cs = [consumer(b, g, **{"reconnect.backoff.max.ms": 500}) for _ in range(2)]
    for c in cs:
        c.subscribe([topic])
    poll_until(cs, lambda: [len(c.assignment()) for c in cs] == [2, 2])
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    before = admin.describe_consumer_groups([g])[g].result(10)
    b.restart()
    after = None
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        for c in cs:
            c.poll(0.05)
        try:
            # A fresh client each time: one whose connection died with the broker may
            # sit out its reconnect backoff.
            fresh = AdminClient({"bootstrap.servers": b.bootstrap_servers})
            after = fresh.describe_consumer_groups([g])[g].result(5)
        except Exception:
            continue
        if after.state.name == "STABLE" and [len(c.assignment()) for c in cs] == [2, 2]:
            break
    server_log = (b.log_dir / ".kafkars-server.log").read_text()
    assert after is not None
    assert sorted(m.member_id for m in after.members) == sorted(m.member_id for m in before.members)
    assert [len(c.assignment()) for c in cs] == [2, 2]
    # Loaded, not rejoined (librdkafka keeps its member id when it rejoins, so the ids
    # alone would not tell).
    server_log = (b.log_dir / ".kafkars-server.log").read_text()
    after_restart = server_log[server_log.rindex("Loaded 1 consumer group") :]
    assert "joined consumer group" not in after_restart, after_restart
    for c in cs:
        c.close()
