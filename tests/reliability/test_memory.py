"""Memory: `queued.max.request.bytes` bounds the requests held in memory. 200 raw
connections each pipeline 1 MiB Produce requests; the broker's peak RSS grows by no
more than the pool plus a stated constant (buffers, allocator slack, the Python heap)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker

from .helpers import alive, memory_kib, pid_of, produce_request, read_response

MIB = 1 << 20
POOL = 16 * MIB
CONNECTIONS = 200
REQUESTS_PER_CONNECTION = 3
# Everything besides the pooled request bytes a burst may add: read buffers, responses,
# allocator fragmentation, the handler threads' Python objects.
CONSTANT = 96 * MIB


@pytest.fixture
def pooled_broker() -> Iterator[Broker]:
    config = {
        "queued.max.request.bytes": POOL,
        "socket.request.max.bytes": 2 * MIB,
        "message.max.bytes": 2 * MIB,
        "auto.create.topics.enable": False,
    }
    with Broker(process=True, config=config) as broker:
        yield broker


def _client(address: tuple[str, int], request: bytes, failures: list[BaseException]) -> None:
    try:
        with socket.create_connection(address, timeout=120) as sock:
            # Pipelined: every request is on the wire before the first answer is read.
            for _ in range(REQUESTS_PER_CONNECTION):
                sock.sendall(request)
            for _ in range(REQUESTS_PER_CONNECTION):
                read_response(sock)
    except BaseException as e:  # noqa: BLE001 - reported by the test
        failures.append(e)


def test_queued_request_bytes_bound_rss(pooled_broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": pooled_broker.bootstrap_servers})
    admin.create_topics([NewTopic("bulk", 4, 1)])["bulk"].result(30)
    host, port = pooled_broker.bootstrap_servers.rsplit(":", 1)
    address = (host, int(port))
    request = produce_request("bulk", 0, b"x" * (MIB - 256))
    # Warm up: one request through every path, so the baseline includes the code paths.
    _client(address, request, [])
    pid = pid_of(pooled_broker)
    baseline = memory_kib(pid, "VmRSS") * 1024

    failures: list[BaseException] = []
    threads = [
        threading.Thread(target=_client, args=(address, request, failures))
        for _ in range(CONNECTIONS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not failures, failures[:3]
    assert alive(pooled_broker)

    offered = CONNECTIONS * REQUESTS_PER_CONNECTION * len(request)
    peak = memory_kib(pid, "VmHWM") * 1024
    growth = peak - baseline
    print(f"offered {offered / MIB:.0f} MiB; RSS {baseline / MIB:.0f} -> peak {peak / MIB:.0f} MiB")
    assert growth <= POOL + CONSTANT, f"RSS grew {growth / MIB:.0f} MiB"
