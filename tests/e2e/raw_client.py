"""One raw Kafka connection for tests that need a chosen request version: requests and
responses are encoded and decoded by kafka-python's protocol classes (an independent
codec), headers included, flexible or not."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafkars.broker import Broker


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
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
