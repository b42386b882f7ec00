"""Transactions end to end with confluent-kafka, kafka-python and aiokafka: a committed
and an aborted transaction, read_committed seeing exactly the committed records,
consume-transform-produce with send_offsets_to_transaction, zombie fencing, KIP-890's
refusal of a partition outside the transaction, and the admin APIs."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import socket
import threading
import time
import uuid
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from raw_client import CodecConnection

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import Errors
from kafkars.server.txn_markers import TransactionMarkerWriter

PRODUCE, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN = 0, 22, 24, 26
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
FIND_COORDINATOR, LIST_OFFSETS, FETCH = 10, 2, 1
INVALID_TXN_STATE = 48
TRANSACTION_ABORTABLE = 120


Connection = CodecConnection


def create_topic(broker: Broker, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(10)


def read_values(
    broker: Broker, topic: str, isolation: str, expect: int, timeout: float = 15.0
) -> list[bytes]:
    """Every value of `topic` a consumer with `isolation` sees (waiting for `expect`, then
    a little longer so extra records would show up)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    quiet_until: float | None = None
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            values.append(msg.value())
        if len(values) >= expect:
            quiet_until = quiet_until or time.monotonic() + 1.0
            if time.monotonic() > quiet_until:
                break
    consumer.close()
    return values


def committed_and_aborted_values(prefix: str) -> tuple[list[bytes], list[bytes]]:
    committed = [f"{prefix}-c{i}".encode() for i in range(5)]
    aborted = [f"{prefix}-a{i}".encode() for i in range(3)]
    return committed, aborted


def test_confluent_commit_and_abort(broker: Broker, topic: str) -> None:
    create_topic(broker, topic, partitions=2)
    committed, aborted = committed_and_aborted_values("ck")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic})
    p.init_transactions(20)
    p.begin_transaction()
    for i, v in enumerate(committed):
        p.produce(topic, value=v, partition=i % 2)
    p.commit_transaction(20)
    p.begin_transaction()
    for i, v in enumerate(aborted):
        p.produce(topic, value=v, partition=i % 2)
    p.flush(10)
    p.abort_transaction(20)
    p.begin_transaction()
    p.produce(topic, value=b"ck-last", partition=0)
    p.commit_transaction(20)

    seen = read_values(broker, topic, "read_committed", len(committed) + 1)
    assert sorted(seen) == sorted([*committed, b"ck-last"])
    everything = read_values(broker, topic, "read_uncommitted", len(committed) + 1 + len(aborted))
    assert sorted(everything) == sorted([*committed, *aborted, b"ck-last"])


def test_kafka_python_commit_and_abort(broker: Broker, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    create_topic(broker, topic)
    committed, aborted = committed_and_aborted_values("kp")
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=topic)
    p.init_transactions()
    p.begin_transaction()
    for v in committed:
        p.send(topic, v, partition=0)
    p.commit_transaction()
    p.begin_transaction()
    for v in aborted:
        p.send(topic, v, partition=0)
    p.flush()
    p.abort_transaction()
    p.close()
    assert read_values(broker, topic, "read_committed", len(committed)) == committed

    # kafka-python's own read_committed consumer skips the aborted batch too.
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap_servers,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    assert [m.value for m in consumer] == committed
    consumer.close()


def test_aiokafka_commit_and_abort(broker: Broker, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    create_topic(broker, topic)
    committed, aborted = committed_and_aborted_values("aio")

    async def run() -> list[bytes]:
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=topic)
        await p.start()
        try:
            async with p.transaction():
                for v in committed:
                    await p.send_and_wait(topic, v, partition=0)
            await p.begin_transaction()
            for v in aborted:
                await p.send_and_wait(topic, v, partition=0)
            await p.abort_transaction()
        finally:
            await p.stop()
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap_servers,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
            group_id=f"aio-{uuid.uuid4().hex[:8]}",
        )
        await c.start()
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=500)
                for msgs in batch.values():
                    got += [m.value for m in msgs]
                if len(got) >= len(committed):
                    # Past the abort marker: the consumer is at the end, nothing else came.
                    more = await c.getmany(timeout_ms=1000)
                    got += [m.value for msgs in more.values() for m in msgs]
                    break
        finally:
            await c.stop()
        return got

    assert asyncio.run(run()) == committed


def test_send_offsets_to_transaction_consume_transform_produce(broker: Broker, topic: str) -> None:
    source, sink, group = topic, f"{topic}-out", f"g-{topic}"
    create_topic(broker, source)
    create_topic(broker, sink)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(10):
        plain.produce(source, value=str(i).encode(), partition=0)
    plain.flush(10)

    def consumer() -> Consumer:
        return Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": group,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )

    def transform(batch_size: int, commit: bool) -> None:
        c = consumer()
        c.subscribe([source])
        p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": group})
        p.init_transactions(20)
        msgs: list[Any] = []
        deadline = time.monotonic() + 15
        while len(msgs) < batch_size and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                msgs.append(m)
        assert len(msgs) == batch_size
        p.begin_transaction()
        for m in msgs:
            p.produce(sink, value=b"x" + m.value(), partition=0)
        last = msgs[-1]
        offsets = [TopicPartition(source, 0, last.offset() + 1)]
        p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), 20)
        # Not the group's committed offset before the commit marker (a read_uncommitted
        # client, which does not ask for stable offsets, sees the previous one).
        peek = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": group,
                "isolation.level": "read_uncommitted",
            }
        )
        assert peek.committed([TopicPartition(source, 0)], 10)[0].offset < last.offset() + 1
        peek.close()
        if commit:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)
        c.close()

    transform(4, commit=True)
    transform(3, commit=False)  # its output and its offsets are dropped
    transform(6, commit=True)  # resumes from the committed offset 4
    c = consumer()
    assert c.committed([TopicPartition(source, 0)], 10)[0].offset == 10
    c.close()
    out = read_values(broker, sink, "read_committed", 10)
    assert out == [b"x" + str(i).encode() for i in range(10)]


def test_a_zombie_producer_is_fenced(broker: Broker, topic: str) -> None:
    create_topic(broker, topic)
    txn_id = f"zombie-{topic}"
    zombie = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id})
    zombie.init_transactions(20)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(10)
    # A new instance fences the old one and aborts its open transaction.
    fresh = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id})
    fresh.init_transactions(20)
    fresh.begin_transaction()
    fresh.produce(topic, value=b"fresh", partition=0)
    fresh.commit_transaction(20)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(topic, value=b"zombie-2", partition=0)
        zombie.commit_transaction(20)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    assert read_values(broker, topic, "read_committed", 1) == [b"fresh"]


def test_produce_outside_the_transaction_is_refused(broker: Broker, topic: str) -> None:
    """KIP-890 part 1: a transactional batch for a partition never added to the
    transaction is refused with INVALID_TXN_STATE."""
    create_topic(broker, topic, partitions=2)
    conn = Connection(broker)
    try:
        txn_id = f"raw-{topic}"
        assert conn.call(FIND_COORDINATOR, 3, {"key": txn_id, "key_type": 1})["error_code"] == 0
        init = conn.call(
            INIT_PRODUCER_ID, 3, {"transactional_id": txn_id, "transaction_timeout_ms": 60_000}
        )
        assert init["error_code"] == 0
        pid, epoch = init["producer_id"], init["producer_epoch"]
        added = conn.call(
            ADD_PARTITIONS_TO_TXN,
            3,
            {
                "v3_and_below_transactional_id": txn_id,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": [0]}],
            },
        )
        result = added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]
        assert result["partition_error_code"] == 0

        def produce(partition: int) -> int:
            batch = _core.build_batch(
                [(None, b"v", 1000, [])],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=0,
                is_transactional=True,
            )
            body = {
                "transactional_id": txn_id,
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            }
            response = conn.call(PRODUCE, 9, body)
            return int(response["responses"][0]["partition_responses"][0]["error_code"])

        assert produce(1) == INVALID_TXN_STATE
        assert produce(0) == 0

        # Until the transaction ends, read_committed stops before its first offset.
        offsets = conn.call(
            LIST_OFFSETS,
            5,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}
                ],
            },
        )
        assert offsets["topics"][0]["partitions"][0]["offset"] == 0

        # The admin views see the open transaction and the producer.
        described = conn.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn_id, "none"]})
        state, missing = described["transaction_states"]
        assert state["transaction_state"] == "Ongoing" and state["producer_id"] == pid
        assert state["topics"] == [{"topic": topic, "partitions": [0]}]
        assert missing["error_code"] == 105  # TRANSACTIONAL_ID_NOT_FOUND
        listed = conn.call(
            LIST_TRANSACTIONS, 1, {"state_filters": ["Ongoing"], "producer_id_filters": [pid]}
        )
        assert [t["transactional_id"] for t in listed["transaction_states"]] == [txn_id]
        producers = conn.call(
            DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]}
        )
        active = producers["topics"][0]["partitions"][0]["active_producers"]
        assert [(a["producer_id"], a["current_txn_start_offset"]) for a in active] == [(pid, 0)]

        ended = conn.call(
            END_TXN,
            3,
            {
                "transactional_id": txn_id,
                "producer_id": pid,
                "producer_epoch": epoch,
                "committed": False,
            },
        )
        assert ended["error_code"] == 0
        offsets = conn.call(
            LIST_OFFSETS,
            5,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}
                ],
            },
        )
        assert offsets["topics"][0]["partitions"][0]["offset"] == 2  # record + abort marker
        fetch = conn.call(
            FETCH,
            11,
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "isolation_level": 1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
        )
        part = fetch["responses"][0]["partitions"][0]
        assert part["last_stable_offset"] == 2
        assert [(a["producer_id"], a["first_offset"]) for a in part["aborted_transactions"]] == [
            (pid, 0)
        ]
    finally:
        conn.close()


def test_newest_advertised_versions(broker: Broker, topic: str) -> None:
    """The top of each advertised range works: InitProducerId v5, AddPartitionsToTxn v5
    (the broker form with verify_only), EndTxn v4 (v5 is transaction version 2, not
    implemented), and ApiVersions lists them."""
    create_topic(broker, topic)
    conn = Connection(broker)
    try:
        versions = {k["api_key"]: k["max_version"] for k in conn.call(18, 3, {})["api_keys"]}
        assert versions[INIT_PRODUCER_ID] == 5 and versions[ADD_PARTITIONS_TO_TXN] == 5
        assert versions[END_TXN] == 4 and versions[LIST_TRANSACTIONS] == 1
        txn_id = f"v5-{topic}"
        conn.call(FIND_COORDINATOR, 6, {"key_type": 1, "coordinator_keys": [txn_id]})
        init = conn.call(
            INIT_PRODUCER_ID, 5, {"transactional_id": txn_id, "transaction_timeout_ms": 60_000}
        )
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def add(verify_only: bool) -> int:
            response = conn.call(
                ADD_PARTITIONS_TO_TXN,
                5,
                {
                    "transactions": [
                        {
                            "transactional_id": txn_id,
                            "producer_id": pid,
                            "producer_epoch": epoch,
                            "verify_only": verify_only,
                            "topics": [{"name": topic, "partitions": [0]}],
                        }
                    ]
                },
            )
            result = response["results_by_transaction"][0]["topic_results"][0]
            return int(result["results_by_partition"][0]["partition_error_code"])

        # Not in the transaction yet: TRANSACTION_ABORTABLE, as Kafka's coordinator answers.
        assert add(verify_only=True) == TRANSACTION_ABORTABLE
        assert add(verify_only=False) == 0
        assert add(verify_only=True) == 0
        ended = conn.call(
            END_TXN,
            4,
            {
                "transactional_id": txn_id,
                "producer_id": pid,
                "producer_epoch": epoch,
                "committed": True,
            },
        )
        assert ended["error_code"] == 0
    finally:
        conn.close()


class _CountingForwarder:
    """A TCP forwarder to the broker that counts the connections made through it, and can
    drop them all (a broker restart as the client sees it)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.accepted = 0
        self._sockets: list[socket.socket] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = self._server.getsockname()[:2]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.accepted += 1
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def drop_connections(self) -> None:
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._server.close()
        self.drop_connections()


def test_the_marker_sender_keeps_one_connection_per_broker(broker: Broker, topic: str) -> None:
    """Markers for partitions led by another broker go over one connection to it, as
    Kafka's TransactionMarkerChannelManager keeps one per destination; it is opened again
    after it drops."""
    create_topic(broker, topic, 3)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    forwarder = _CountingForwarder((host, int(port)))
    # This writer's broker (id -1) leads nothing: every marker goes to the forwarder.
    writer = TransactionMarkerWriter(
        cast(Any, None), None, broker_id=-1, leader_endpoint=lambda t, p: (1, forwarder.address)
    )

    def write(producer_id: int) -> Errors:
        result: queue.Queue[Errors] = queue.Queue()
        partitions = [(topic, p) for p in range(3)]
        writer.write_txn_markers(producer_id, 0, True, partitions, 0, result.put)
        return result.get(timeout=30)

    try:
        for producer_id in (1_000_001, 1_000_002):
            assert write(producer_id) is Errors.NONE
        assert forwarder.accepted == 1
        forwarder.drop_connections()
        assert write(1_000_003) is Errors.NONE
        assert forwarder.accepted == 2
    finally:
        writer.shutdown()
        forwarder.close()
