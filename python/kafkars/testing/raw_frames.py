"""Reading raw Kafka frames off a socket, for the tools that talk to a broker with no
client in the way on purpose (hostile frames, the differential comparison, the benchmark's
null sink and idle connections)."""

from __future__ import annotations

import socket
import struct


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """`n` bytes from `sock`; ConnectionError when the peer closes first."""
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        out += chunk
    return bytes(out)


def recv_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame's payload."""
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)
