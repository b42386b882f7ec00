"""A null sink: a listener that speaks enough Kafka for an acks=0 producer (ApiVersions,
Metadata) and throws the Produce requests away. Producing to it measures the client's own
ceiling, so a broker is not judged by what the client cannot offer."""

from __future__ import annotations

import socket
import struct
import threading
from types import TracebackType

from bench.harness import wire


class NullSink:
    """`with NullSink(partitions=1) as sink:` then produce with acks=0 to sink.bootstrap."""

    def __init__(self, partitions: int = 1) -> None:
        self.partitions = partitions
        self.bytes_received = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self._server.getsockname()[:2]
        self._threads: list[threading.Thread] = []
        self._closing = False

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> NullSink:
        t = threading.Thread(target=self._accept, name="null-sink", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closing:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        # One reusable buffer: a Produce body is read into it and dropped, never copied.
        sink = bytearray(1 << 20)
        view = memoryview(sink)
        with conn:
            try:
                while True:
                    (size,) = struct.unpack(">i", wire.recv_exact(conn, 4))
                    head = wire.recv_exact(conn, min(size, 8))
                    api_key, version, correlation_id = struct.unpack(">hhi", head)
                    left = size - len(head)
                    if api_key == wire.API_PRODUCE:
                        while left:
                            n = conn.recv_into(view, min(left, len(sink)))
                            if not n:
                                return
                            left -= n
                        self.bytes_received += size
                        continue
                    request = head + wire.recv_exact(conn, left)
                    if api_key == wire.API_VERSIONS:
                        conn.sendall(wire.api_versions_response(correlation_id, version))
                    elif api_key == wire.API_METADATA:
                        topics = wire.metadata_topics(request) or []
                        conn.sendall(
                            wire.metadata_response(
                                correlation_id, self.host, self.port, topics, self.partitions
                            )
                        )
                    else:
                        return  # anything else: the sink is for acks=0 producers only
            except (OSError, ConnectionError, struct.error):
                return
