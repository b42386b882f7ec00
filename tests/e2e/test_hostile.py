"""Hostile input: each bad connection is answered or closed; everyone else is served."""

from __future__ import annotations

import os
import socket
import struct

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafkars import codec
from kafkars.broker import Broker
from kafkars.testing.raw_frames import recv_frame


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def header(api_key: int, version: int, correlation_id: int, client_id: bytes = b"t") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def read_frame(sock: socket.socket) -> bytes:
    return recv_frame(sock)


def closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def connect(broker: Broker) -> socket.socket:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def still_serving(broker: Broker) -> None:
    md = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert md.brokers


def produce_v3(topic: str, records: bytes, correlation_id: int) -> bytes:
    """A Produce v3 request (non-flexible) with one partition."""
    body = struct.pack(">hhi", -1, 1, 5000)  # null transactional id, acks=1, timeout
    name = topic.encode()
    body += struct.pack(">i", 1) + struct.pack(">h", len(name)) + name
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(records)) + records
    return frame(header(0, 3, correlation_id) + body)


def produce_error_code(response: bytes) -> int:
    # correlation id, topics[1], name, partitions[1], index, error_code
    pos = 4 + 4
    (name_len,) = struct.unpack_from(">h", response, pos)
    pos += 2 + name_len + 4 + 4
    return struct.unpack_from(">h", response, pos)[0]


def test_garbage_and_lies_close_only_their_connections(broker: Broker) -> None:
    cases = [
        os.urandom(64),  # random bytes
        struct.pack(">i", 200 * 1024 * 1024),  # larger than socket.request.max.bytes
        struct.pack(">i", -1),  # negative size
        frame(b"\x00\x03"),  # shorter than a header
        frame(header(3, 9, 1) + b"\xff" * 7),  # Metadata body that lies about lengths
    ]
    for payload in cases:
        s = connect(broker)
        s.sendall(payload)
        assert closed_by_peer(s), payload[:16]
        s.close()
    still_serving(broker)


def test_truncated_frame_then_disconnect(broker: Broker) -> None:
    s = connect(broker)
    s.sendall(struct.pack(">i", 1000) + b"x" * 10)
    s.close()
    still_serving(broker)


def test_unknown_api_key_and_version_close_but_api_versions_answers(broker: Broker) -> None:
    """As Kafka: ApiVersions at a future version gets a v0 answer with the error and the
    supported list; an unknown API key or a version not served closes the connection
    (tests/differential checks the same against Apache Kafka)."""
    s = connect(broker)
    s.sendall(frame(header(18, 99, 8)))
    response = read_frame(s)
    correlation_id, error_code, count = struct.unpack_from(">ihi", response)
    assert (correlation_id, error_code) == (8, 35)
    assert count > 5
    # SaslHandshake on a listener without SASL gets ILLEGAL_SASL_STATE, as from Kafka.
    s.sendall(frame(header(17, 1, 10) + struct.pack(">h", 5) + b"PLAIN"))
    assert read_frame(s) == struct.pack(">ihi", 10, 34, 0)
    s.sendall(frame(header(18, 0, 11)))
    assert struct.unpack_from(">ih", read_frame(s)) == (11, 0)
    s.close()
    produce_v2 = struct.pack(">hii", 1, 1000, 0)
    for payload in (frame(header(4242, 0, 7)), frame(header(0, 2, 9) + produce_v2)):
        s = connect(broker)
        s.sendall(payload)
        assert closed_by_peer(s), payload[:16]
        s.close()
    still_serving(broker)


def test_api_versions_lists_produce_from_v0_but_v2_is_refused(broker: Broker) -> None:
    """As Kafka 4 (KAFKA-18659): ApiVersions lists Produce from v0, so that librdkafka
    compresses with lz4 (it checks for v0), while a Produce v2 request closes the
    connection (checked above)."""
    s = connect(broker)
    s.sendall(frame(header(18, 0, 5)))
    response = read_frame(s)
    correlation_id, error_code, count = struct.unpack_from(">ihi", response)
    assert (correlation_id, error_code) == (5, 0)
    ranges = {
        key: (low, high)
        for key, low, high in (
            struct.unpack_from(">hhh", response, 10 + 6 * i) for i in range(count)
        )
    }
    assert ranges[0][0] == 0 and ranges[0][1] >= 9
    s.close()


def test_bad_crc_in_produce_is_corrupt_message(broker: Broker, topic: str) -> None:
    Producer({"bootstrap.servers": broker.bootstrap_servers}).list_topics(topic, timeout=10)
    good = codec.build_batch([(b"k", b"v" * 50, 1, [])])
    bad = bytearray(good)
    bad[-3] ^= 0x55
    s = connect(broker)
    s.sendall(produce_v3(topic, bytes(bad), 11))
    assert produce_error_code(read_frame(s)) == 2  # CORRUPT_MESSAGE
    s.sendall(produce_v3(topic, good, 12))
    assert produce_error_code(read_frame(s)) == 0
    s.close()


def test_many_idle_connections(broker: Broker) -> None:
    sockets = [connect(broker) for _ in range(500)]
    try:
        still_serving(broker)
    finally:
        for s in sockets:
            s.close()
    still_serving(broker)
