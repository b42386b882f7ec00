"""Storage both ways: Apache Kafka's partition files served by kafkars, and kafkars'
served by Apache Kafka 4.1.1, answer for answer.

One run of each broker writes the same data set with real clients (confluent-kafka): keyed
records with headers in several batches per codec, a committed and an aborted transaction
(control batches, an aborted range), a compacted topic of repeated keys over several
segments (uncleaned), the same records cleaned by the writer's cleaner, and a topic of
LogAppendTime. What the writer serves is recorded: every Fetch v12 from offset 0 to the end
(read_uncommitted and read_committed: batches byte for byte, high watermark, last stable
offset, log start offset, aborted transactions), ListOffsets (earliest, latest, max
timestamp, by timestamp, both isolation levels) and what confluent-kafka consumers read.
Both brokers stop cleanly (SIGTERM); each source partition's files are copied, but for
`partition.metadata` (the destination's topic id is kept: each names its own topic), into topics
the other broker created alike, in two restarts:

* `-a` (loaded as is): the destination keeps its `.kafka_cleanshutdown` marker and takes the
  copied log end offset as the partition's recovery point, so it trusts the copied
  `.index`, `.timeindex`, `.txnindex` and producer snapshots (Kafka's LogLoader recovers
  nothing after a clean shutdown; without the marker it would recover the segment holding
  the recovery point, the active one);
* `-b` (recovered): the marker is removed and the recovery point stays the empty topic's 0,
  so the destination recovers every copied segment: validates each batch, rebuilds the
  indexes, producer state and transaction index from the records.

Both take the source's `cleaner-offset-checkpoint` entry, so the destination does not clean
the cleaned log again; the high-watermark and log-start checkpoints keep the empty topic's
0 (the log start is the first segment's base offset either way, and a single-replica
leader's high watermark is its log end offset). The destination must serve exactly what the
writer did, both must have loaded the copies the way described (their logs say), and Kafka's
DumpLogSegments must read kafkars' files without an error, with each producer snapshot entry
holding its last marker's coordinator epoch, as Kafka's own files do.
"""

from __future__ import annotations

import re
import shutil
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars import _core
from kafkars.broker import Broker
from kafkars.testing.consume import read_to_end
from kafkars.testing.reference_kafka import ReferenceKafka, kafka_tool

pytestmark = pytest.mark.timeout(300)

FETCH, LIST_OFFSETS = 1, 2
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DAY_MS = 86_400_000
# name → (partitions, topic configs); the same on both brokers.
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "codecs": (2, {}),
    "txn": (1, {}),
    # Several segments (rolled by age); never cleaned while the test runs, so what each
    # broker serves is the files as written.
    "compacted": (
        1,
        {
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.compaction.lag.ms": str(DAY_MS),
        },
    ),
    # The same records, cleaned by the writer before it is recorded: offsets with gaps,
    # segments rewritten by the cleaner, a tombstone kept (delete.retention.ms).
    "cleaned": (
        1,
        {
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.compaction.lag.ms": "0",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": str(DAY_MS),
        },
    ),
    "appendtime": (1, {"message.timestamp.type": "LogAppendTime"}),
}
# What the cleaner leaves of the 5 rounds of 8 keys: round 3 (the last one in a rolled
# segment, its tombstone included) and round 4 (the active segment).
CLEANED_RECORDS = 16
COMMON = {
    "num.partitions": 1,
    "auto.create.topics.enable": False,
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "transaction.state.log.num.partitions": 1,
    "log.cleaner.backoff.ms": 200,
}
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
RECOVERY_POINTS = "recovery-point-offset-checkpoint"
CLEANER_OFFSETS = "cleaner-offset-checkpoint"


# -- the data set ----------------------------------------------------------------------


def _producer(bootstrap: str, **conf: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})


def _flush(producer: Producer, errors: list[Any]) -> None:
    assert producer.flush(30) == 0
    assert not errors, errors


def write_data_set(bootstrap: str, prefix: str) -> None:
    errors: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    # Keyed records with headers (one null-valued), three flushed batches per codec and
    # partition.
    for codec in CODECS:
        p = _producer(bootstrap, **{"compression.type": codec, "enable.idempotence": True})
        for round_ in range(3):
            for i in range(12):
                p.produce(
                    f"{prefix}codecs",
                    key=f"key-{i % 5}".encode(),
                    value=f"{codec} value {round_}/{i} ".encode() * (1 + i % 4),
                    partition=i % 2,
                    headers=[
                        ("codec", codec.encode()),
                        ("round", str(round_).encode()),
                        ("empty", None),
                    ],
                    on_delivery=delivered,
                )
            _flush(p, errors)

    # Transactions: committed, aborted, committed; plain records between them.
    plain = _producer(bootstrap)
    t = _producer(
        bootstrap,
        **{"transactional.id": f"storage-compat-{uuid.uuid4().hex[:8]}", "compression.type": "lz4"},
    )
    t.init_transactions(30)
    for n, (count, commit) in enumerate(((15, True), (10, False), (5, True))):
        t.begin_transaction()
        for i in range(count):
            t.produce(
                f"{prefix}txn",
                key=f"t{n}-{i}".encode(),
                value=f"{'committed' if commit else 'aborted'} {i}".encode(),
                headers=[("txn", str(n).encode())],
                on_delivery=delivered,
            )
        _flush(t, errors)
        if commit:
            t.commit_transaction(30)
        else:
            t.abort_transaction(30)
        plain.produce(f"{prefix}txn", key=b"plain", value=f"after {n}".encode())
        _flush(plain, errors)

    # Repeated keys, a tombstone, in segments rolled by age (segment.ms=100).
    c = _producer(bootstrap, **{"compression.type": "snappy"})
    for round_ in range(5):
        for i in range(8):
            tombstone = round_ == 3 and i == 2
            for kind in ("compacted", "cleaned"):
                c.produce(
                    f"{prefix}{kind}",
                    key=f"ck-{i}".encode(),
                    value=None if tombstone else f"v{round_}".encode(),
                    on_delivery=delivered,
                )
        _flush(c, errors)
        time.sleep(0.25)

    a = _producer(bootstrap, **{"compression.type": "zstd"})
    for i in range(20):
        a.produce(f"{prefix}appendtime", key=str(i).encode(), value=b"x" * i)
        if i % 7 == 6:
            _flush(a, errors)
    _flush(a, errors)


def create_topics(bootstrap: str, names: dict[str, str]) -> None:
    """`names`: topic → the TOPICS entry it is made like."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [
        NewTopic(name, TOPICS[kind][0], 1, config=dict(TOPICS[kind][1]))
        for name, kind in names.items()
    ]
    for future in admin.create_topics(new, operation_timeout=30).values():
        future.result(30)


# -- what a broker serves --------------------------------------------------------------


class Connection:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.correlation = 0

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation += 1
        frame = _core.protocol.encode_request(
            api_key, version, self.correlation, "storage-compat", body
        )
        self.sock.sendall(frame)
        size = struct.unpack(">i", self._read(4))[0]
        return dict(
            _core.protocol.decode_response(api_key, version, self.correlation, self._read(size))
        )

    def close(self) -> None:
        self.sock.close()


def describe_batch(batch: Any) -> dict[str, Any]:
    return {
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "magic": batch.magic,
        "crc": batch.crc,
        "attributes": batch.attributes,
        "compression": batch.compression,
        "timestamp_type": batch.timestamp_type,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "base_timestamp": batch.base_timestamp,
        "max_timestamp": batch.max_timestamp,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "records": [
            (r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes)
            for r in batch.records()
        ],
        "bytes": batch.to_bytes().hex(),
    }


def fetch_once(conn: Connection, topic: str, partition: int, offset: int, isolation: int) -> Any:
    response = conn.call(
        FETCH,
        12,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": isolation,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    assert response["error_code"] == 0, response
    [t] = response["responses"]
    [p] = t["partitions"]
    return p


def fetch_all(conn: Connection, topic: str, partition: int, isolation: int) -> list[Any]:
    """Every Fetch from offset 0 until the end (the high watermark, or the last stable
    offset in read_committed), one answer per request."""
    answers = []
    offset = 0
    for _ in range(1000):
        p = fetch_once(conn, topic, partition, offset, isolation)
        raw = p["records"].to_bytes() if p["records"] is not None else b""
        batches = _core.decode_batches(raw)
        answers.append(
            {
                "fetch_offset": offset,
                "error_code": p["error_code"],
                "high_watermark": p["high_watermark"],
                "last_stable_offset": p["last_stable_offset"],
                "log_start_offset": p["log_start_offset"],
                "aborted_transactions": sorted(
                    (a["producer_id"], a["first_offset"]) for a in p["aborted_transactions"] or []
                ),
                "batches": [describe_batch(b) for b in batches],
            }
        )
        end = p["high_watermark"] if isolation == 0 else p["last_stable_offset"]
        if not batches or batches[-1].last_offset + 1 >= end:
            return answers
        offset = batches[-1].last_offset + 1
    raise AssertionError(f"{topic}-{partition}: no end after 1000 fetches")


def list_offsets(conn: Connection, topic: str, partition: int, timestamps: list[int]) -> Any:
    out = {}
    for isolation in (0, 1):
        for ts in timestamps:
            response = conn.call(
                LIST_OFFSETS,
                8,
                {
                    "replica_id": -1,
                    "isolation_level": isolation,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partition_index": partition,
                                    "current_leader_epoch": -1,
                                    "timestamp": ts,
                                }
                            ],
                        }
                    ],
                    "timeout_ms": 1000,
                },
            )
            [p] = response["topics"][0]["partitions"]
            out[(isolation, ts)] = (p["error_code"], p["timestamp"], p["offset"])
    return out


def consume(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[Any]:
    records = read_to_end(bootstrap, topic, partitions, isolation_level=isolation, strict=True)
    fields = [
        (m.partition(), m.offset(), m.timestamp(), m.key(), m.value(), m.headers()) for m in records
    ]
    return sorted(fields, key=lambda r: (r[0], r[1]))


@dataclass
class Served:
    """What one broker served for one topic (keyed by the data set's topic kind)."""

    fetches: dict[tuple[int, int], list[Any]] = field(default_factory=dict)
    offsets: dict[int, Any] = field(default_factory=dict)
    consumed: dict[str, list[Any]] = field(default_factory=dict)


def record(bootstrap: str, topic: str, kind: str) -> Served:
    partitions = TOPICS[kind][0]
    served = Served()
    conn = Connection(bootstrap)
    try:
        for p in range(partitions):
            for isolation in (0, 1):
                served.fetches[(p, isolation)] = fetch_all(conn, topic, p, isolation)
            stamps = sorted(
                {r[1] for a in served.fetches[(p, 0)] for b in a["batches"] for r in b["records"]}
            )
            probes = [-2, -1, -3, 0, *stamps[:: max(1, len(stamps) // 4)], stamps[-1] + 1]
            served.offsets[p] = list_offsets(conn, topic, p, probes)
    finally:
        conn.close()
    for isolation in ("read_uncommitted", "read_committed"):
        served.consumed[isolation] = consume(bootstrap, topic, partitions, isolation)
    return served


def wait_cleaned(bootstrap: str, topic: str) -> None:
    """Until the writer's cleaner has cleaned every rolled segment of `topic`."""
    conn = Connection(bootstrap)
    count = -1
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answers = fetch_all(conn, topic, 0, 0)
            count = sum(len(b["records"]) for a in answers for b in a["batches"])
            if count == CLEANED_RECORDS:
                return
            time.sleep(0.2)
    finally:
        conn.close()
    raise AssertionError(f"{topic}: {count} records, not cleaned to {CLEANED_RECORDS}")


def wait_served(bootstrap: str, topic: str, partitions: int, ends: dict[int, int]) -> None:
    """Until the restarted broker leads `topic` with its high watermark at the copied log
    end offset (a leader's first high watermark comes with its election)."""
    conn: Connection | None = None
    deadline = time.monotonic() + 30
    hw: dict[int, Any] = {}
    while time.monotonic() < deadline:
        try:
            conn = conn or Connection(bootstrap)
            hw = {p: fetch_once(conn, topic, p, 0, 0)["high_watermark"] for p in range(partitions)}
            if hw == ends:
                conn.close()
                return
        except (AssertionError, OSError):
            conn = None
        time.sleep(0.2)
    raise AssertionError(f"{topic}: high watermarks {hw}, expected {ends}")


# -- moving the files ------------------------------------------------------------------


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    assert lines[0] == "0", lines
    out = {}
    for line in lines[2 : 2 + int(lines[1])]:
        topic, partition, offset = line.split()
        out[(topic, int(partition))] = int(offset)
    return out


def write_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    body = "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(entries.items()))
    path.write_text(f"0\n{len(entries)}\n{body}")


def copy_partition(source: Path, dest: Path) -> list[str]:
    """The source partition's files in place of the destination's, but for
    `partition.metadata` (the topic id): the destination's is kept, the source's is not
    copied (it names the source broker's topic id)."""
    for f in dest.iterdir():
        if f.name != "partition.metadata":
            f.unlink()
    copied = []
    for f in sorted(source.iterdir()):
        if f.name != "partition.metadata":
            shutil.copy2(f, dest / f.name)
            copied.append(f.name)
    return copied


def move_topics(files: Path, dest_dir: Path, prefix: str, suffix: str) -> dict[str, list[str]]:
    """Copies each source partition (`files/<prefix><kind>-<p>`, with the source's
    recovery-point checkpoint beside them) to `<prefix><kind>-<suffix>` in `dest_dir`.
    "a": the destination keeps its clean-shutdown marker and takes the copied log end offset
    as its recovery point (it loads the copied files as they are); "b": the marker is
    removed and the recovery point stays the empty topic's 0 (it recovers every segment).
    Both take the source's cleaner offset (where its cleaned part ends), so the
    destination's cleaner does not clean the copied log again: the cleaner state is part
    of the log's."""
    source_points = read_checkpoint(files / RECOVERY_POINTS)
    dest_points = read_checkpoint(dest_dir / RECOVERY_POINTS)
    source_cleaned = read_checkpoint(files / CLEANER_OFFSETS)
    dest_cleaned = read_checkpoint(dest_dir / CLEANER_OFFSETS)
    marker = dest_dir / CLEAN_SHUTDOWN
    assert marker.exists(), "the destination did not stop cleanly"
    copied = {}
    for kind, (partitions, _) in TOPICS.items():
        for p in range(partitions):
            name = f"{prefix}{kind}-{suffix}"
            copied[f"{name}-{p}"] = copy_partition(
                files / f"{prefix}{kind}-{p}", dest_dir / f"{name}-{p}"
            )
            assert dest_points[(name, p)] == 0, dest_points
            if suffix == "a":
                dest_points[(name, p)] = source_points[(f"{prefix}{kind}", p)]
            if (f"{prefix}{kind}", p) in source_cleaned:
                dest_cleaned[(name, p)] = source_cleaned[(f"{prefix}{kind}", p)]
    write_checkpoint(dest_dir / RECOVERY_POINTS, dest_points)
    write_checkpoint(dest_dir / CLEANER_OFFSETS, dest_cleaned)
    if suffix == "b":
        marker.unlink()
    return copied


def keep_files(log_dir: Path, prefix: str, to: Path) -> None:
    """A copy of the source partitions and recovery points as the writer left them."""
    for kind, (partitions, _) in TOPICS.items():
        for p in range(partitions):
            shutil.copytree(log_dir / f"{prefix}{kind}-{p}", to / f"{prefix}{kind}-{p}")
    shutil.copy(log_dir / RECOVERY_POINTS, to / RECOVERY_POINTS)
    shutil.copy(log_dir / CLEANER_OFFSETS, to / CLEANER_OFFSETS)


# -- the run ---------------------------------------------------------------------------


@dataclass
class Run:
    source: dict[str, dict[str, Served]]  # "kafka"/"kafkars" → kind → Served
    dest: dict[str, dict[str, Served]]  # "kafkars-a", "kafkars-b", "kafka-a", "kafka-b"
    kafkars_files: Path
    copied: dict[str, list[str]]
    kafka_logs: dict[str, str]  # "a"/"b" → Kafka's lines of that start on copied files
    kafkars_logs: dict[str, str]
    seconds: float


def _log_since(path: Path, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    started = time.monotonic()
    tmp = tmp_path_factory.mktemp("storage-compat")
    kafka = ReferenceKafka(config=COMMON)
    kafkars = Broker(process=True, log_dir=tmp / "kafkars", config={**COMMON, "node.id": 1})
    kafka_log = kafka.data_dir / "kafka.log"
    kafkars_log = kafkars.log_dir / ".kafkars-server.log"
    try:
        kafka.start()
        kafkars.start()
        k_dest = {f"k-{kind}-{s}": kind for kind in TOPICS for s in ("a", "b")}
        r_dest = {f"r-{kind}-{s}": kind for kind in TOPICS for s in ("a", "b")}
        create_topics(kafka.bootstrap_servers, {f"k-{kind}": kind for kind in TOPICS} | r_dest)
        create_topics(kafkars.bootstrap_servers, {f"r-{kind}": kind for kind in TOPICS} | k_dest)
        write_data_set(kafka.bootstrap_servers, "k-")
        write_data_set(kafkars.bootstrap_servers, "r-")
        wait_cleaned(kafka.bootstrap_servers, "k-cleaned")
        wait_cleaned(kafkars.bootstrap_servers, "r-cleaned")
        source = {
            "kafka": {k: record(kafka.bootstrap_servers, f"k-{k}", k) for k in TOPICS},
            "kafkars": {k: record(kafkars.bootstrap_servers, f"r-{k}", k) for k in TOPICS},
        }
        kafka.stop(remove=False)
        kafkars.stop(remove=False)
        kafka_files, kafkars_files = tmp / "kafka-files", tmp / "kafkars-files"
        keep_files(kafka.log_dir, "k-", kafka_files)
        keep_files(kafkars.log_dir, "r-", kafkars_files)
        copied: dict[str, list[str]] = {}
        dest: dict[str, dict[str, Served]] = {}
        logs: dict[str, dict[str, str]] = {"kafka": {}, "kafkars": {}}
        for suffix in ("a", "b"):
            copied |= move_topics(kafka_files, kafkars.log_dir, "k-", suffix)
            copied |= move_topics(kafkars_files, kafka.log_dir, "r-", suffix)
            offsets = {"kafka": kafka_log.stat().st_size, "kafkars": kafkars_log.stat().st_size}
            kafka.start()
            kafkars.start()
            for side, broker, prefix in (
                ("kafkars", kafkars.bootstrap_servers, "k-"),
                ("kafka", kafka.bootstrap_servers, "r-"),
            ):
                origin = source["kafka" if side == "kafkars" else "kafkars"]
                for kind, (partitions, _) in TOPICS.items():
                    ends = {
                        p: origin[kind].fetches[(p, 0)][-1]["high_watermark"]
                        for p in range(partitions)
                    }
                    wait_served(broker, f"{prefix}{kind}-{suffix}", partitions, ends)
                dest[f"{side}-{suffix}"] = {
                    kind: record(broker, f"{prefix}{kind}-{suffix}", kind) for kind in TOPICS
                }
            kafka.stop(remove=False)
            kafkars.stop(remove=False)
            logs["kafka"][suffix] = _log_since(kafka_log, offsets["kafka"])
            logs["kafkars"][suffix] = _log_since(kafkars_log, offsets["kafkars"])
        yield Run(
            source,
            dest,
            kafkars_files,
            copied,
            logs["kafka"],
            logs["kafkars"],
            time.monotonic() - started,
        )
    except BaseException:
        if kafka_log.exists():
            shutil.copy(kafka_log, tmp / "kafka.log")
        print(f"Kafka's log: {tmp / 'kafka.log'}; kafkars': {kafkars.log_dir}")
        raise
    finally:
        kafkars.stop()
        kafka.stop()


def _diff(expected: Any, actual: Any, path: str = "") -> list[str]:
    """The first differences between two nested values, as readable paths."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for k in sorted(expected.keys() | actual.keys(), key=str):
            out += _diff(expected.get(k, "<absent>"), actual.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = [] if len(expected) == len(actual) else [f"{path}: {len(expected)} vs {len(actual)}"]
        for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
            out += _diff(a, b, f"{path}[{i}]")
        return out
    return [] if expected == actual else [f"{path}: {expected!r} != {actual!r}"]


def assert_same(expected: Served, actual: Served, what: str) -> None:
    for name in ("fetches", "offsets", "consumed"):
        diffs = _diff(getattr(expected, name), getattr(actual, name))
        assert not diffs, f"{what} {name}:\n" + "\n".join(diffs[:30])


def test_data_set_shape(run: Run) -> None:
    """The data set has what the comparisons are about, on both writers."""
    for side in ("kafka", "kafkars"):
        served = run.source[side]
        codecs = {b["compression"] for a in served["codecs"].fetches[(0, 0)] for b in a["batches"]}
        assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}, (side, codecs)
        txn = served["txn"].fetches[(0, 0)]
        assert sum(b["is_control"] for a in txn for b in a["batches"]) == 3, side
        committed = served["txn"].fetches[(0, 1)]
        assert any(a["aborted_transactions"] for a in committed), side
        # read_committed leaves the aborted range out.
        assert len(served["txn"].consumed["read_committed"]) == 15 + 5 + 3, side
        assert len(served["txn"].consumed["read_uncommitted"]) == 15 + 10 + 5 + 3, side
        compacted = served["compacted"].fetches[(0, 0)]
        assert len(compacted) >= 3, (side, "segments", len(compacted))
        cleaned = [b for a in served["cleaned"].fetches[(0, 0)] for b in a["batches"]]
        assert sum(len(b["records"]) for b in cleaned) == CLEANED_RECORDS, side
        assert cleaned[0]["base_offset"] > 0, (side, "the cleaner kept round 0")
        assert any(r[3] is None for b in cleaned for r in b["records"]), (side, "tombstone")
        assert len(served["cleaned"].consumed["read_committed"]) == CLEANED_RECORDS, side
        appendtime = served["appendtime"].fetches[(0, 0)]
        assert {b["timestamp_type"] for a in appendtime for b in a["batches"]} == {"LogAppendTime"}


@pytest.mark.parametrize("copy", ["a", "b"])
@pytest.mark.parametrize("kind", list(TOPICS))
def test_kafka_files_served_by_kafkars(run: Run, kind: str, copy: str) -> None:
    assert_same(run.source["kafka"][kind], run.dest[f"kafkars-{copy}"][kind], f"k-{kind}-{copy}")


@pytest.mark.parametrize("copy", ["a", "b"])
@pytest.mark.parametrize("kind", list(TOPICS))
def test_kafkars_files_served_by_kafka(run: Run, kind: str, copy: str) -> None:
    assert_same(run.source["kafkars"][kind], run.dest[f"kafka-{copy}"][kind], f"r-{kind}-{copy}")


def dump_log_segments(files_dir: Path) -> str:
    """Kafka's DumpLogSegments over every data file of the partitions in `files_dir`."""
    files = sorted(
        str(f)
        for f in files_dir.rglob("*")
        if f.suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
    )
    assert any(f.endswith(".txnindex") for f in files) and any(
        f.endswith(".snapshot") for f in files
    )
    result = kafka_tool(
        "kafka.tools.DumpLogSegments",
        "--files",
        ",".join(files),
        "--print-data-log",
        "--deep-iteration",
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    return out


_PRODUCER = re.compile(r"producerId: (-?\d+)")
_MARKER_EPOCH = re.compile(r"endTxnMarker: \w+ coordinatorEpoch: (-?\d+)")
_SNAPSHOT_ENTRY = re.compile(r"^producerId: (-?\d+) .*coordinatorEpoch: (-?\d+)")


def snapshot_coordinator_epochs(dump: str) -> list[tuple[str, int, int, int]]:
    """(partition dir, producer id, coordinator epoch in the snapshot, coordinator epoch
    of its last marker before it in the log) for each producer entry of each snapshot."""
    out = []
    partition, producer = "", -1
    markers: dict[int, int] = {}
    for line in dump.splitlines():
        if line.startswith("Dumping "):
            directory = Path(line.split()[1]).parent.name
            if directory != partition:
                partition, markers = directory, {}
        elif line.startswith("baseOffset: "):
            producer = int(_PRODUCER.search(line).group(1))  # type: ignore[union-attr]
        elif m := _MARKER_EPOCH.search(line):
            markers[producer] = int(m.group(1))
        elif m := _SNAPSHOT_ENTRY.match(line):
            pid = int(m.group(1))
            out.append((partition, pid, int(m.group(2)), markers.get(pid, -1)))
    return out


def test_dump_log_segments_reads_kafkars_files(run: Run) -> None:
    out = dump_log_segments(run.kafkars_files)
    for bad in ("Exception", "error", "rror:", "mismatch", "Mismatch", "corrupt", "Corrupt"):
        assert bad not in out, out[-4000:]
    # Every record of kafkars' logs is listed (`offset: N ... payload`).
    listed = sum(1 for line in out.splitlines() if "| offset: " in line)
    served = sum(
        len(b["records"])
        for kind in TOPICS
        for (_, isolation), answers in run.source["kafkars"][kind].fetches.items()
        if isolation == 0
        for a in answers
        for b in a["batches"]
    )
    assert listed == served, (listed, served)


def test_producer_snapshots_keep_the_markers_coordinator_epoch(run: Run) -> None:
    """A producer's snapshot entry has the coordinator epoch of its last transaction
    marker (Kafka's ProducerAppendInfo.appendEndTxnMarker sets it): so in Kafka's own
    files, and so in kafkars'."""
    for files in (run.kafkars_files.parent / "kafka-files", run.kafkars_files):
        entries = snapshot_coordinator_epochs(dump_log_segments(files))
        assert any(marker >= 0 for *_, marker in entries), (files, entries)
        wrong = [e for e in entries if e[2] != e[3]]
        assert not wrong, (files.name, wrong)


def test_load_paths(run: Run) -> None:
    """Each destination loaded the copies the way the test means: "a" without recovering
    them (the copied indexes, transaction index and producer snapshots as they are), "b"
    by recovering every copied segment."""
    for kind, (partitions, _) in TOPICS.items():
        for p in range(partitions):
            a, b = f"r-{kind}-a-{p}", f"r-{kind}-b-{p}"
            assert f"partition={a}, " not in "".join(
                line for line in run.kafka_logs["a"].splitlines() if "Recovering" in line
            ), a
            segments = [f for f in run.copied[b] if f.endswith(".log")]
            recovered = [
                line
                for line in run.kafka_logs["b"].splitlines()
                if "Recovering unflushed segment" in line and f"partition={b}, " in line
            ]
            assert len(recovered) == len(segments), (b, segments, recovered)
    # kafkars: "Loaded N partition(s) ...: R recovered after an unclean shutdown (S
    # segment(s) scanned, B bytes read, ...)".
    summary = re.compile(
        r"Loaded \d+ partition\(s\) .*: (\d+) recovered .*"
        r"\((\d+) segment\(s\) scanned, (\d+) bytes read"
    )
    [a_line] = summary.findall(run.kafkars_logs["a"])
    assert a_line[0] == "0", a_line
    [b_line] = summary.findall(run.kafkars_logs["b"])
    copies_b = {n: f for n, f in run.copied.items() if n.startswith("k-") and "-b-" in n}
    assert int(b_line[1]) >= sum(
        1 for files in copies_b.values() for f in files if f.endswith(".log")
    ), b_line
    copied_bytes = sum(
        (run.kafkars_files.parent / "kafka-files" / n.replace("-b-", "-") / f).stat().st_size
        for n, files in copies_b.items()
        for f in files
        if f.endswith(".log")
    )
    assert int(b_line[2]) >= copied_bytes, (b_line, copied_bytes)
