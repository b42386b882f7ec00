"""`log.preallocate` / `preallocate` (Kafka's semantics): a new segment's `.log` is
`segment.bytes` long while it is active, trimmed to its data on roll and clean shutdown,
and after a SIGKILL the broker cuts the zero tail off and serves every acknowledged
record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker

SEGMENT_BYTES = 1 << 20


def create_topic(bootstrap: str, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)


def produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, value=f"v{i:06d}".encode() * 20)
    assert p.flush(30) == 0


def consume(bootstrap: str, topic: str, n: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([CTopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:
        while len(got) < n:
            msgs = c.consume(1000, timeout=10)
            assert msgs, f"only {len(got)} of {n} records came back"
            for m in msgs:
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        c.close()
    return got


def values(start: int, n: int) -> list[bytes]:
    return [f"v{i:06d}".encode() * 20 for i in range(start, start + n)]


def log_sizes(part: Path) -> list[int]:
    return [p.stat().st_size for p in sorted(part.glob("*.log"))]


def test_preallocated_segments_survive_sigkill_and_are_trimmed(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker(config={"log.preallocate": True})
    create_topic(b.bootstrap_servers, topic, **{"segment.bytes": str(SEGMENT_BYTES)})
    plain = f"{topic}-plain"
    create_topic(
        b.bootstrap_servers, plain, **{"segment.bytes": str(SEGMENT_BYTES), "preallocate": "false"}
    )
    part = b.log_dir / f"{topic}-0"

    # 12,000 records of 140 bytes: the first segment rolls, the second is active.
    produce(b.bootstrap_servers, topic, 0, 12000)
    produce(b.bootstrap_servers, plain, 0, 100)
    sizes = log_sizes(part)
    # Two segments as a rule; a loaded machine once gave three (see the stop-27 notes).
    assert len(sizes) >= 2
    assert all(s < SEGMENT_BYTES for s in sizes[:-1]), "rolled segments are trimmed to their data"
    assert sizes[-1] == SEGMENT_BYTES, "the active segment is preallocated"
    (plain_size,) = log_sizes(b.log_dir / f"{plain}-0")
    assert plain_size < 100 * 200, "preallocate=false on the topic overrides the broker"

    b.kill()
    b.start()
    assert log_sizes(part)[-1] < SEGMENT_BYTES, "recovery cut the zero tail off"
    assert consume(b.bootstrap_servers, topic, 12000) == values(0, 12000)

    # Appends go on after the recovered data; a clean stop trims the active segment.
    produce(b.bootstrap_servers, topic, 12000, 500)
    b.stop(remove=False)
    sizes = log_sizes(part)
    assert all(s < SEGMENT_BYTES for s in sizes)
    b.start()
    assert consume(b.bootstrap_servers, topic, 12500) == values(0, 12500)
