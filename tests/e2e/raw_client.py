"""Raw Kafka connections for tests that need a chosen request version.

`RawConnection` encodes and decodes with kafka-python's protocol classes (an independent
codec), headers included, flexible or not. `CodecConnection` uses the broker's own codec
(`kafkars._core.protocol`) with plain dicts, for APIs kafka-python does not know."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafkars import _core
from kafkars.broker import Broker


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return out


class CodecConnection:
    """Requests as dicts, through the broker's codec, on one socket."""

    def __init__(self, broker: Broker, client_id: str = "t") -> None:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.client_id, self.correlation = client_id, 0

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation += 1
        codec = _core.protocol
        self.sock.sendall(
            codec.encode_request(api_key, version, self.correlation, self.client_id, body)
        )
        size = struct.unpack(">i", recv_exactly(self.sock, 4))[0]
        return codec.decode_response(
            api_key, version, self.correlation, recv_exactly(self.sock, size)
        )

    def close(self) -> None:
        self.sock.close()


class RawConnection:
    def __init__(self, broker: Broker) -> None:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def call(self, request: Any, response_cls: Any, version: int) -> Any:
        """Sends `request` at `version` and returns the decoded response."""
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id="raw-test")
        self.sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
        frame = self._recv(struct.unpack(">i", self._recv(4))[0])
        response = response_cls.decode(frame, version=version, header=True)
        assert response._header.correlation_id == self.correlation_id
        return response

    def _recv(self, n: int) -> bytes:
        return recv_exactly(self.sock, n)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
