"""A minimal Kafka client for the Spark source and sink, over kafkars' Rust client
(`kafkars-client`): Metadata and ListOffsets (planning, on the driver), CreateTopics and
OffsetFetch (the exactly-once sink's markers) go through `kafkars._core.BrokerConnection`
as the codec's dicts; Fetch is `kafkars._core.ArrowFetcher`, which sends the request,
reads the response and decodes its record batches into Arrow in Rust with the GIL
released, so record bytes go from the socket to the decoder without becoming Python
objects (the sink's `kafkars._core.Producer` does the same the other way). `security`
(TLS and SASL) is a `kafkars.security.client_auth.ClientSecurity`; None is PLAINTEXT.

No threads, nothing started at import: Spark executors fork their Python workers, and
each read task opens and closes its own connections.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafkars import _core
from kafkars.protocol import Errors
from kafkars.security.client_auth import PLAINTEXT, AuthenticationError, ClientSecurity

EARLIEST = -2
LATEST = -1

_T = TypeVar("_T")
_METADATA, _LIST_OFFSETS, _OFFSET_FETCH, _FIND_COORDINATOR, _CREATE_TOPICS = 3, 2, 9, 10, 19
#: How long driver-side planning and the sink's own requests retry a broker that died or
#: a leader that moved before they fail (Kafka's default.api.timeout.ms is 60 s).
PLANNING_TIMEOUT = 60.0
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
# What a coordinator request may wait out: the coordinator loading, moving, or (for
# OffsetFetch with require_stable) a transaction's offsets not settled yet.
_COORDINATOR_RETRIABLE = {
    int(e)
    for e in (
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.UNSTABLE_OFFSET_COMMIT,
        Errors.NOT_CONTROLLER,
        Errors.REQUEST_TIMED_OUT,
    )
}


class KafkaError(Exception):
    """A Kafka error code from the broker. args: (code, message)."""

    @property
    def code(self) -> int:
        return int(self.args[0])

    def __str__(self) -> str:
        return f"{self.args[1]} ({_error_name(self.code)})" if len(self.args) > 1 else ""


class TopicAuthorizationError(KafkaError):
    """The broker's ACLs refuse `operation` (Kafka's name: Describe, Read, Write) on a
    topic: one line saying which, raised at once (retrying cannot help)."""

    def __init__(self, topic: str, operation: str) -> None:
        super().__init__(
            int(Errors.TOPIC_AUTHORIZATION_FAILED), f"Not authorized to {operation} topic {topic!r}"
        )
        self.topic = topic
        self.operation = operation


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return f"error {code}"


def is_retriable(code: int) -> bool:
    """Whether a Fetch or ListOffsets error may clear up (a leader moving, a broker
    starting): Kafka's retriable errors the readers wait out."""
    return code in _RETRIABLE


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
    security: ClientSecurity = field(default=PLAINTEXT, repr=False)
    _conn: _core.BrokerConnection | None = field(default=None, repr=False)

    def connect(self) -> _core.BrokerConnection:
        """The connection, opened (TLS and SASL done) if it is not; OSError if it cannot be."""
        if self._conn is None or self._conn.closed:
            self._conn = self.security.connect(
                (self.host, self.port), timeout_s=self.timeout, client_id=self.client_id
            )
        return self._conn

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Sends one request and returns its response, both as the codec's dicts."""
        conn = self.connect()
        try:
            return conn.call(api_key, version, body)
        except ValueError as e:
            # A response that cannot be read (or a size out of range): a broken peer.
            self.close()
            raise KafkaError(Errors.CORRUPT_MESSAGE, str(e)) from None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class KafkaClient:
    """Connections to the brokers of one cluster, found from `bootstrap_servers`, each
    with the TLS and SASL of `security` (None: PLAINTEXT), reading at `isolation_level`
    (0 read_uncommitted; 1 read_committed: `latest` is the last stable offset, fetches
    stop there and leave aborted transactions out)."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        timeout: float = 30.0,
        security: ClientSecurity | None = None,
        isolation_level: int = 0,
    ) -> None:
        self.timeout = timeout
        self.security = security or PLAINTEXT
        self.isolation_level = isolation_level
        self.bootstrap = [_host_port(s) for s in bootstrap_servers.split(",") if s.strip()]
        if not self.bootstrap:
            raise ValueError("kafka.bootstrap.servers is empty")
        self.brokers: dict[int, tuple[str, int]] = {}
        self._conns: dict[tuple[str, int], Connection] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.controller_id = -1
        self._fetchers: dict[tuple[str, int], Any] = {}

    def _conn(self, addr: tuple[str, int]) -> Connection:
        c = self._conns.get(addr)
        if c is None:
            c = self._conns[addr] = Connection(
                addr[0], addr[1], self.timeout, security=self.security
            )
        return c

    def _any(self) -> Connection:
        last: Exception | None = None
        for addr in list(self.brokers.values()) + self.bootstrap:
            c = self._conn(addr)
            try:
                c.connect()
                return c
            except AuthenticationError:
                raise  # wrong settings: another broker would refuse them too
            except OSError as e:
                last = e
        raise ConnectionError(f"no broker reachable in {self.bootstrap}: {last}")

    def retrying(self, call: Callable[[], _T], *, timeout: float = PLANNING_TIMEOUT) -> _T:
        """`call()`, again after a connection error or a retriable Kafka error (a broker
        that died, a leader that moved: the failed call dropped what it had cached, so
        the next goes to another broker), with Kafka's backoff, for at most `timeout`
        seconds. A refused login or a denied topic fails at once."""
        deadline = time.monotonic() + timeout
        delay = 0.1
        while True:
            try:
                return call()
            except AuthenticationError:
                raise
            except KafkaError as e:
                if not (is_retriable(e.code) or e.code in _COORDINATOR_RETRIABLE):
                    raise
                if time.monotonic() + delay > deadline:
                    raise
            except OSError:
                if time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def metadata(self, topics: list[str] | None = None) -> dict[str, list[PartitionInfo]]:
        """Partitions per topic (all topics when `topics` is None); Metadata v1. A broker
        that fails is closed and the next one (known brokers, then the bootstrap servers)
        asked; when none answers, again with backoff (`retrying`)."""
        return self.retrying(lambda: self._metadata(topics))

    def _metadata(self, topics: list[str] | None) -> dict[str, list[PartitionInfo]]:
        wanted = None if topics is None else [{"name": t} for t in topics]
        r: dict[str, Any] | None = None
        last: Exception | None = None
        for addr in dict.fromkeys(list(self.brokers.values()) + self.bootstrap):
            conn = self._conn(addr)
            try:
                r = conn.request(_METADATA, 1, {"topics": wanted})
                break
            except AuthenticationError:
                raise
            except OSError as e:
                conn.close()  # a broker gone since: try the next
                last = e
        if r is None:
            raise ConnectionError(f"no broker reachable in {self.bootstrap}: {last}")
        self.controller_id = r.get("controller_id", -1)
        for b in r["brokers"]:
            self.brokers[b["node_id"]] = (b["host"], b["port"])
        out: dict[str, list[PartitionInfo]] = {}
        for t in r["topics"]:
            err, name = t["error_code"], t["name"] or ""
            parts = []
            for p in t["partitions"]:
                parts.append(
                    PartitionInfo(name, p["partition_index"], p["leader_id"], p["error_code"])
                )
                self.leaders[(name, p["partition_index"])] = p["leader_id"]
            if err == Errors.TOPIC_AUTHORIZATION_FAILED:
                raise TopicAuthorizationError(name, "Describe")
            if err == 0 or parts:
                out[name] = sorted(parts, key=lambda x: x.partition)
            elif err != Errors.UNKNOWN_TOPIC_OR_PARTITION:  # an unknown topic is left out
                raise KafkaError(err, f"metadata for topic {name!r}")
        return out

    def _leader_conn(self, topic: str, partition: int) -> Connection:
        leader = self.leaders.get((topic, partition))
        if leader is None or leader not in self.brokers:
            self._metadata([topic])
            leader = self.leaders.get((topic, partition))
        if leader is None or leader < 0 or leader not in self.brokers:
            raise KafkaError(Errors.LEADER_NOT_AVAILABLE, f"no leader for {topic}-{partition}")
        return self._conn(self.brokers[leader])

    def list_offsets(self, requests: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Offsets for `{(topic, partition): timestamp}` (-2 earliest, -1 latest, or a ms
        timestamp, giving -1 when no record is that late); ListOffsets v2. A leader that
        died or moved is forgotten and the request retried on the new one (`retrying`)."""
        return self.retrying(lambda: self._list_offsets(requests))

    def _list_offsets(self, requests: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        by_leader: dict[tuple[str, int], dict[tuple[str, int], int]] = {}
        for tp, ts in requests.items():
            conn = self._leader_conn(*tp)
            by_leader.setdefault((conn.host, conn.port), {})[tp] = ts
        out: dict[tuple[str, int], int] = {}
        for addr, reqs in by_leader.items():
            topics: dict[str, list[tuple[int, int]]] = {}
            for (t, p), ts in reqs.items():
                topics.setdefault(t, []).append((p, ts))
            body = {
                "replica_id": -1,
                "isolation_level": self.isolation_level,
                "topics": [
                    {
                        "name": t,
                        "partitions": [{"partition_index": p, "timestamp": ts} for p, ts in ps],
                    }
                    for t, ps in topics.items()
                ],
            }
            try:
                r = self._conn(addr).request(_LIST_OFFSETS, 2, body)
            except OSError:
                for tp in reqs:
                    self.forget_leader(*tp)
                raise
            for t in r["topics"]:
                for p in t["partitions"]:
                    if p["error_code"] == Errors.TOPIC_AUTHORIZATION_FAILED:
                        raise TopicAuthorizationError(t["name"], "Describe")
                    if p["error_code"]:
                        if is_retriable(p["error_code"]):
                            self.forget_leader(t["name"], p["partition_index"])
                        raise KafkaError(
                            p["error_code"], f"ListOffsets {t['name']}-{p['partition_index']}"
                        )
                    out[(t["name"], p["partition_index"])] = p["offset"]
        return out

    def create_topic(self, name: str, partitions: int) -> bool:
        """CreateTopics at the controller (the broker's default replication factor);
        False when the topic exists already. Retries a controller that moved or died."""

        def create() -> bool:
            self._metadata([])
            addr = self.brokers.get(self.controller_id)
            conn = self._conn(addr) if addr is not None else self._any()
            body = {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": -1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": int(self.timeout * 1000),
                "validate_only": False,
            }
            try:
                (t,) = conn.request(_CREATE_TOPICS, 4, body)["topics"]
            except OSError:
                conn.close()
                raise
            if t["error_code"] == Errors.TOPIC_ALREADY_EXISTS:
                return False
            if t["error_code"] == Errors.TOPIC_AUTHORIZATION_FAILED:
                raise TopicAuthorizationError(name, "Create")
            if t["error_code"]:
                raise KafkaError(t["error_code"], t.get("error_message") or f"create {name!r}")
            return True

        return self.retrying(create)

    def committed(self, group: str, topic: str, partition: int) -> tuple[int, str | None]:
        """The offset and metadata `group` committed for `topic`-`partition` (-1 and None
        when none), read stable: a transaction's pending offsets are waited for
        (OffsetFetch v7, require_stable), so the answer is settled."""

        def fetch() -> tuple[int, str | None]:
            c = self._any().request(_FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
            if c["error_code"]:
                raise KafkaError(c["error_code"], f"FindCoordinator for group {group!r}")
            conn = self._conn((c["host"], c["port"]))
            body = {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": [partition]}],
                "require_stable": True,
            }
            try:
                r = conn.request(_OFFSET_FETCH, 7, body)
            except OSError:
                conn.close()
                raise
            if r["error_code"]:
                raise KafkaError(r["error_code"], f"OffsetFetch for group {group!r}")
            for t in r["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        raise KafkaError(p["error_code"], f"OffsetFetch {topic}-{partition}")
                    return p["committed_offset"], p["metadata"]
            return -1, None

        return self.retrying(fetch)

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
        """The records of `[offset, end_offset)` in the batches from `offset` on (Fetch v5 at
        the client's isolation level; control batches left out), fetched and decoded in
        Rust. Under read_committed `high_watermark` is the last stable offset.

        The leader comes from cached metadata; a connection error or a retriable error
        (NOT_LEADER_OR_FOLLOWER, ...) forgets it, so the next call asks the cluster
        again and goes to the new leader. A denied Read raises TopicAuthorizationError."""
        conn = self._leader_conn(topic, partition)
        addr = (conn.host, conn.port)
        fetcher = self._fetchers.get(addr)
        if fetcher is None:
            fetcher = _core.ArrowFetcher(
                conn.host,
                conn.port,
                int(self.timeout * 1000),
                security=self.security.settings(),
            )
            self._fetchers[addr] = fetcher
        try:
            error, hw, log_start, nxt, capsules = fetcher.fetch(
                topic,
                partition,
                offset,
                end_offset,
                include_headers=include_headers,
                max_bytes=max_bytes,
                isolation_level=self.isolation_level,
            )
        except OSError:
            self.forget_leader(topic, partition)
            raise
        if error == Errors.TOPIC_AUTHORIZATION_FAILED:
            raise TopicAuthorizationError(topic, "Read")
        if error in _RETRIABLE:
            self.forget_leader(topic, partition)
        return FetchedPartition(error, hw, log_start, nxt, capsules)

    def forget_leader(self, topic: str, partition: int) -> None:
        """Drops the cached leader of a partition and its connections: the next request
        for it refreshes the metadata (a broker that died or lost the leadership)."""
        leader = self.leaders.pop((topic, partition), None)
        addr = self.brokers.get(leader) if leader is not None else None
        if addr is not None:
            fetcher = self._fetchers.pop(addr, None)
            if fetcher is not None:
                fetcher.close()
            conn = self._conns.get(addr)
            if conn is not None:
                conn.close()

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


def bootstrap_addresses(servers: str) -> list[tuple[str, int]]:
    """`bootstrap.servers` as `(host, port)` pairs."""
    return [_host_port(s) for s in servers.split(",") if s.strip()]


def _host_port(s: str) -> tuple[str, int]:
    host, _, port = s.strip().rpartition(":")
    return (host.strip("[]") or "localhost", int(port))
