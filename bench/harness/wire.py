"""Just enough of the Kafka wire protocol for raw sockets: ApiVersions and Metadata requests
(the idle connections of the 1,000-connection scenario, reachability checks) and the
responses the null sink gives a producer. Raw on purpose: the scenarios hold a thousand
bare sockets and the null sink is a server; kafkars' client is `_core.BrokerConnection`."""

from __future__ import annotations

import socket
import struct

from kafkars import _core
from kafkars.testing.raw_frames import recv_frame as read_frame

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_FIND_COORDINATOR = 10
API_VERSIONS = 18
CLIENT_ID = b"bench"


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


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
    API_LIST_OFFSETS: (1, 1),
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


def _body(request: bytes) -> bytes:
    """A v1-header request's body (past the 8 fixed bytes and the client id)."""
    (client_len,) = struct.unpack_from(">h", request, 8)
    return request[10 + max(client_len, 0) :]


def list_offsets_response(correlation_id: int, version: int, request: bytes) -> bytes:
    """ListOffsets v1 (the broker's codec both ways): every partition starts at offset
    0, and 0 is what is answered (the record source has no end: "latest" too)."""
    body = _core.protocol.decode_request(API_LIST_OFFSETS, version, _body(request))
    topics = [
        {
            "name": t["name"],
            "partitions": [
                {
                    "partition_index": p["partition_index"],
                    "timestamp": -1,
                    "offset": 0,
                }
                for p in t["partitions"]
            ],
        }
        for t in body["topics"]
    ]
    response = _core.protocol.encode_response(API_LIST_OFFSETS, version, {"topics": topics})
    return frame(struct.pack(">i", correlation_id) + response)


def fetch_request_offsets(request: bytes, version: int) -> list[tuple[str, list[tuple[int, int]]]]:
    """The (topic, [(partition, fetch offset)]) of a Fetch request (the broker's codec)."""
    body = _core.protocol.decode_request(API_FETCH, version, _body(request))
    return [
        (t["topic"], [(p["partition"], p["fetch_offset"]) for p in t["partitions"]])
        for t in body["topics"]
    ]


def fetch_response(
    correlation_id: int,
    version: int,
    fetches: list[tuple[str, list[tuple[int, int]]]],
    batch: bytes,
    records_per_batch: int,
) -> list[bytes | memoryview]:
    """A Fetch v4 to v11 response, as buffers for `sendmsg`: each partition gets `batch`
    whose 8-byte base offset (outside the batch's CRC) is the offset asked for. Laid out
    here rather than by the codec so the batch is sent from memory without a copy."""
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
