"""Just enough of the Kafka wire protocol for raw sockets: ApiVersions and Metadata requests
(the idle connections of the 1,000-connection scenario, reachability checks) and the
responses the null sink gives a producer."""

from __future__ import annotations

import socket
import struct

from kafkars.security.client_auth import recv_exact

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_FIND_COORDINATOR = 10
API_VERSIONS = 18
CLIENT_ID = b"bench"


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def read_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, size)


def request_header(api_key: int, version: int, correlation_id: int) -> bytes:
    """Request header v1 (non-flexible): what ApiVersions v0 and Metadata v1 use."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID


def api_versions_request(correlation_id: int) -> bytes:
    return frame(request_header(API_VERSIONS, 0, correlation_id))


def metadata_request(correlation_id: int) -> bytes:
    """Metadata v1 for no topics (an empty array, not null): brokers and controller only."""
    return frame(request_header(API_METADATA, 1, correlation_id) + struct.pack(">i", 0))


def round_trip(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(request)
    return read_frame(sock)


def probe(host: str, port: int, timeout: float = 5.0) -> None:
    """Connect and get an ApiVersions answer; raises OSError when nothing Kafka answers."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        answer = round_trip(s, api_versions_request(1))
        if len(answer) < 6 or struct.unpack(">i", answer[:4])[0] != 1:
            raise OSError("the answer to ApiVersions is not Kafka's")


# --- what the null sink answers ---------------------------------------------------------

# librdkafka derives its features from these ranges: lz4 from FindCoordinator 0, record
# batches v2 from Produce 3 and Fetch 4, zstd from Produce 7 and Fetch 10. The sink is never
# sent a FindCoordinator; 7 and 11 are the last non-flexible versions. Fetch (v4 and up)
# and ListOffsets are answered by the record source (`nullsink.RecordSource`) only.
SINK_VERSIONS = {
    API_PRODUCE: (0, 7),
    API_FETCH: (0, 11),
    API_LIST_OFFSETS: (0, 1),
    API_METADATA: (0, 1),
    API_FIND_COORDINATOR: (0, 0),
    API_VERSIONS: (0, 3),
}


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def api_versions_response(correlation_id: int, version: int) -> bytes:
    """ApiVersions response (header v0 always) in the request's version's body format."""
    if version >= 3:
        body = struct.pack(">h", 0) + _uvarint(len(SINK_VERSIONS) + 1)
        for key, (lo, hi) in SINK_VERSIONS.items():
            body += struct.pack(">hhh", key, lo, hi) + b"\x00"
        body += struct.pack(">i", 0) + b"\x00"
    else:
        body = struct.pack(">hi", 0, len(SINK_VERSIONS))
        for key, (lo, hi) in SINK_VERSIONS.items():
            body += struct.pack(">hhh", key, lo, hi)
        if version >= 1:
            body += struct.pack(">i", 0)
    return frame(struct.pack(">i", correlation_id) + body)


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def metadata_topics(request: bytes) -> list[str] | None:
    """The topic names of a Metadata v0/v1 request (header v1 included); None = all."""
    (client_len,) = struct.unpack_from(">h", request, 8)
    pos = 10 + max(client_len, 0)
    (count,) = struct.unpack_from(">i", request, pos)
    pos += 4
    if count < 0:
        return None
    names = []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", request, pos)
        names.append(request[pos + 2 : pos + 2 + n].decode())
        pos += 2 + n
    return names


def metadata_response(
    correlation_id: int, host: str, port: int, topics: list[str], partitions: int
) -> bytes:
    """Metadata v1: one broker (node 1, the controller) leading every partition."""
    body = struct.pack(">i", 1) + struct.pack(">i", 1) + _string(host) + struct.pack(">i", port)
    body += struct.pack(">h", -1)  # rack: null
    body += struct.pack(">i", 1)  # controller id
    body += struct.pack(">i", len(topics))
    for name in topics:
        body += struct.pack(">h", 0) + _string(name) + b"\x00" + struct.pack(">i", partitions)
        for p in range(partitions):
            body += struct.pack(">hii", 0, p, 1) + struct.pack(">ii", 1, 1) * 2
    return frame(struct.pack(">i", correlation_id) + body)


# --- what the record source answers -----------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str:
        (n,) = self.take(">h")
        raw = self.data[self.pos : self.pos + max(n, 0)]
        self.pos += max(n, 0)
        return raw.decode()


def _after_header(request: bytes) -> _Reader:
    """A reader past a v1 request header (the 8 fixed bytes and the client id)."""
    r = _Reader(request, 8)
    r.string()
    return r


def list_offsets_response(correlation_id: int, version: int, request: bytes) -> bytes:
    """ListOffsets v0/v1: every partition starts at offset 0, and 0 is what is asked for
    (the record source has no end: "latest" is answered like "earliest")."""
    r = _after_header(request)
    r.take(">i")  # replica id
    body = b""
    (topics,) = r.take(">i")
    body += struct.pack(">i", topics)
    for _ in range(topics):
        name = r.string()
        (partitions,) = r.take(">i")
        body += _string(name) + struct.pack(">i", partitions)
        for _ in range(partitions):
            (partition, _timestamp) = r.take(">iq")
            if version == 0:
                r.take(">i")  # max number of offsets
                body += struct.pack(">ihiq", partition, 0, 1, 0)
            else:
                body += struct.pack(">ihqq", partition, 0, -1, 0)
    return frame(struct.pack(">i", correlation_id) + body)


def fetch_request_offsets(request: bytes, version: int) -> list[tuple[str, list[tuple[int, int]]]]:
    """The (topic, [(partition, fetch offset)]) of a Fetch v4 to v11 request."""
    r = _after_header(request)
    r.take(">iiiib")  # replica id, max wait, min bytes, max bytes, isolation level
    if version >= 7:
        r.take(">ii")  # session id and epoch
    (topics,) = r.take(">i")
    out = []
    for _ in range(topics):
        name = r.string()
        (partitions,) = r.take(">i")
        offsets = []
        for _ in range(partitions):
            (partition,) = r.take(">i")
            if version >= 9:
                r.take(">i")  # current leader epoch
            (offset,) = r.take(">q")
            if version >= 5:
                r.take(">q")  # log start offset
            r.take(">i")  # partition max bytes
            offsets.append((partition, offset))
        out.append((name, offsets))
    return out


def fetch_response(
    correlation_id: int,
    version: int,
    fetches: list[tuple[str, list[tuple[int, int]]]],
    batch: bytes,
    records_per_batch: int,
) -> list[bytes | memoryview]:
    """A Fetch v4 to v11 response, as buffers for `sendmsg`: each partition gets `batch`
    whose 8-byte base offset (outside the batch's CRC) is the offset asked for."""
    rest = memoryview(batch)[8:]
    parts: list[bytes | memoryview] = []
    head = struct.pack(">i", 0)  # throttle time
    if version >= 7:
        head += struct.pack(">hi", 0, 0)  # error code, session id
    head += struct.pack(">i", len(fetches))
    for name, offsets in fetches:
        head += _string(name) + struct.pack(">i", len(offsets))
        for partition, offset in offsets:
            end = offset + records_per_batch
            head += struct.pack(">ihqq", partition, 0, end, end)  # high watermark, LSO
            if version >= 5:
                head += struct.pack(">q", 0)  # log start offset
            head += struct.pack(">i", 0)  # no aborted transactions
            if version >= 11:
                head += struct.pack(">i", -1)  # preferred read replica
            head += struct.pack(">i", len(batch)) + struct.pack(">q", offset)
            parts += [head, rest]
            head = b""
    size = sum(len(p) for p in parts) + 4
    return [struct.pack(">ii", size, correlation_id), *parts]


def send_buffers(sock: socket.socket, buffers: list[bytes | memoryview]) -> None:
    """sendmsg until every buffer is out (a blocking send may still stop part way)."""
    views = [memoryview(b) for b in buffers]
    while views:
        sent = sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if views and sent:
            views[0] = views[0][sent:]
