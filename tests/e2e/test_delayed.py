"""Delayed operations end to end: a long-polling consumer is answered as soon as a record
arrives, an idle long poll costs the broker no CPU, acks=all goes through the produce
purgatory."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from kafkars.broker import Broker


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
