"""Shared pieces of the resource-exhaustion tests: raw Produce requests and a broker
process's file descriptors and memory as /proc shows them."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafkars import _core
from kafkars.broker import Broker

PRODUCE_VERSION = 8


def pid_of(broker: Broker) -> int:
    assert broker._child is not None, "a broker process (Broker(process=True))"
    return broker._child.pid


def alive(broker: Broker) -> bool:
    return broker._child is not None and broker._child.poll() is None


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def memory_kib(pid: int, field: str) -> int:
    """VmRSS, VmHWM, ... of `pid` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def produce_request(
    topic: str, partition: int, value: bytes, acks: int = 1, correlation_id: int = 1
) -> bytes:
    """A framed Produce request carrying one record batch with `value`."""
    data = ProduceRequest.TopicProduceData.PartitionProduceData(
        index=partition, records=_core.build_batch([(None, value, int(time.time() * 1000), [])])
    )
    request = ProduceRequest(
        version=PRODUCE_VERSION,
        acks=acks,
        timeout_ms=30000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )
    request.with_header(correlation_id=correlation_id, client_id="reliability")
    return bytes(request.encode(version=PRODUCE_VERSION, header=True, framed=True))


def read_response(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return bytes(out)

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def produce_error(broker: Broker, topic: str, partition: int, value: bytes) -> int:
    """The error code a raw acks=1 Produce of `value` gets (no client-side retries)."""
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(produce_request(topic, partition, value))
        body = read_response(sock)
    # Skip the response header (correlation id; v8 is not flexible).
    response = ProduceResponse.decode(body[4:], version=PRODUCE_VERSION)
    [topic_response] = response.responses
    [partition_response] = topic_response.partition_responses
    return int(partition_response.error_code)


def round_trip(broker: Broker, topic: str, count: int = 10, partition: int = 0) -> None:
    """Produces `count` records with a real client and reads them back."""
    errors: list[object] = []
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "message.timeout.ms": 20000}
    )
    on_delivery: Callable[[object, object], None] = lambda err, _msg: errors.append(err)  # noqa: E731
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=partition, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert errors == [None] * count, errors
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reliability-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
        assert values == [f"v{i}".encode() for i in range(count)]
    finally:
        consumer.close()
