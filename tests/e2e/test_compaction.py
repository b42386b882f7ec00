"""Log compaction end to end: last value per key at the original offsets, and a broker
killed at each file stage of a cleaning (KAFKARS_CLEANER_CRASH_AT aborts the process
right after it) restarts with a consistent log that the cleaner then finishes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker

CLEANER = {"log.cleaner.backoff.ms": 100, "log.initial.task.delay.ms": 0}
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "1000",
}
KEYS = 10
UPDATES = 20
DELETED = {0, 1, 2}

Record = tuple[int, str, bytes | None]


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=TOPIC_CONFIG)])[topic].result(10)


def produce_updates(bootstrap: str, topic: str) -> tuple[dict[str, Record], int]:
    """Updates every key many times, deletes some, then writes filler so the updates sit
    in inactive segments. Returns the last record per key and the first filler offset."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    written: list[Record] = []

    def report(err: object, msg: object) -> None:
        assert err is None, err
        written.append((msg.offset(), msg.key().decode(), msg.value()))  # type: ignore[attr-defined]

    for u in range(UPDATES):
        for k in range(KEYS):
            p.produce(topic, key=f"k{k}", value=f"v{k}-{u}".encode(), on_delivery=report)
        p.poll(0)
    for k in DELETED:
        p.produce(topic, key=f"k{k}", value=None, on_delivery=report)
    assert p.flush(10) == 0
    filler_start = max(o for o, _, _ in written) + 1
    for i in range(20):
        p.produce(topic, key="filler", value=b"f" * 100 + str(i).encode())
    assert p.flush(10) == 0
    last: dict[str, Record] = {}
    for rec in sorted(written):
        last[rec[1]] = rec
    return last, filler_start


def consume(bootstrap: str, topic: str) -> list[Record]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{time.time()}",
            "enable.auto.commit": False,
        }
    )
    out: list[Record] = []
    try:
        low, high = c.get_watermark_offsets(CTopicPartition(topic, 0), timeout=10)
        c.assign([CTopicPartition(topic, 0, low)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append((m.offset(), m.key().decode(), m.value()))
            if m.offset() >= high - 1:
                break
    finally:
        c.close()
    return out


def cleaned_to(log_dir: Path, topic: str) -> int:
    path = log_dir / "cleaner-offset-checkpoint"
    if not path.exists():
        return -1
    for line in path.read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == "0":
            return int(parts[2])
    return -1


def wait_cleaned(b: Broker, topic: str, offset: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while cleaned_to(b.log_dir, topic) < offset:
        assert time.monotonic() < deadline, f"not cleaned past {offset}: {b.server_log()}"
        time.sleep(0.05)


def assert_compacted(records: list[Record], last: dict[str, Record]) -> None:
    offsets = [o for o, _, _ in records]
    assert offsets == sorted(set(offsets))
    updates = [r for r in records if r[1] != "filler"]
    # Exactly the last record of every key at its original offset; deleted keys keep
    # only their tombstone (delete.retention.ms has not passed).
    assert sorted(updates) == sorted(last.values())
    for k in DELETED:
        assert last[f"k{k}"][2] is None


def assert_consistent(records: list[Record], last: dict[str, Record]) -> None:
    offsets = [o for o, _, _ in records]
    assert offsets == sorted(set(offsets)), "offsets must increase"
    for rec in last.values():
        assert rec in records, f"lost {rec}"
    for o, k, v in records:
        if k != "filler":
            assert v is None or v.decode().startswith(f"{k[1:] and 'v' + k[1:]}-"), (o, k, v)


def test_compaction_keeps_the_last_value_per_key(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    b = make_broker(config=CLEANER)
    create_topic(b.bootstrap_servers, topic)
    last, filler_start = produce_updates(b.bootstrap_servers, topic)
    wait_cleaned(b, topic, filler_start)
    records = consume(b.bootstrap_servers, topic)
    assert_compacted(records, last)
    assert len(records) < KEYS * UPDATES
    # A restart keeps the compacted log.
    b.restart()
    assert_compacted(consume(b.bootstrap_servers, topic), last)


@pytest.mark.parametrize("stage", ["cleaned", "swap", "deleted"])
def test_crash_during_cleaning_leaves_a_consistent_log(
    make_broker: Callable[..., Broker], topic: str, stage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKARS_CLEANER_CRASH_AT", stage)
    b = make_broker(config=CLEANER)
    create_topic(b.bootstrap_servers, topic)
    last, filler_start = produce_updates(b.bootstrap_servers, topic)
    child = b._child
    assert child is not None
    deadline = time.monotonic() + 20
    while child.poll() is None:
        assert time.monotonic() < deadline, "the cleaner never reached the crash point"
        time.sleep(0.05)
    part = b.log_dir / f"{topic}-0"
    leftovers = {p.suffix for p in part.iterdir()}
    assert {"cleaned": ".cleaned", "swap": ".swap", "deleted": ".swap"}[stage] in leftovers
    b.kill()
    monkeypatch.delenv("KAFKARS_CLEANER_CRASH_AT")
    b.start()
    # Readable straight away: old or cleaned records, never a lost last value.
    assert_consistent(consume(b.bootstrap_servers, topic), last)
    # And the cleaner completes the job.
    wait_cleaned(b, topic, filler_start)
    assert_compacted(consume(b.bootstrap_servers, topic), last)
