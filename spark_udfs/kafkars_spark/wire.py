"""A minimal Kafka client for the Spark readers. Metadata and ListOffsets (planning, on
the driver) are plain sockets and `struct`; Fetch is `kafkars._core.ArrowFetcher`, which
sends the request, reads the response and decodes its record batches into Arrow in Rust
with the GIL released, so record bytes go from the socket to the decoder without
becoming Python objects.

No threads, nothing started at import: Spark executors fork their Python workers, and
each read task opens and closes its own connections.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from typing import Any

from kafkars import _core
from kafkars.server.errors import Errors

EARLIEST = -2
LATEST = -1

_METADATA, _LIST_OFFSETS = 3, 2
_RETRIABLE = {
    int(e)
    for e in (
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.REQUEST_TIMED_OUT,
        Errors.REPLICA_NOT_AVAILABLE,
        Errors.NETWORK_EXCEPTION,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
    )
}


class KafkaError(Exception):
    """A Kafka error code from the broker. args: (code, message)."""

    @property
    def code(self) -> int:
        return int(self.args[0])


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def i8(self) -> int:
        return self._take(">b")

    def i16(self) -> int:
        return self._take(">h")

    def i32(self) -> int:
        return self._take(">i")

    def i64(self) -> int:
        return self._take(">q")

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def bytes_(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    error: int


@dataclass
class FetchedPartition:
    """One partition of a Fetch response, its records already decoded in Rust."""

    error: int
    high_watermark: int
    log_start_offset: int
    #: The offset after the last complete batch received; None when none came.
    next_offset: int | None
    #: The `(schema, array)` Arrow capsules of the rows in the wanted range, or None.
    capsules: tuple[Any, Any] | None


@dataclass
class Connection:
    host: str
    port: int
    timeout: float = 30.0
    client_id: str = "kafkars-spark"
    _sock: socket.socket | None = field(default=None, repr=False)
    _correlation: int = 0

    def request(self, api_key: int, version: int, body: bytes) -> _Reader:
        if self._sock is None:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation += 1
        header = struct.pack(">hhi", api_key, version, self._correlation) + _str(self.client_id)
        msg = header + body
        self._sock.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", self._recv(4))[0]
        r = _Reader(self._recv(size))
        if r.i32() != self._correlation:
            raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, "correlation id mismatch")
        return r

    def _recv(self, n: int) -> bytes:
        assert self._sock is not None
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            got += k
        return bytes(buf)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class KafkaClient:
    """Connections to the brokers of one cluster, found from `bootstrap_servers`."""

    def __init__(self, bootstrap_servers: str, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.bootstrap = [_host_port(s) for s in bootstrap_servers.split(",") if s.strip()]
        if not self.bootstrap:
            raise ValueError("kafka.bootstrap.servers is empty")
        self.brokers: dict[int, tuple[str, int]] = {}
        self._conns: dict[tuple[str, int], Connection] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self._fetchers: dict[tuple[str, int], Any] = {}

    def _conn(self, addr: tuple[str, int]) -> Connection:
        c = self._conns.get(addr)
        if c is None:
            c = self._conns[addr] = Connection(addr[0], addr[1], self.timeout)
        return c

    def _any(self) -> Connection:
        last: Exception | None = None
        for addr in list(self.brokers.values()) + self.bootstrap:
            c = self._conn(addr)
            try:
                if c._sock is None:
                    c._sock = socket.create_connection(addr, timeout=self.timeout)
                return c
            except OSError as e:
                last = e
        raise ConnectionError(f"no broker reachable in {self.bootstrap}: {last}")

    def metadata(self, topics: list[str] | None = None) -> dict[str, list[PartitionInfo]]:
        """Partitions per topic (all topics when `topics` is None); Metadata v1."""
        if topics is None:
            body = struct.pack(">i", -1)
        else:
            body = struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)
        r = self._any().request(_METADATA, 1, body)
        for _ in range(r.i32()):
            node, host, port = r.i32(), r.string(), r.i32()
            r.string()  # rack
            self.brokers[node] = (host or "", port)
        r.i32()  # controller
        out: dict[str, list[PartitionInfo]] = {}
        for _ in range(r.i32()):
            err, name = r.i16(), r.string() or ""
            r.i8()  # is_internal
            parts = []
            for _ in range(r.i32()):
                perr, p, leader = r.i16(), r.i32(), r.i32()
                for _ in range(2):  # replicas, isr
                    for _ in range(r.i32()):
                        r.i32()
                parts.append(PartitionInfo(name, p, leader, perr))
                self.leaders[(name, p)] = leader
            if err == 0 or parts:
                out[name] = sorted(parts, key=lambda x: x.partition)
            elif err != Errors.UNKNOWN_TOPIC_OR_PARTITION:  # an unknown topic is left out
                raise KafkaError(err, f"metadata for topic {name!r}")
        return out

    def _leader_conn(self, topic: str, partition: int) -> Connection:
        leader = self.leaders.get((topic, partition))
        if leader is None or leader not in self.brokers:
            self.metadata([topic])
            leader = self.leaders.get((topic, partition))
        if leader is None or leader < 0 or leader not in self.brokers:
            raise KafkaError(Errors.LEADER_NOT_AVAILABLE, f"no leader for {topic}-{partition}")
        return self._conn(self.brokers[leader])

    def list_offsets(self, requests: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Offsets for `{(topic, partition): timestamp}` (-2 earliest, -1 latest, or a ms
        timestamp, giving -1 when no record is that late); ListOffsets v1."""
        by_leader: dict[tuple[str, int], dict[tuple[str, int], int]] = {}
        for tp, ts in requests.items():
            conn = self._leader_conn(*tp)
            by_leader.setdefault((conn.host, conn.port), {})[tp] = ts
        out: dict[tuple[str, int], int] = {}
        for addr, reqs in by_leader.items():
            topics: dict[str, list[tuple[int, int]]] = {}
            for (t, p), ts in reqs.items():
                topics.setdefault(t, []).append((p, ts))
            body = struct.pack(">ii", -1, len(topics))
            for t, ps in topics.items():
                body += _str(t) + struct.pack(">i", len(ps))
                body += b"".join(struct.pack(">iq", p, ts) for p, ts in ps)
            r = self._conn(addr).request(_LIST_OFFSETS, 1, body)
            for _ in range(r.i32()):
                t = r.string() or ""
                for _ in range(r.i32()):
                    p, err = r.i32(), r.i16()
                    r.i64()  # timestamp
                    off = r.i64()
                    if err:
                        raise KafkaError(err, f"ListOffsets {t}-{p}")
                    out[(t, p)] = off
        return out

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        end_offset: int,
        *,
        include_headers: bool,
        max_bytes: int = 8 << 20,
    ) -> FetchedPartition:
        """The records of `[offset, end_offset)` in the batches from `offset` on (Fetch v5,
        read_uncommitted; control batches left out), fetched and decoded in Rust."""
        conn = self._leader_conn(topic, partition)
        addr = (conn.host, conn.port)
        fetcher = self._fetchers.get(addr)
        if fetcher is None:
            fetcher = _core.ArrowFetcher(conn.host, conn.port, int(self.timeout * 1000))
            self._fetchers[addr] = fetcher
        error, hw, log_start, nxt, capsules = fetcher.fetch(
            topic,
            partition,
            offset,
            end_offset,
            include_headers=include_headers,
            max_bytes=max_bytes,
        )
        if error in _RETRIABLE:
            self.leaders.pop((topic, partition), None)
        return FetchedPartition(error, hw, log_start, nxt, capsules)

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()
        for f in self._fetchers.values():
            f.close()
        self._fetchers.clear()

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _host_port(s: str) -> tuple[str, int]:
    host, _, port = s.strip().rpartition(":")
    return (host.strip("[]") or "localhost", int(port))
