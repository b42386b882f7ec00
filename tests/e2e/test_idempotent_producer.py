"""Idempotent producers: retries are not written twice, gaps and fenced epochs are
refused, and the producer state survives a restart (snapshots plus log replay)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from raw_client import CodecConnection

from kafkars import _core
from kafkars.broker import Broker

PRODUCE, INIT_PRODUCER_ID = 0, 22


class Connection(CodecConnection):
    def produce(self, topic: str, batch: bytes) -> tuple[int, int]:
        body = {
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        part = self.call(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]
        return part["error_code"], part["base_offset"]


def idempotent_batch(pid: int, epoch: int, sequence: int, n: int) -> bytes:
    records = [(None, f"v{sequence + i}".encode(), 1_000 + i, []) for i in range(n)]
    return _core.build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)


def log_end_offset(broker: Broker, topic: str) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "leo"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        c.close()


def create_topic(broker: Broker, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def test_retries_gaps_and_epochs(broker: Broker, topic: str) -> None:
    create_topic(broker, topic)
    conn = Connection(broker)
    try:
        init = conn.call(
            INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": -1}
        )
        assert init["error_code"] == 0
        pid, epoch = init["producer_id"], init["producer_epoch"]
        first = idempotent_batch(pid, epoch, 0, 3)
        assert conn.produce(topic, first) == (0, 0)
        assert conn.produce(topic, idempotent_batch(pid, epoch, 3, 2)) == (0, 3)
        # The same batches again (a retry after a lost response): their original
        # offsets, nothing written.
        assert conn.produce(topic, first) == (0, 0)
        assert conn.produce(topic, idempotent_batch(pid, epoch, 3, 2)) == (0, 3)
        assert log_end_offset(broker, topic) == 5
        # A gap in the sequence: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
        assert conn.produce(topic, idempotent_batch(pid, epoch, 9, 1))[0] == 45
        # A new epoch starts at 0; then the old epoch is fenced: INVALID_PRODUCER_EPOCH (47).
        assert conn.produce(topic, idempotent_batch(pid, epoch + 1, 0, 1)) == (0, 5)
        assert conn.produce(topic, idempotent_batch(pid, epoch, 5, 1))[0] == 47
        assert log_end_offset(broker, topic) == 6
    finally:
        conn.close()


def test_state_survives_restarts(
    make_broker: Callable[..., Broker], tmp_path: Path, topic: str
) -> None:
    data = tmp_path / "data"
    broker = make_broker(log_dir=data)
    create_topic(broker, topic)
    conn = Connection(broker)
    batches = [idempotent_batch(4242, 0, i * 2, 2) for i in range(4)]
    for i, batch in enumerate(batches):
        assert conn.produce(topic, batch) == (0, i * 2)
    conn.close()
    broker.stop(remove=False)
    broker = make_broker(log_dir=data)
    conn = Connection(broker)
    try:
        # The last batch's retry is recognised after a restart; the next one follows it.
        assert conn.produce(topic, batches[-1]) == (0, 6)
        assert conn.produce(topic, idempotent_batch(4242, 0, 8, 1)) == (0, 8)
        assert conn.produce(topic, idempotent_batch(4242, 0, 20, 1))[0] == 45
    finally:
        conn.close()
    assert list(data.glob(f"{topic}-0/*.snapshot")), "a clean shutdown writes a snapshot"


def test_confluent_idempotent_producer_writes_each_record_once(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, partitions=2)
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
        }
    )
    n = 3000
    for i in range(n):
        p.produce(topic, key=str(i % 7).encode(), value=str(i).encode())
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"{topic}-reader",
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([topic])
    seen: list[int] = []
    try:
        while len(seen) < n:
            msgs = c.consume(500, timeout=10)
            assert msgs, f"only {len(seen)} of {n} records arrived"
            for m in msgs:
                assert m.error() is None, m.error()
                seen.append(int(m.value()))
    finally:
        c.close()
    assert sorted(seen) == list(range(n))
