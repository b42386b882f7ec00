"""Hostile frames against a running broker while its resident memory is sampled: every
connection is answered or closed, memory stays within 64 MiB of where it started, and a
normal client completes a produce/consume round trip afterwards."""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lz4.frame
import zstandard
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.common import (
    BrokerProcess,
    CheckFailed,
    RssSampler,
    answered_or_closed,
    api_versions,
    check,
    frame,
    mib,
    read_frame,
    report,
    request_header,
    round_trip,
)

RSS_BUDGET = 64 * 2**20
# Connections sending zip bombs at the same time.
BOMBERS = 4
PROBE_ID = 0x7EAD0000

# -- record batches built by hand, so they can lie ------------------------------------

_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record_batch(codec: int, count: int, payload: bytes, last_offset_delta: int = 0) -> bytes:
    """A magic-v2 batch with a correct CRC around `payload` (the records section,
    compressed with `codec` or not), claiming `count` records."""
    now = int(time.time() * 1000)
    after_crc = (
        struct.pack(">hiqqqhii", codec, last_offset_delta, now, now, -1, -1, -1, count) + payload
    )
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def record_header(value_len: int, offset_delta: int) -> bytes:
    """One record's bytes up to its value (which the caller streams after it)."""
    head = b"\x00" + varint(0) + varint(offset_delta) + varint(-1) + varint(value_len)
    return varint(len(head) + value_len + 1) + head


def zip_bombs(scale: int) -> Iterator[tuple[str, bytes]]:
    """Small batches that inflate to `scale` MiB (GiBs for zstd) of zero-filled records:
    one huge record (refusable from its length), or many 1 MiB records (the broker must
    walk them, up to its decompression limit)."""
    chunk = b"\x00" * (1 << 20)

    def stream(comp: Any, records: int, value_mib: int) -> bytes:
        out = [comp.begin()] if hasattr(comp, "begin") else []
        for i in range(records):
            out.append(comp.compress(record_header(value_mib << 20, i)))
            for _ in range(value_mib):
                out.append(comp.compress(chunk))
            out.append(comp.compress(b"\x00"))  # no headers
        out.append(comp.flush())
        return b"".join(out)

    def bomb(name: str, codec: int, comp: Any, records: int, value_mib: int) -> tuple[str, bytes]:
        data = stream(comp, records, value_mib)
        what = f"{name} {records} x {value_mib} MiB in {len(data) // 1024} KiB"
        return what, record_batch(codec, records, data, records - 1)

    gzip_mib = min(scale, 960)
    yield bomb("gzip", 1, zlib.compressobj(6, zlib.DEFLATED, 31), 1, gzip_mib)
    yield bomb("gzip", 1, zlib.compressobj(6, zlib.DEFLATED, 31), gzip_mib, 1)
    lz4_mib = min(scale, 224)
    yield bomb("lz4", 3, lz4.frame.LZ4FrameCompressor(), lz4_mib, 1)
    zstd_gib = max(1, scale * 4 // 1024)
    yield bomb("zstd", 4, zstandard.ZstdCompressor(level=1).compressobj(), zstd_gib, 1024)
    yield bomb("zstd", 4, zstandard.ZstdCompressor(level=1).compressobj(), zstd_gib * 1024, 1)
    # A real record and a count that claims two billion of them.
    gzip = zlib.compressobj(6, zlib.DEFLATED, 31)
    small = gzip.compress(record_header(10, 0) + b"x" * 10 + b"\x00") + gzip.flush()
    yield "gzip claiming 2^31-1 records", record_batch(1, 2**31 - 1, small, 0)
    yield "uncompressed claiming 2^31-1 records", record_batch(0, 2**31 - 1, b"\x00" * 64, 0)


def produce_request(topic: str, batch: bytes, correlation_id: int, acks: int = 1) -> bytes:
    """Produce v3 (not flexible) to partition 0."""
    name = topic.encode()
    body = struct.pack(">hhi", -1, acks, 30000)
    body += struct.pack(">ih", 1, len(name)) + name
    body += struct.pack(">iii", 1, 0, len(batch)) + batch
    return frame(request_header(0, 3, correlation_id, False) + body)


def produce_error(response: bytes) -> int:
    (name_len,) = struct.unpack_from(">h", response, 8)
    return int(struct.unpack_from(">h", response, 8 + 2 + name_len + 8)[0])


def fetch_request(topic: str, correlation_id: int, max_bytes: int = 50 << 20) -> bytes:
    """Fetch v4 of partition 0 from offset 0, answered at once."""
    name = topic.encode()
    body = struct.pack(">iiiib", -1, 0, 0, max_bytes, 0)
    body += struct.pack(">ih", 1, len(name)) + name
    body += struct.pack(">iiqi", 1, 0, 0, max_bytes)
    return frame(request_header(1, 4, correlation_id, False) + body)


# -- the suite -------------------------------------------------------------------------


class Hostile:
    def __init__(self, broker: BrokerProcess, rng: random.Random):
        self.broker = broker
        self.rng = rng
        self.outcomes: Counter[str] = Counter()
        self.delayed: list[str] = []
        self.sent = 0

    def connect(self) -> socket.socket:
        return socket.create_connection((self.broker.host, self.broker.port), timeout=10)

    def one_shot(self, cls: str, payload: bytes, linger: bool = True) -> None:
        """Sends `payload` on a new connection, then ends the sending side (a frame whose
        size prefix asks for more must not wait forever); it must be answered or closed."""
        with self.connect() as s:
            try:
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                self.outcomes[f"{cls}: closed"] += 1
                return
            self.sent += 1
            if linger:
                self.outcomes[f"{cls}: {answered_or_closed(s)}"] += 1

    def probed(self, cls: str, cases: list[tuple[str, bytes]]) -> None:
        """Sends each case on one connection followed by an ApiVersions probe: the
        connection must answer the probe (alive) or be closed (then a new one is used).
        A case whose answer is legitimately delayed (a Fetch told to wait) is counted."""
        s: socket.socket | None = None
        for n, (what, payload) in enumerate(cases):
            if s is None:
                s = self.connect()
            probe = PROBE_ID + n
            try:
                s.sendall(payload + frame(request_header(18, 0, probe, False)))
                self.sent += 1
                outcome = self._await_probe(s, probe)
            except (BrokenPipeError, ConnectionResetError):
                outcome = "closed"
            self.outcomes[f"{cls}: {outcome}"] += 1
            if outcome != "alive":
                if outcome == "delayed":
                    self.delayed.append(what)
                s.close()
                s = None
        if s is not None:
            s.close()

    def _await_probe(self, s: socket.socket, probe: int) -> str:
        s.settimeout(5)
        try:
            while True:
                response = read_frame(s)
                if struct.unpack_from(">i", response)[0] == probe:
                    return "alive"
        except (ConnectionError, ConnectionResetError):
            return "closed"
        except TimeoutError:
            return "delayed"


def minimal_requests() -> dict[tuple[int, int], bytes]:
    """A valid request body (header v1 prefix included) of every key and version the
    broker's codec knows, from its own encoder with default fields."""
    from kafkars._core import protocol

    out = {}
    for key, lo, hi in protocol.api_keys().values():
        for version in range(lo, hi + 1):
            try:
                framed = protocol.encode_request(key, version, 1, "chaos", {})
            except ValueError:
                # ControlledShutdown v0 has Kafka's one non-standard request header (no
                # client id): the codec does not frame it, so there is nothing to send.
                continue
            out[(key, version)] = bytes(framed[4:])
    return out


def mutations(rng: random.Random, request: bytes, n: int) -> list[bytes]:
    """Bit flips, truncations and inserted bytes after the 15-byte v1 header prefix."""
    out = []
    head, body = request[:15], bytearray(request[15:])
    for _ in range(n):
        b = bytearray(body)
        kind = rng.randrange(3)
        if kind == 0 and b:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif kind == 1 and b:
            del b[rng.randrange(len(b)) :]
        else:
            at = rng.randint(0, len(b))
            b[at:at] = os.urandom(rng.randint(1, 8))
        out.append(head + bytes(b))
    return out


def huge_counts(rng: random.Random, request: bytes, positions: int) -> list[bytes]:
    """The request with a 2^31-1 int32 count or a 2^32 compact (varint) count written at
    some positions of its body."""
    head, body = request[:15], request[15:]
    out = []
    spots = list(range(len(body) + 1))
    for at in rng.sample(spots, min(positions, len(spots))):
        out.append(head + body[:at] + b"\x7f\xff\xff\xff" + body[at + 4 :])
        out.append(head + body[:at] + b"\xff\xff\xff\xff\x0f" + body[at:])
    return out


def pipeline_without_reading(
    broker: BrokerProcess, payloads: list[bytes], seconds: float, max_bytes: int = 1 << 62
) -> tuple[int, int]:
    """Writes the payloads back to back for `seconds` without reading a byte; returns
    (requests written, bytes written). The broker must push back, not buffer it all."""
    s = socket.create_connection((broker.host, broker.port), timeout=10)
    s.setblocking(False)
    written = requests = 0
    deadline = time.monotonic() + seconds
    data = memoryview(b"")
    i = 0
    try:
        while time.monotonic() < deadline and written < max_bytes:
            if not data:
                data = memoryview(payloads[i % len(payloads)])
                i += 1
                requests += 1
            try:
                n = s.send(data)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            except OSError:
                break
            written += n
            data = data[n:]
    finally:
        s.close()
    return requests, written


def run(workdir: Path, smoke: bool) -> dict[str, Any]:
    rng = random.Random(6)
    broker = BrokerProcess(workdir / "hostile", {"num.partitions": "1"})
    broker.start()
    try:
        return _run(broker, rng, smoke)
    finally:
        broker.kill()


def _run(broker: BrokerProcess, rng: random.Random, smoke: bool) -> dict[str, Any]:
    rss_at_start = broker.rss_bytes()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    for name in ("hostile-bomb", "hostile-fetch"):
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    # 8 MiB to fetch back many times over while nobody reads the responses.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    for i in range(256):
        producer.produce("hostile-fetch", key=str(i).encode(), value=os.urandom(32 * 1024))
    check(producer.flush(60) == 0, "could not fill hostile-fetch")
    round_trip(broker.bootstrap)
    bombs = list(zip_bombs(256 if smoke else 960))
    requests = minimal_requests()
    advertised = api_versions(broker.host, broker.port)
    h = Hostile(broker, rng)
    per_version = 2 if smoke else 12
    began = time.monotonic()
    with RssSampler(broker.pid) as rss:
        rss.mark("random bytes, bad sizes")
        # Random bytes, and frames whose size prefix lies.
        for _ in range(10 if smoke else 200):
            h.one_shot("random bytes", os.urandom(rng.randint(1, 4096)))
        lies = [
            struct.pack(">i", -1),
            struct.pack(">i", -(2**31)),
            struct.pack(">i", 0),
            struct.pack(">i", 3) + b"abc",
            struct.pack(">i", 2**31 - 1) + b"x" * 100,
            struct.pack(">i", 100 * 2**20 + 1),
        ]
        for payload in lies:
            h.one_shot("bad size prefix", payload)
        rss.mark("short and truncated frames")
        # Frames that promise more than arrives: 100 MiB promised, a little sent, left
        # open (the buffer must grow with what arrives), then closed.
        held = []
        for _ in range(20 if smoke else 200):
            s = h.connect()
            s.sendall(struct.pack(">i", 100 * 2**20) + os.urandom(rng.randint(0, 64 * 1024)))
            held.append(s)
        for request in list(requests.values())[:: 3 if smoke else 1]:
            h.one_shot("truncated frame", frame(request)[: rng.randint(1, len(request) + 3)], False)
        time.sleep(0.5)
        for s in held:
            s.close()
        h.outcomes["promised 100 MiB, sent less: held open"] += len(held)
        rss.mark("unknown keys/versions")
        # Unknown keys and versions.
        unknown = [(k, 0) for k in (-1, 99, 4242, 32767)]
        for key, (_, hi) in advertised.items():
            unknown += [(key, hi + 1), (key, 32767), (key, -1)]
        h.probed(
            "unknown key/version",
            [
                (f"{k} v{v}", frame(request_header(k, v, 9, False) + os.urandom(8)))
                for k, v in unknown
            ],
        )
        # Garbage bodies, mutated real requests and huge counts for every key and version.
        garbage, counts = [], []
        for (key, version), request in requests.items():
            name = f"key {key} v{version}"
            for _ in range(per_version):
                body = os.urandom(rng.randint(0, 256))
                garbage.append((name, frame(request_header(key, version, 5, False) + body)))
            garbage += [(name, frame(m)) for m in mutations(rng, request, per_version)]
            counts += [(name, frame(m)) for m in huge_counts(rng, request, 2 if smoke else 16)]
        rss.mark("garbage bodies")
        h.probed("garbage body", garbage)
        rss.mark("huge counts")
        h.probed("huge count", counts)
        rss.mark("zip bombs")
        # Zip bombs, from several connections at once: answered with an error, never
        # inflated (a bomb held inflated per request handler would show here).
        bomb_errors: dict[str, set[int]] = {what: set() for what, _ in bombs}

        def bomber() -> None:
            with h.connect() as s:
                for n, (what, batch) in enumerate(bombs):
                    s.sendall(produce_request("hostile-bomb", batch, 100 + n))
                    s.settimeout(120)
                    bomb_errors[what].add(produce_error(read_frame(s)))

        bombers = [threading.Thread(target=bomber) for _ in range(BOMBERS)]
        for t in bombers:
            t.start()
        for t in bombers:
            t.join()
        h.sent += BOMBERS * len(bombs)
        for what, codes in bomb_errors.items():
            check(len(codes) > 0 and 0 not in codes, f"zip bomb accepted: {what} {codes}")
        rss.mark("pipelining")
        # Clients that pipeline requests and never read the answers.
        seconds = 3.0 if smoke else 10.0
        fetches = pipeline_without_reading(broker, [fetch_request("hostile-fetch", 1)], seconds)
        small_batch = record_batch(0, 1, record_header(512 * 1024, 0) + b"p" * 512 * 1024 + b"\x00")
        produces = pipeline_without_reading(
            broker, [produce_request("hostile-bomb", small_batch, 2)], seconds, 256 << 20
        )
        metadata = pipeline_without_reading(
            broker, [frame(request_header(3, 1, 3, False) + b"\xff\xff\xff\xff")], seconds
        )
        took = time.monotonic() - began
        rss.mark("round trip")
        # The broker still serves a normal client.
        rt = round_trip(broker.bootstrap)
        time.sleep(1.0)
    check(broker.child is not None and broker.child.poll() is None, "the broker died")
    figures = {
        "hostile requests sent": h.sent,
        "outcomes": dict(sorted(h.outcomes.items())),
        "answers delayed > 5 s (waiting requests)": len(h.delayed),
        f"zip bombs x {BOMBERS} connections (Produce error codes)": {
            what: sorted(codes) for what, codes in bomb_errors.items()
        },
        "pipelined Fetch (8 MiB each) written unread": f"{fetches[0]} ({mib(fetches[1])})",
        "pipelined Produce (512 KiB) written unread": f"{produces[0]} ({mib(produces[1])})",
        "pipelined Metadata written unread": f"{metadata[0]} ({mib(metadata[1])})",
        "suite time": f"{took:.0f} s",
        "round trip afterwards": f"{rt:.2f} s",
        "RSS at start": mib(rss_at_start),
        "RSS before/peak/after": f"{mib(rss.before)} / {mib(rss.peak)} / {mib(rss.after)}",
        "RSS growth (peak - before)": mib(rss.peak - rss.before),
        "RSS samples": rss.samples,
        "RSS peak by phase": {k: mib(v) for k, v in rss.phase_peaks.items()},
    }
    report("hostile frames", figures)
    if rss.peak - rss.before > RSS_BUDGET:
        raise CheckFailed(f"RSS grew {mib(rss.peak - rss.before)} (budget {mib(RSS_BUDGET)})")
    return figures
