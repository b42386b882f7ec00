"""Delayed operations end to end: a long-polling consumer is answered as soon as a record
arrives, an idle long poll costs the broker no CPU, acks=all goes through the produce
purgatory, and a broker shutting down answers what still waits."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import ApiKey


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def long_poll_consumer(bootstrap: str, topic: str) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "fetch.wait.max.ms": 5000,
            "fetch.min.bytes": 1,
            "enable.auto.commit": False,
        }
    )
    c.assign([CTopicPartition(topic, 0, 0)])
    return c


def test_long_poll_is_answered_when_the_record_arrives(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker()
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all"})
    p.produce(topic, b"warm-up", partition=0)
    assert p.flush(10) == 0
    c = long_poll_consumer(b.bootstrap_servers, topic)
    try:
        m = c.poll(10)
        assert m is not None and m.value() == b"warm-up"
        # Let the consumer settle into a long poll at the log end, then produce 1 s later.
        started = time.monotonic()
        produced_at: list[float] = []

        def produce_later() -> None:
            time.sleep(1.0)
            produced_at.append(time.monotonic())
            p.produce(topic, b"late", partition=0)
            p.flush(10)

        t = threading.Thread(target=produce_later)
        t.start()
        got = None
        while got is None and time.monotonic() - started < 8:
            m = c.poll(0.1)
            if m is not None and not m.error():
                got = m
        received = time.monotonic()
        t.join()
        assert got is not None and got.value() == b"late"
        # Answered about when the record arrived (~1 s), not after fetch.wait.max.ms (5 s).
        assert received - started < 3.5, received - started
        assert received - produced_at[0] < 2.0
    finally:
        c.close()


def test_idle_long_poll_costs_no_cpu(make_broker: Callable[..., Broker], topic: str) -> None:
    b = make_broker()
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    p.produce(topic, b"x", partition=0)
    assert p.flush(10) == 0
    c = long_poll_consumer(b.bootstrap_servers, topic)
    try:
        assert c.poll(10) is not None
        c.poll(0.5)
        assert b._child is not None
        pid = b._child.pid
        before = cpu_seconds(pid)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            c.poll(0.2)
        used = cpu_seconds(pid) - before
        # Scheduler threads sleep until their next task; waiting fetches sit on the timer.
        assert used < 0.3, f"broker used {used:.2f} s of CPU in 2 s idle"
    finally:
        c.close()


def test_acks_all_completes_through_the_purgatory(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker()
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "linger.ms": 0})
    delivered: list[int] = []
    started = time.monotonic()
    for i in range(20):
        p.produce(
            topic,
            f"v{i}".encode(),
            partition=0,
            on_delivery=lambda e, m: delivered.append(m.offset()) if e is None else None,
        )
    assert p.flush(10) == 0
    assert time.monotonic() - started < 5
    assert sorted(delivered) == list(range(20))


def test_acks_all_min_insync_replicas_is_capped_at_the_replica_count(
    broker: Broker, topic: str
) -> None:
    """One broker is an ISR of one: a topic of one replica asking for two in-sync replicas
    takes acks=all anyway, as Kafka (3.9 and 4.1) does: its effective min ISR is
    min(min.insync.replicas, replica count). acks=1 too, and so after lowering
    min.insync.replicas."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    new = NewTopic(topic, 1, 1, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(10)

    def produce(acks: str) -> KafkaError | None:
        errors: list[KafkaError | None] = []
        p = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "acks": acks,
                # The error is retriable: without retries it reaches the callback as is.
                "retries": 0,
            }
        )
        p.produce(topic, b"v", partition=0, on_delivery=lambda e, m: errors.append(e))
        p.flush(15)
        return errors[0]

    assert produce("all") is None
    assert produce("1") is None
    entry = ConfigEntry("min.insync.replicas", "1", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(10)
    assert produce("all") is None


def test_a_stopping_broker_answers_a_waiting_long_poll(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    """A fetch parked in the purgatory gets its answer (what there is: nothing) when the
    broker shuts down gracefully, not after its max_wait_ms nor by a dropped connection."""
    b = make_broker()
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    del admin  # its reconnect attempts once the broker stops would only add noise
    host, port = b.bootstrap_servers.rsplit(":", 1)
    partition = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": 0,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    request = {
        "replica_id": -1,
        "max_wait_ms": 120_000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [partition]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    answers: list[object] = []
    conn = _core.BrokerConnection(host, int(port), timeout_s=180)

    def long_poll() -> None:
        try:
            answers.append(conn.call(ApiKey.FETCH, 12, request))
        except Exception as e:  # the connection dropped instead
            answers.append(e)

    poller = threading.Thread(target=long_poll)
    poller.start()
    poller.join(2)
    assert poller.is_alive(), f"the fetch was answered before the shutdown: {answers}"
    stopping = time.monotonic()
    b.stop(remove=False)
    poller.join(30)
    conn.close()
    answered_s = time.monotonic() - stopping
    assert not poller.is_alive() and answered_s < 15, answered_s
    (answer,) = answers
    assert isinstance(answer, dict), answer
    (partition_answer,) = answer["responses"][0]["partitions"]
    assert answer["error_code"] == 0 and partition_answer["error_code"] == 0, answer
    assert not partition_answer["records"]
