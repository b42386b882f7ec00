"""Lost produce responses: a proxy between an idempotent producer and the broker lets
Produce requests through but drops some of their responses (closing the connection, as a
network failure would), so the producer retries batches the broker already wrote. The
log must hold every record exactly once."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from kafkars.broker import Broker

PRODUCE = 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_frame(sock: socket.socket) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    size = struct.unpack(">i", head)[0]
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 16))
        if not chunk:
            return None
        body += chunk
    return head + bytes(body)


def hang_up(*sockets: socket.socket) -> None:
    """Closes the connections; shutdown() first, because a thread blocked reading a
    socket keeps the connection open through a plain close()."""
    for s in sockets:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


class ResponseDroppingProxy:
    """Forwards Kafka frames both ways; every `drop_every`-th Produce response is not
    delivered and the client connection is closed instead."""

    def __init__(self, port: int, upstream: tuple[str, int], drop_every: int) -> None:
        self.server = socket.create_server(("127.0.0.1", port))
        self.upstream = upstream
        self.drop_every = drop_every
        self.produce_responses = 0
        self.dropped = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                broker = socket.create_connection(self.upstream)
            except OSError:  # the broker stopped first (test teardown)
                client.close()
                continue
            produce_ids: set[int] = set()
            threading.Thread(
                target=self._requests, args=(client, broker, produce_ids), daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(client, broker, produce_ids), daemon=True
            ).start()

    def _requests(self, client: socket.socket, broker: socket.socket, ids: set[int]) -> None:
        try:
            while (frame := read_frame(client)) is not None:
                api_key, _, correlation_id = struct.unpack(">hhi", frame[4:12])
                if api_key == PRODUCE:
                    ids.add(correlation_id)
                broker.sendall(frame)
        except OSError:
            pass
        hang_up(client, broker)

    def _responses(self, client: socket.socket, broker: socket.socket, ids: set[int]) -> None:
        try:
            while (frame := read_frame(broker)) is not None:
                (correlation_id,) = struct.unpack(">i", frame[4:8])
                if correlation_id in ids:
                    with self.lock:
                        self.produce_responses += 1
                        drop = self.produce_responses % self.drop_every == 0
                        self.dropped += drop
                    if drop:
                        break
                client.sendall(frame)
        except OSError:
            pass
        hang_up(client, broker)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def proxied() -> Iterator[tuple[Broker, ResponseDroppingProxy]]:
    broker_port, proxy_port = free_port(), free_port()
    config = {
        "auto.create.topics.enable": True,
        "num.partitions": 1,
        # Clients learn the proxy's address from Metadata and stay behind it.
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
    }
    with Broker(process=True, port=broker_port, config=config) as broker:
        proxy = ResponseDroppingProxy(proxy_port, ("127.0.0.1", broker_port), drop_every=4)
        yield broker, proxy
        proxy.close()


def test_retried_batches_are_written_once(
    proxied: tuple[Broker, ResponseDroppingProxy], topic: str
) -> None:
    broker, proxy = proxied
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{proxy.server.getsockname()[1]}",
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
            "retry.backoff.ms": 10,
        }
    )
    failures: list[object] = []
    for i in range(2000):
        producer.produce(
            topic,
            str(i).encode(),
            partition=0,
            on_delivery=lambda e, m: failures.append(e) if e is not None else None,
        )
        if i % 100 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert failures == []
    assert proxy.dropped > 0, "the proxy dropped no response: nothing was retried"

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    values: list[int] = []
    while len(values) < 2000:
        messages = consumer.consume(500, timeout=10)
        assert messages, f"only {len(values)} records in the log"
        values += [int(m.value()) for m in messages if m.error() is None]
    _, high = consumer.get_watermark_offsets(CTopicPartition(topic, 0), timeout=10)
    consumer.close()
    assert sorted(values) == list(range(2000)), "a record is missing or written twice"
    assert high == 2000, "the log holds more records than were produced"
