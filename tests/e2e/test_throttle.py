"""Quota throttling's mechanism (KIP-219): a throttled connection reads nothing more until
its throttle time is up; other connections are not held back."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import ApiKey


def metadata_round_trip(sock: socket.socket, correlation: int) -> float:
    started = time.monotonic()
    sock.sendall(_core.protocol.encode_request(3, 1, correlation, "t", {"topics": []}))
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    sock.recv(size, socket.MSG_WAITALL)
    return time.monotonic() - started


def test_a_throttled_connection_waits_and_others_do_not() -> None:
    with Broker() as b:
        apis = b._server.apis
        metadata = apis.handlers[ApiKey.METADATA]

        def throttling(server: object, request: Any) -> Any:
            if request.client_id == "t" and request.correlation_id == 1:
                request.throttle(600)
            return metadata(server, request)

        apis.handlers[ApiKey.METADATA] = throttling
        host, port = b.bootstrap_servers.rsplit(":", 1)
        with (
            socket.create_connection((host, int(port))) as slow,
            socket.create_connection((host, int(port))) as other,
        ):
            assert metadata_round_trip(slow, 1) < 0.5  # the throttling response is prompt
            assert metadata_round_trip(other, 5) < 0.5
            assert metadata_round_trip(slow, 2) >= 0.4  # then the connection waits
            assert metadata_round_trip(slow, 3) < 0.5  # and is served normally again


def test_connection_creation_rate_paces_new_connections() -> None:
    with Broker(config={"max.connection.creation.rate": 10}) as b:
        host, port = b.bootstrap_servers.rsplit(":", 1)
        started = time.monotonic()
        sockets = []
        for i in range(25):
            s = socket.create_connection((host, int(port)))
            sockets.append(s)
            metadata_round_trip(s, i)
        elapsed = time.monotonic() - started
        for s in sockets:
            s.close()
        # The first second's worth go at once; the other 15 at 10 per second.
        assert elapsed >= 1.2, elapsed
