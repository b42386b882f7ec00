"""pytest-benchmark: the cost of Python routing per request, with and without the wire.

pytest bench/test_routing.py --benchmark-enable
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from kafkars.broker import Broker


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


def test_kafka_apis_handle_api_versions(benchmark, broker: Broker) -> None:
    """KafkaApis.handle alone: dispatch + the ApiVersions handler (a dict response)."""
    apis = broker._server.apis

    class FakeRequest:
        api_key = 18
        api_version = 3
        unsupported_version = False
        body: dict = {}
        client_id = "bench"
        answered = False

        def respond(self, response: dict) -> None:
            self.answered = True

    request = FakeRequest()
    benchmark(apis.handle, request)


def _round_trip_bench(benchmark, broker: Broker, frame: bytes) -> None:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))

    def round_trip() -> None:
        sock.sendall(frame)
        size = struct.unpack(">i", sock.recv(4))[0]
        remaining = size
        while remaining:
            remaining -= len(sock.recv(remaining))

    benchmark(round_trip)
    sock.close()


def test_api_versions_round_trip(benchmark, broker: Broker) -> None:
    """One ApiVersions v0 request over TCP: Rust framing, decode, GIL, routing, encode."""
    _round_trip_bench(benchmark, broker, struct.pack(">ihhih", 10, 18, 0, 1, 0))


def test_metadata_round_trip(benchmark, broker: Broker) -> None:
    """Metadata v1 for all topics (none here): the smallest real client request."""
    body = struct.pack(">hhih", 3, 1, 1, 0) + struct.pack(">i", -1)
    _round_trip_bench(benchmark, broker, struct.pack(">i", len(body)) + body)
