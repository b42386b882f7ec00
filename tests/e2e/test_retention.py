"""Retention (cleanup.policy=delete), the scheduler's log tasks and DeleteRecords, against
a broker process with small segments and short intervals."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition

from kafkars.broker import Broker

FAST_TASKS = {
    "log.initial.task.delay.ms": 0,
    "log.retention.check.interval.ms": 200,
    "log.segment.delete.delay.ms": 400,
    "log.flush.start.offset.checkpoint.interval.ms": 200,
    "log.flush.offset.checkpoint.interval.ms": 200,
}


def create_topic(bootstrap: str, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, 1, 1, config=configs)])
    fs[topic].result(10)


def produce(bootstrap: str, topic: str, n: int, size: int = 100) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(n):
        p.produce(topic, key=f"k{i}".encode(), value=b"x" * size)
        p.poll(0)
    assert p.flush(10) == 0


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    try:
        low, high = c.get_watermark_offsets(CTopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        c.close()


def files(d: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(suffix)) if d.exists() else []


def wait_for(cond: Callable[[], object], timeout: float = 10.0, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(step)


def test_time_retention_renames_then_deletes_and_survives_restart(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker(config=FAST_TASKS)
    create_topic(b.bootstrap_servers, topic, **{"segment.bytes": "1024", "retention.ms": "1500"})
    produce(b.bootstrap_servers, topic, 50)
    part = b.log_dir / f"{topic}-0"
    assert len(files(part, ".log")) > 3
    assert watermarks(b.bootstrap_servers, topic) == (0, 50)
    # Once the records are older than retention.ms every segment goes, the active one
    # after a roll: first renamed .deleted, then removed after file.delete.delay.ms.
    wait_for(lambda: files(part, ".deleted"))
    wait_for(lambda: watermarks(b.bootstrap_servers, topic) == (50, 50))
    wait_for(lambda: not files(part, ".deleted"))
    assert files(part, ".log") == ["00000000000000000050.log"]
    # The log start offset is checkpointed and kept across a restart, clean or not.
    wait_for(lambda: f"{topic} 0 50" in (b.log_dir / "log-start-offset-checkpoint").read_text())
    b.kill()
    b.start()
    assert watermarks(b.bootstrap_servers, topic) == (50, 50)
    b.restart()
    assert watermarks(b.bootstrap_servers, topic) == (50, 50)


def test_size_retention_keeps_the_newest_segments(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker(config=FAST_TASKS)
    create_topic(b.bootstrap_servers, topic, **{"segment.bytes": "1024", "retention.bytes": "2048"})
    produce(b.bootstrap_servers, topic, 60)
    part = b.log_dir / f"{topic}-0"

    def size() -> int:
        return sum((part / n).stat().st_size for n in files(part, ".log"))

    wait_for(lambda: watermarks(b.bootstrap_servers, topic)[0] > 0 and size() <= 2048 + 1024)
    low, high = watermarks(b.bootstrap_servers, topic)
    assert high == 60 and 0 < low < 60


def test_delete_records_from_both_admin_clients(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker(config=FAST_TASKS)
    create_topic(b.bootstrap_servers, topic, **{"segment.bytes": "1024"})
    produce(b.bootstrap_servers, topic, 40)

    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    futures = admin.delete_records([CTopicPartition(topic, 0, 10)])
    result = futures[CTopicPartition(topic, 0)].result(10)
    assert result.low_watermark == 10
    assert watermarks(b.bootstrap_servers, topic) == (10, 40)

    kadmin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
    try:
        out = kadmin.delete_records({KTopicPartition(topic, 0): 25})
        (meta,) = out.values()
        low = meta["low_watermark"] if isinstance(meta, dict) else meta.low_watermark
        assert low == 25
        # Past the high watermark: OFFSET_OUT_OF_RANGE.
        try:
            kadmin.delete_records({KTopicPartition(topic, 0): 1000})
            raise AssertionError("expected an error")
        except Exception as e:
            assert (
                "OffsetOutOfRange" in type(e).__name__
                or "OFFSET_OUT_OF_RANGE" in str(e)
                or "Out" in repr(e)
            )
    finally:
        kadmin.close()
    assert watermarks(b.bootstrap_servers, topic) == (25, 40)

    # A consumer positioned below the start gets OFFSET_OUT_OF_RANGE and resets to it.
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        c.assign([CTopicPartition(topic, 0, 3)])
        offsets: list[int] = []
        deadline = time.monotonic() + 10
        while len(offsets) < 15 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                offsets.append(m.offset())
        assert offsets == list(range(25, 40))
    finally:
        c.close()
    # The retention task removes the segments wholly below the new start.
    part = b.log_dir / f"{topic}-0"
    wait_for(lambda: min(int(n[:20]) for n in files(part, ".log")) > 0)
    assert watermarks(b.bootstrap_servers, topic) == (25, 40)
