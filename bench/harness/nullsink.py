"""A null sink: a listener that speaks enough Kafka for an acks=0 producer (ApiVersions,
Metadata) and throws the Produce requests away. Producing to it measures the client's own
ceiling, so a broker is not judged by what the client cannot offer.

Its counterpart for consumers, `RecordSource`, answers every Fetch from one record batch
held in memory (only the batch's base offset changes), so a consumer reading from it runs
at the client's own ceiling."""

from __future__ import annotations

import socket
import struct
import threading
from types import TracebackType

from bench.harness import wire
from kafkars.testing.raw_frames import recv_exact


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
                    (size,) = struct.unpack(">i", recv_exact(conn, 4))
                    head = recv_exact(conn, min(size, 8))
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
                    request = head + recv_exact(conn, left)
                    if self._answer(conn, api_key, version, correlation_id, request):
                        continue
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

    def _answer(
        self, conn: socket.socket, api_key: int, version: int, correlation_id: int, request: bytes
    ) -> bool:
        """A subclass's requests beyond the sink's; True when answered."""
        return False


class RecordSource(NullSink):
    """`with RecordSource(size=1024) as source:` then consume "any topic" from
    source.bootstrap: partition 0 holds records without end, `size` bytes each, starting at
    offset 0. Every Fetch gets the same batch of up to `batch_bytes`, sent from memory with
    its base offset set to the offset asked for."""

    def __init__(self, size: int, batch_bytes: int = 1_000_000) -> None:
        super().__init__(partitions=1)
        from kafkars import _core  # the broker's own batch builder

        count = max(1, batch_bytes // (size + 16))
        value = b"x" * size
        self.batch = _core.build_batch([(None, value, 0, [])] * count)
        self.records_per_batch = count

    def _answer(
        self, conn: socket.socket, api_key: int, version: int, correlation_id: int, request: bytes
    ) -> bool:
        if api_key == wire.API_LIST_OFFSETS:
            conn.sendall(wire.list_offsets_response(correlation_id, version, request))
        elif api_key == wire.API_FETCH:
            fetches = wire.fetch_request_offsets(request, version)
            wire.send_buffers(
                conn,
                wire.fetch_response(
                    correlation_id, version, fetches, self.batch, self.records_per_batch
                ),
            )
        else:
            return False
        return True
