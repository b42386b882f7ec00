"""The same request to Apache Kafka and to kafkars, and what differs in the answers.

Both responses are decoded by one codec (kafka-protocol, through `kafkars._core`), then
normalised for what legitimately differs between two clusters: generated ids (cluster,
topic, member, producer-session ids map to placeholders in order of appearance, so the
same structure gives the same placeholders), ports, wall-clock timestamps, throttle
times, and error-message wording (null, empty and non-empty stay distinct). Lists of
structs are compared as sets: the protocol gives their order no meaning. Record sets are
compared record by record (offsets, keys, values, headers, control and transactional
flags), their timestamps aside.

`Pair.check()` sends a request at every version both brokers support of those kafkars
advertises, records each outcome in the session's `Report`, and fails on a difference
that `known.KNOWN_DIFFERENCES` does not explain.
"""

from __future__ import annotations

import json
import re
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkars import _core
from kafkars.testing.raw_frames import recv_frame

API_VERSIONS = 18
ZERO_UUID = uuid.UUID(int=0)

# Fields whose value is an id one cluster generated: equal structure, different values.
GENERATED_IDS = {
    "cluster_id",
    "member_id",
    "session_id",
    "incarnation_id",
    "producer_id",
}
# Fields that hold an id of another field's kind (a group's leader is a member id).
SAME_KIND = {"leader": "member_id"}
GENERATED_IDS |= set(SAME_KIND)
WALL_CLOCK = re.compile(r"(^|_)timestamp$|^log_append_time_ms$|_time_ms$|^last_heartbeat")
# Not timestamps although the names end like one.
DURATIONS = {"transaction_timeout_ms", "session_timeout_ms", "rebalance_timeout_ms"}
IGNORED = {"throttle_time_ms"}
# Lists of names that are sets (the protocol gives their order no meaning).
UNORDERED = {"mechanisms"}
# Sizes of the shared disk, which change between two calls.
DISK_BYTES = {"total_bytes", "usable_bytes"}
# Text that names this run's ports and temporary paths.
_PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")
_TMP = re.compile(r"/tmp/[^,\s]*")


class Connection:
    """One socket to one broker; requests and responses as dicts."""

    def __init__(self, bootstrap: str, client_id: str = "differential") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.client_id = client_id
        self.correlation = 0

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self.correlation += 1
        frame = _core.protocol.encode_request(
            api_key, version, self.correlation, self.client_id, body
        )
        self.sock.sendall(frame)
        return self.correlation

    def receive(self, api_key: int, version: int, correlation: int) -> dict[str, Any]:
        frame = recv_frame(self.sock)
        return dict(_core.protocol.decode_response(api_key, version, correlation, frame))

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.receive(api_key, version, self.send(api_key, version, body))

    def call_raw(self, frame: bytes) -> bytes | None:
        """Sends a hand-made frame; the response frame, or None when the broker closes."""
        self.sock.sendall(frame)
        try:
            return recv_frame(self.sock)
        except (ConnectionError, OSError):
            return None

    def close(self) -> None:
        self.sock.close()


def supported_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    conn = Connection(bootstrap)
    try:
        response = conn.call(
            API_VERSIONS,
            3,
            {"client_software_name": "differential", "client_software_version": "1"},
        )
    finally:
        conn.close()
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}


def _tmp_path(match: re.Match[str]) -> str:
    """A temporary path, keeping the name of a JBOD dir (`jbod-a`) the tests chose."""
    name = match.group(0).rstrip("/").rsplit("/", 1)[-1]
    return f"<tmp>/{name}" if name.startswith("jbod-") else "<tmp>"


class Normalizer:
    """Maps one broker's generated ids to placeholders in order of appearance."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, Any], str] = {}

    def placeholder(self, kind: str, value: Any) -> str:
        key = (kind, value)
        if key not in self.ids:
            self.ids[key] = f"<{kind}#{sum(1 for k in self.ids if k[0] == kind) + 1}>"
        return self.ids[key]

    def __call__(self, value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in sorted(value.items()) if k not in IGNORED}
        if isinstance(value, list):
            items = [self(v, name) for v in value]
            if name in UNORDERED:
                return sorted(items)
            if items and all(isinstance(i, dict) for i in items):
                items.sort(key=lambda i: json.dumps(i, sort_keys=True, default=str))
            return items
        if isinstance(value, _core.RecordSet):
            return records(value)
        if isinstance(value, uuid.UUID):
            # Not numbered: one broker may have ids where the other has none yet (an
            # auto-created topic), which would shift every later number.
            return "<zero-uuid>" if value == ZERO_UUID else "<uuid>"
        if name == "port":
            return "<port>"
        if name == "host":
            return "<host>"
        if name in ("error_message", "message", "documentation") and isinstance(value, str):
            return "<message>" if value else ""
        if name in DISK_BYTES and isinstance(value, int) and value > 0:
            return "<bytes>"
        if name in GENERATED_IDS and value not in (None, "", 0, -1):
            return self.placeholder(SAME_KIND.get(name, name), value)
        if (
            name not in DURATIONS
            and WALL_CLOCK.search(name)
            and isinstance(value, int)
            and value > 0
        ):
            return "<time>"
        if isinstance(value, bytes):
            return value.hex()
        if isinstance(value, str):
            return _TMP.sub(_tmp_path, _PORT.sub(r"\1:<port>", value))
        return value


def records(record_set: Any) -> list[dict[str, Any]]:
    out = []
    for batch in _core.decode_batches(record_set.to_bytes()):
        out.append(
            {
                "base_offset": batch.base_offset,
                "last_offset": batch.last_offset,
                "is_control": batch.is_control,
                "is_transactional": batch.is_transactional,
                "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence,
                "compression": batch.compression,
                "timestamp_type": batch.timestamp_type,
                "records": [
                    {
                        "offset": r.offset,
                        "key": r.key,
                        "value": r.value,
                        "headers": r.headers,
                    }
                    for r in batch.records()
                ],
            }
        )
    return out


# A list element is named by the first of these fields it has, so a missing or extra
# element shows as one difference, not as every later element shifted by one.
ELEMENT_KEYS = (
    "name",
    "topic",
    "topic_name",
    "partition_index",
    "partition",
    "partition_id",
    "api_key",
    "group_id",
    "transactional_id",
    "resource_name",
    "log_dir",
    "user",
    "node_id",
    "broker_id",
    "key",
    "offset",
    "base_offset",
)


def _element_key(value: Any, index: int) -> str:
    if isinstance(value, dict):
        for field_name in ELEMENT_KEYS:
            if field_name in value and isinstance(value[field_name], (str, int)):
                return f"{field_name}={value[field_name]}"
    return str(index)


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Path → leaf; list elements under `[key=value]` (or `[i]`), their count under `[#]`."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{path}.{k}" if path else k))
        return out
    if isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        out = {f"{path}[#]": len(value)}
        seen: set[str] = set()
        for i, v in enumerate(value):
            key = _element_key(v, i)
            key = key if key not in seen else f"{key}#{i}"
            seen.add(key)
            out.update(flatten(v, f"{path}[{key}]"))
        return out
    return {path: value}


def explanation(path: str, known: dict[str, str]) -> str | None:
    """The reason `known` gives for a difference at `path`: keyed by the generic path, or
    by a glob over the full one (`results[*].configs[name=listeners].*`)."""
    if generic(path) in known:
        return known[generic(path)]
    for pattern, reason in known.items():
        if "*" in pattern and re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), path):
            return reason
    return None


def generic(path: str) -> str:
    """`topics[name=x].partitions[0].error_code` → `topics[].partitions[].error_code`."""
    return re.sub(r"\[[^\]#][^\]]*\]", "[]", path)


def differences(kafka: Any, kafkars: Any) -> dict[str, tuple[Any, Any]]:
    """Leaf path → (Kafka's value, kafkars' value), for the leaves that differ; an element
    only one side has shows as one `<absent>` entry (its first leaf), not one per leaf."""
    a, b = flatten(kafka), flatten(kafkars)
    out: dict[str, tuple[Any, Any]] = {}
    absent_elements: set[str] = set()
    for p in sorted(a.keys() | b.keys()):
        va, vb = a.get(p, ABSENT), b.get(p, ABSENT)
        if va == vb:
            continue
        if va is ABSENT or vb is ABSENT:
            element = p.rsplit("].", 1)[0]
            if element in absent_elements:
                continue
            absent_elements.add(element)
        out[p] = (va, vb)
    return out


def describe_failures(
    api: str, scenario: str, failures: list[tuple[int, dict[str, tuple[Any, Any]]]]
) -> str:
    """One block per distinct set of differences, naming the versions it was seen at."""
    by_paths: dict[str, list[int]] = {}
    texts: dict[str, str] = {}
    for version, differing in failures:
        key = json.dumps(sorted({generic(p) for p in differing}))
        by_paths.setdefault(key, []).append(version)
        texts.setdefault(
            key,
            "\n".join(f"    {p}: Kafka {a!r}, kafkars {b!r}" for p, (a, b) in differing.items()),
        )
    return "\n".join(
        f"{api} ({scenario}) at v{','.join(map(str, versions))}:\n{texts[key]}"
        for key, versions in by_paths.items()
    )


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


@dataclass
class Outcome:
    api: str
    version: int
    scenario: str
    differing: dict[str, tuple[Any, Any]]
    explained: dict[str, str]

    @property
    def unexplained(self) -> dict[str, tuple[Any, Any]]:
        return {p: v for p, v in self.differing.items() if explanation(p, self.explained) is None}


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    advertised: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    # Against Apache Kafka 3.9 in ZooKeeper mode (test_zookeeper_mode.py).
    zookeeper_outcomes: list[Outcome] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "zookeeper_outcomes": [
                {
                    "api": o.api,
                    "version": o.version,
                    "scenario": o.scenario,
                    "differing": {p: [repr(a), repr(b)] for p, (a, b) in o.differing.items()},
                }
                for o in self.zookeeper_outcomes
            ],
            "advertised": {
                broker: {str(k): list(v) for k, v in sorted(versions.items())}
                for broker, versions in self.advertised.items()
            },
            "outcomes": [
                {
                    "api": o.api,
                    "version": o.version,
                    "scenario": o.scenario,
                    "differing": {
                        p: [repr(a), repr(b)] for p, (a, b) in sorted(o.differing.items())
                    },
                    "explained": o.explained,
                }
                for o in self.outcomes
            ],
        }


_NAMES = {key: name for name, (key, _, _) in _core.protocol.api_keys().items()}


def api_name(api_key: int) -> str:
    return _NAMES.get(api_key, str(api_key))


Body = dict[str, Any] | Callable[[int], dict[str, Any]]


@dataclass(frozen=True)
class TopicIdOf:
    """In a request body: the id each broker gave topic `name` (they differ)."""

    name: str


class Pair:
    """Apache Kafka and kafkars, one connection to each, and the report to write to."""

    def __init__(
        self,
        kafka: str,
        kafkars: str,
        report: Report,
        known: dict[str, dict[str, str]],
    ) -> None:
        self.addresses = {"kafka": kafka, "kafkars": kafkars}
        self.report = report
        self.known = known
        self.conns = {name: Connection(addr) for name, addr in self.addresses.items()}
        self.normalizers = {name: Normalizer() for name in self.addresses}
        self.kafka_versions = report.advertised.setdefault("kafka", supported_versions(kafka))
        self.kafkars_versions = report.advertised.setdefault("kafkars", supported_versions(kafkars))

    def versions(self, api_key: int) -> list[int]:
        """The versions of `api_key` kafkars advertises, where Kafka has them too and the
        wire codec encodes them (both list Produce from v0 but serve it from v3)."""
        ours = self.kafkars_versions.get(api_key)
        if ours is None:
            return []
        theirs = self.kafka_versions.get(api_key, (0, -1))
        codec = {key: (low, high) for key, low, high in _core.protocol.api_keys().values()}
        low, high = codec.get(api_key, (0, -1))
        return [
            v
            for v in range(ours[0], ours[1] + 1)
            if theirs[0] <= v <= theirs[1] and low <= v <= high
        ]

    def topic_id(self, broker: str, topic: str) -> uuid.UUID:
        response = self.conns[broker].call(3, 12, {"topics": [{"name": topic}]})
        [entry] = response["topics"]
        assert entry["error_code"] == 0, entry
        return uuid.UUID(str(entry["topic_id"]))

    def _for_broker(self, broker: str, value: Any) -> Any:
        if isinstance(value, TopicIdOf):
            return self.topic_id(broker, value.name)
        if isinstance(value, dict):
            return {k: self._for_broker(broker, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._for_broker(broker, v) for v in value]
        return value

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Sends to both; the two raw responses, unnormalised, by broker."""
        both = {}
        for name, conn in self.conns.items():
            both[name] = conn.call(api_key, version, self._for_broker(name, body))
        return both

    def check(
        self,
        api_key: int,
        body: Body,
        *,
        scenario: str,
        versions: list[int] | None = None,
        known: dict[str, str] | None = None,
    ) -> list[dict[str, dict[str, Any]]]:
        """Sends `body` (or `body(version)`) at each version to both brokers and compares.
        Returns the raw responses per version; fails on an unexplained difference."""
        name = api_name(api_key)
        explained = {**self.known.get(name, {}), **(known or {})}
        failures = []
        answers = []
        for version in versions if versions is not None else self.versions(api_key):
            request = body(version) if callable(body) else body
            raw = self.call(api_key, version, request)
            answers.append(raw)
            differing = differences(
                self.normalizers["kafka"](raw["kafka"]),
                self.normalizers["kafkars"](raw["kafkars"]),
            )
            reasons = {p: explanation(p, explained) for p in differing}
            outcome = Outcome(
                name,
                version,
                scenario,
                differing,
                {generic(p): r for p, r in reasons.items() if r is not None},
            )
            self.report.outcomes.append(outcome)
            if outcome.unexplained:
                failures.append((version, outcome.unexplained))
        assert not failures, describe_failures(name, scenario, failures)
        return answers

    def reconnect(self) -> None:
        """Fresh connections (a SASL exchange, once started, owns its connection)."""
        self.close()
        self.conns = {name: Connection(addr) for name, addr in self.addresses.items()}

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()
