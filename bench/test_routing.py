"""pytest-benchmark: the cost of Python routing per request, with and without the wire.

pytest bench/test_routing.py --benchmark-enable

The Produce and Fetch round trips also print the share of their handler time spent in
Python (the handler's total minus the Rust call it makes), the figure SPEC §13 bounds.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench.harness import wire
from bench.harness.targets import create_topic
from kafkars import _core
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


class _TimedDelayedOperations:
    """The broker's `_core.ReplicaManager` purgatories, the time of each produce or fetch
    call summed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.ns = {"produce": 0, "fetch": 0}
        for name in self.ns:
            setattr(self, name, self._timed(name, getattr(inner, name)))

    def _timed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return method(*args)
            finally:
                self.ns[name] += time.perf_counter_ns() - started

        return timed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _python_share(broker: Broker, key: int, call: str, run: Callable[[], None]) -> None:
    """Runs `run` with the Rust call timed; prints Python's microseconds per request."""
    apis = broker._server.apis
    timed = _TimedDelayedOperations(apis.delayed_operations)
    apis.delayed_operations = timed
    before_n = apis.request_count.get(key, 0)
    before_ns = apis.request_time_ns.get(key, 0)
    try:
        run()
    finally:
        apis.delayed_operations = timed.inner
    n = apis.request_count.get(key, 0) - before_n
    handler_ns = apis.request_time_ns.get(key, 0) - before_ns
    if n:
        python_us = (handler_ns - timed.ns[call]) / n / 1e3
        print(f"\n{call}: {n} requests, Python {python_us:.1f} us of {handler_ns / n / 1e3:.1f} us")


def _bench_topic(broker: Broker) -> None:
    if broker._server.metadata_cache.get("bench") is None:
        create_topic(broker.bootstrap_servers, "bench", 1)


PRODUCE = _core.protocol.encode_request(
    0,
    7,
    1,
    "bench",
    {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 30_000,
        "topic_data": [
            {
                "name": "bench",
                "partition_data": [
                    {"index": 0, "records": _core.build_batch([(None, b"x" * 100, 0, [])])}
                ],
            }
        ],
    },
)


def _fetch(offset: int) -> bytes:
    partition = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    return _core.protocol.encode_request(
        1,
        11,
        2,
        "bench",
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": "bench", "partitions": [partition]}],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


def test_produce_round_trip(benchmark, broker: Broker) -> None:
    """Produce v7, acks=1, one 100-byte record: routing, the Rust append, the response."""
    _bench_topic(broker)
    _python_share(broker, 0, "produce", lambda: _round_trip_bench(benchmark, broker, PRODUCE))


def test_fetch_round_trip(benchmark, broker: Broker) -> None:
    """Fetch v11 of one small batch from the page cache (the sendfile path)."""
    _bench_topic(broker)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        wire.round_trip(sock, PRODUCE)
    _python_share(broker, 1, "fetch", lambda: _round_trip_bench(benchmark, broker, _fetch(0)))
