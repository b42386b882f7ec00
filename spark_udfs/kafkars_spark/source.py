"""The `kafkars` Spark data source: Spark's Kafka source and sink, in Python over the
Rust decoder, reading from a broker or straight from a log directory.

    from kafkars_spark import register
    register(spark)
    df = (spark.read.format("kafkars")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Options follow Spark's Kafka source (see README); `path` reads a log directory offline.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import mmap
import re
import struct
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kafkars import _core
from kafkars.protocol import Errors
from kafkars.protocol import KafkaError as ProducerError
from kafkars.security.client_auth import PLAINTEXT, ClientSecurity, client_security
from kafkars_spark.arrow import HEADERS_DDL, KAFKA_DDL, conform, decode_batches
from kafkars_spark.wire import (
    EARLIEST,
    LATEST,
    KafkaClient,
    KafkaError,
    TopicAuthorizationError,
    bootstrap_addresses,
    is_retriable,
)

TopicPartition = tuple[str, int]
OFFSET_OUT_OF_RANGE = 1
#: Bytes per fetch unless `kafka.max.partition.fetch.bytes` says otherwise.
DEFAULT_FETCH_BYTES = 8 << 20
# Kafka settings Spark's Kafka source and sink refuse (they manage them themselves).
_REJECTED = {
    "group.id",
    "auto.offset.reset",
    "key.deserializer",
    "value.deserializer",
    "key.serializer",
    "value.serializer",
    "enable.auto.commit",
    "interceptor.classes",
}


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """Offsets `[start, end)` of one topic-partition: one Spark partition."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class SegmentRange(InputPartition):
    """One segment file of a log directory: one Spark partition."""

    topic: str
    partition: int
    path: str


READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_ISOLATION = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


def _bool(options: Any, name: str, default: bool) -> bool:
    v = options.get(name)
    return default if v is None else str(v).strip().lower() == "true"


class _Options:
    """The Kafka-source options, parsed once on the driver."""

    def __init__(self, options: Any, *, streaming: bool) -> None:
        self.raw = {k.lower(): v for k, v in options.items()}
        o = self.raw
        self.path = o.get("path")
        self.bootstrap = o.get("kafka.bootstrap.servers")
        for key in o:
            if key.startswith("kafka.") and key[6:] in _REJECTED and key != "kafka.group.id":
                raise ValueError(f"Kafka option '{key[6:]}' is not supported")
        if self.path is None and not self.bootstrap:
            raise ValueError("option 'kafka.bootstrap.servers' (or 'path') must be set")
        strategies = [k for k in ("assign", "subscribe", "subscribepattern") if k in o]
        if len(strategies) > 1 or (not strategies and self.path is None):
            raise ValueError("exactly one of 'assign', 'subscribe', 'subscribePattern' is needed")
        self.strategy = strategies[0] if strategies else None
        self.include_headers = _bool(o, "includeheaders", False)
        self.fail_on_data_loss = _bool(o, "failondataloss", True)
        self.min_partitions = int(o["minpartitions"]) if "minpartitions" in o else None
        if self.min_partitions is not None and self.min_partitions <= 0:
            raise ValueError(
                f"Invalid value '{o['minpartitions']}' for option 'minPartitions', "
                "must be a positive integer"
            )
        # The Kafka consumer's per-partition fetch size, which Spark passes through.
        self.fetch_bytes = int(o.get("kafka.max.partition.fetch.bytes", DEFAULT_FETCH_BYTES))
        if self.fetch_bytes <= 0:
            raise ValueError("kafka.max.partition.fetch.bytes must be positive")
        self.max_offsets = int(o["maxoffsetspertrigger"]) if "maxoffsetspertrigger" in o else None
        self.streaming = streaming
        self.poll_timeout = float(o.get("kafkaconsumer.polltimeoutms", 120000)) / 1000
        level = str(o.get("kafka.isolation.level", "read_uncommitted")).strip().lower()
        if level not in _ISOLATION:
            raise ValueError(
                f"kafka.isolation.level must be read_uncommitted or read_committed, not {level!r}"
            )
        self.isolation = _ISOLATION[level]
        # Spark's Kafka security options (kafka.security.protocol, kafka.sasl.*,
        # kafka.ssl.*), resolved here once; executors connect with the result.
        self.security = client_security(_kafka_properties(o))
        if self.path is not None and self.isolation == READ_COMMITTED:
            raise ValueError(
                "kafka.isolation.level=read_committed needs a broker: a log directory read "
                "offline ('path') has no last stable offset"
            )

    def client(self) -> KafkaClient:
        assert self.bootstrap is not None, "a broker's options (not 'path')"
        return KafkaClient(self.bootstrap, security=self.security, isolation_level=self.isolation)

    def wanted(self, topics: Sequence[str]) -> list[str]:
        """The topics the subscription names, among `topics` (what exists)."""
        o = self.raw
        if self.strategy == "subscribe":
            names = [t.strip() for t in o["subscribe"].split(",") if t.strip()]
            return [t for t in names if t in topics]
        if self.strategy == "subscribepattern":
            pattern = re.compile(o["subscribepattern"])
            return sorted(t for t in topics if pattern.fullmatch(t))
        if self.strategy == "assign":
            return sorted(json.loads(o["assign"]))
        return sorted(t for t in topics if not t.startswith("__"))


def _spec_offsets(
    spec: str | None, default: str, tps: Sequence[TopicPartition], *, what: str
) -> dict[TopicPartition, int]:
    """`earliest`/`latest`/JSON `{"t":{"0":n}}` as -2/-1/n per partition."""
    spec = (spec or default).strip()
    if spec == "earliest":
        return {tp: EARLIEST for tp in tps}
    if spec == "latest":
        return {tp: LATEST for tp in tps}
    parsed = json.loads(spec)
    out = {}
    for t, parts in parsed.items():
        for p, off in parts.items():
            out[(t, int(p))] = int(off)
    missing = [tp for tp in tps if tp not in out]
    if missing:
        raise ValueError(f"{what} does not give an offset for {missing}")
    return out


class _KafkaPlanner:
    """Driver-side work: which partitions, which offsets."""

    def __init__(self, opts: _Options) -> None:
        self.opts = opts

    def client(self) -> KafkaClient:
        assert self.opts.bootstrap is not None
        return self.opts.client()

    def partitions(self, client: KafkaClient) -> list[TopicPartition]:
        o = self.opts
        if o.strategy == "assign":
            assigned = json.loads(o.raw["assign"])
            client.metadata(list(assigned))
            return sorted((t, int(p)) for t, ps in assigned.items() for p in ps)
        if o.strategy == "subscribe":
            topics = [t.strip() for t in o.raw["subscribe"].split(",") if t.strip()]
            meta = client.metadata(topics)
        else:
            meta = client.metadata(None)
        return sorted((t, p.partition) for t in o.wanted(list(meta)) for p in meta.get(t, []))

    def resolve(
        self, client: KafkaClient, wanted: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """-2 (earliest) and -1 (latest) made real offsets; explicit offsets stay as given
        (ListOffsets would read them as timestamps)."""
        special = {tp: v for tp, v in wanted.items() if v < 0}
        return {**wanted, **(client.list_offsets(special) if special else {})}

    def starting(
        self, client: KafkaClient, tps: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        o = self.opts.raw
        latest = client.list_offsets(dict.fromkeys(tps, LATEST)) if tps else {}
        if "startingtimestamp" in o or "startingoffsetsbytimestamp" in o:
            if "startingtimestamp" in o:
                ts = {tp: int(o["startingtimestamp"]) for tp in tps}
            else:
                ts = _spec_offsets(o["startingoffsetsbytimestamp"], "", tps, what="timestamps")
            found = client.list_offsets(ts)
            strategy = o.get("startingoffsetsbytimestampstrategy", "error").lower()
            for tp, off in found.items():
                if off < 0:
                    if strategy != "latest":
                        raise ValueError(f"no offset matches timestamp {ts[tp]} in {tp}")
                    found[tp] = latest[tp]
            return found
        default = "latest" if self.opts.streaming else "earliest"
        spec = _spec_offsets(o.get("startingoffsets"), default, tps, what="startingOffsets")
        if not self.opts.streaming and any(v == LATEST for v in spec.values()):
            raise ValueError("startingOffsets may not be latest for batch queries")
        return self.resolve(client, spec)

    def ending(
        self, client: KafkaClient, tps: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        o = self.opts.raw
        if "endingtimestamp" in o or "endingoffsetsbytimestamp" in o:
            if "endingtimestamp" in o:
                ts = {tp: int(o["endingtimestamp"]) for tp in tps}
            else:
                ts = _spec_offsets(o["endingoffsetsbytimestamp"], "", tps, what="timestamps")
            found = client.list_offsets(ts) if ts else {}
            # As Spark: no record that late ends the range at the latest offset.
            latest = [tp for tp, off in found.items() if off < 0]
            if latest:
                found.update(client.list_offsets(dict.fromkeys(latest, LATEST)))
            return found
        spec = _spec_offsets(
            self.opts.raw.get("endingoffsets"), "latest", tps, what="endingOffsets"
        )
        if any(v == EARLIEST for v in spec.values()):
            raise ValueError("endingOffsets may not be earliest")
        return self.resolve(client, spec)

    def check_loss(
        self, client: KafkaClient, start: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Starting offsets below the log start: fail, or start at the log start."""
        if not start:
            return start
        earliest = client.list_offsets(dict.fromkeys(start, EARLIEST))
        out = dict(start)
        for tp, off in start.items():
            if off < earliest[tp]:
                if self.opts.fail_on_data_loss:
                    raise RuntimeError(
                        f"offsets {off}..{earliest[tp]} of {tp[0]}-{tp[1]} are gone "
                        "(retention?); set failOnDataLoss=false to skip them"
                    )
                out[tp] = earliest[tp]
        return out


def split_ranges(ranges: list[KafkaRange], min_partitions: int | None) -> list[KafkaRange]:
    """Spark's `KafkaOffsetRangeCalculator.getRanges`: empty ranges are dropped; with
    `minPartitions` above the number of ranges left, each range gets a share of
    `minPartitions` in proportion to its size (rounded half up, at least 1). Ranges whose
    share is 1 stay whole, and the others split `minPartitions` minus those between them
    in proportion again, into contiguous pieces of near equal size (the last ones taking
    the remainder), so the total is about `minPartitions`."""
    ranges = [r for r in ranges if r.end > r.start]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges

    def share(size: int, total: int, parts: int) -> int:
        return max(math.floor(size / total * parts + 0.5), 1)  # Java's Math.round

    total = sum(r.end - r.start for r in ranges)
    whole = [r for r in ranges if share(r.end - r.start, total, min_partitions) == 1]
    split_total = total - sum(r.end - r.start for r in whole)
    split_parts = max(min_partitions - len(whole), 1)
    out = []
    for r in ranges:
        size = r.end - r.start
        parts = 1 if r in whole else share(size, split_total, split_parts)
        start, remaining = r.start, size
        for i in range(parts):
            piece = remaining // (parts - i)
            remaining -= piece
            if piece:
                out.append(KafkaRange(r.topic, r.partition, start, start + piece))
            start += piece
    return out


class _Backoff:
    """Kafka's retry.backoff.ms (100 ms) doubling up to retry.backoff.max.ms (1 s)."""

    def __init__(self) -> None:
        self.delay = 0.1

    def wait(self) -> None:
        time.sleep(self.delay)
        self.delay = min(self.delay * 2, 1.0)

    def reset(self) -> None:
        self.delay = 0.1


def read_range(
    r: KafkaRange,
    bootstrap: str,
    schema: pa.Schema,
    *,
    include_headers: bool,
    fail_on_data_loss: bool,
    timeout: float = 120.0,
    isolation: int = READ_UNCOMMITTED,
    security: ClientSecurity | None = None,
    max_bytes: int = DEFAULT_FETCH_BYTES,
) -> Iterator[pa.RecordBatch]:
    """Fetches `[r.start, r.end)` and yields it decoded, one Arrow batch per fetch (the
    fetch and the decoding both happen in Rust; see `KafkaClient.fetch`). read_committed
    leaves out control records and the records of aborted transactions.

    Failover: when the leader dies or moves (a connection error, NOT_LEADER_OR_FOLLOWER
    and Kafka's other retriable errors) the client refreshes the metadata and the fetch
    resumes at the next offset not yet yielded, on the new leader, with backoff, for at
    most `timeout` seconds without progress (`kafkaConsumer.pollTimeoutMs`). A denied Read
    (TopicAuthorizationError) and other non-retriable errors fail the task at once."""
    pos = r.start
    deadline = time.monotonic() + timeout
    backoff = _Backoff()

    def give_up() -> bool:
        if time.monotonic() > deadline:
            return True
        backoff.wait()
        return False

    with KafkaClient(bootstrap, security=security, isolation_level=isolation) as client:
        while pos < r.end:
            try:
                resp = client.fetch(
                    r.topic,
                    r.partition,
                    pos,
                    r.end,
                    include_headers=include_headers,
                    max_bytes=max_bytes,
                )
            except TopicAuthorizationError:
                raise
            except (OSError, KafkaError) as e:
                if give_up():
                    raise RuntimeError(
                        f"{r.topic}-{r.partition}: no leader served offset {pos} within "
                        f"{timeout:g} s (last error: {e})"
                    ) from e
                continue
            if resp.error == OFFSET_OUT_OF_RANGE and pos < resp.log_start_offset:
                if fail_on_data_loss:
                    raise RuntimeError(
                        f"offsets {pos}..{resp.log_start_offset} of {r.topic}-{r.partition} "
                        "are gone; set failOnDataLoss=false to skip them"
                    )
                pos = resp.log_start_offset
                continue
            if resp.error:
                # OFFSET_OUT_OF_RANGE above the log start: a new leader still catching up.
                waitable = is_retriable(resp.error) or resp.error == OFFSET_OUT_OF_RANGE
                if not waitable or give_up():
                    raise KafkaError(resp.error, f"fetch {r.topic}-{r.partition}@{pos}")
                continue
            nxt = resp.next_offset
            if nxt is None:
                # Nothing more below the high watermark: the range ends early (data
                # loss), which failOnDataLoss turns into an error after a grace period.
                gave_up = not fail_on_data_loss or time.monotonic() > deadline
                if resp.high_watermark <= pos and gave_up:
                    if fail_on_data_loss:
                        raise RuntimeError(
                            f"{r.topic}-{r.partition} ends at {resp.high_watermark}, "
                            f"offsets up to {r.end} were expected"
                        )
                    return
                time.sleep(0.05)
                continue
            deadline = time.monotonic() + timeout
            backoff.reset()
            pos = nxt
            if resp.capsules is not None:
                batch = pa.RecordBatch._import_from_c_capsule(*resp.capsules)
                if batch.num_rows:
                    yield conform(batch, schema)


# --- offline: segments of a log directory -------------------------------------------------


def segment_ranges(log_dir: str, opts: _Options) -> list[SegmentRange]:
    from kafkars.log import LogDir

    logs = LogDir(log_dir).partitions()
    wanted = set(opts.wanted(sorted({p.topic for p in logs})))
    assigned: set[TopicPartition] | None = None
    if opts.strategy == "assign":
        assigned = {(t, int(p)) for t, ps in json.loads(opts.raw["assign"]).items() for p in ps}
    out = []
    for p in sorted(logs, key=lambda p: (p.topic, p.partition)):
        if p.topic not in wanted or (
            assigned is not None and (p.topic, p.partition) not in assigned
        ):
            continue
        for seg in p.segments():
            out.append(SegmentRange(p.topic, p.partition, str(seg.log_path)))
    return out


def read_segment(
    s: SegmentRange, schema: pa.Schema, *, include_headers: bool, chunk_bytes: int = 8 << 20
) -> Iterator[pa.RecordBatch]:
    """Decodes a segment file through mmap, about `chunk_bytes` of batches per Arrow batch."""
    path = Path(s.path)
    if path.stat().st_size == 0:
        return
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        size = len(m)
        pos = 0
        while pos < size:
            end = pos
            while end + 12 <= size and end - pos < chunk_bytes:
                (length,) = struct.unpack_from(">i", m, end + 8)
                if length <= 0 or end + 12 + length > size:
                    size = end  # the end of what is written (a torn or zeroed tail)
                    break
                end += 12 + length
            if end == pos:
                break
            # Zero-copy: the chunk is one binary value over the mapped bytes.
            data = pa.py_buffer(memoryview(m)[pos:end])
            offsets = pa.py_buffer(struct.pack("<ii", 0, end - pos))
            blobs = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, data])
            batch = decode_batches(
                blobs, s.topic, s.partition, include_headers=include_headers, batch_fields=False
            )
            del blobs, data
            pos = end
            if batch.num_rows:
                yield conform(batch, schema)


# --- the data source ----------------------------------------------------------------------


class KafkarsDataSource(DataSource):
    """`spark.read.format("kafkars")`: Spark's Kafka source and sink over kafkars."""

    @classmethod
    def name(cls) -> str:
        return "kafkars"

    def schema(self) -> str:
        if _bool(self.options, "includeHeaders", False):
            return f"{KAFKA_DDL}, {HEADERS_DDL}"
        return KAFKA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkarsReader(_Options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkarsStreamReader(_Options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return KafkarsWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        return KafkarsStreamWriter(dict(self.options), schema)


class KafkarsReader(DataSourceReader):
    """Batch read: one Spark partition per offset range (or per segment offline)."""

    def __init__(self, opts: _Options, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        o = self.opts
        if o.path is not None:
            return segment_ranges(o.path, o) or [InputPartition(None)]
        planner = _KafkaPlanner(o)
        with planner.client() as client:
            tps = planner.partitions(client)
            start = planner.check_loss(client, planner.starting(client, tps))
            end = planner.ending(client, tps)
        ranges = [KafkaRange(t, p, start[(t, p)], end[(t, p)]) for t, p in tps]
        return split_ranges(ranges, o.min_partitions) or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        schema = to_arrow_schema(self.schema, timezone="UTC")
        if isinstance(partition, SegmentRange):
            yield from read_segment(partition, schema, include_headers=self.opts.include_headers)
        elif isinstance(partition, KafkaRange):
            assert self.opts.bootstrap is not None
            yield from read_range(
                partition,
                self.opts.bootstrap,
                schema,
                include_headers=self.opts.include_headers,
                fail_on_data_loss=self.opts.fail_on_data_loss,
                timeout=self.opts.poll_timeout,
                isolation=self.opts.isolation,
                security=self.opts.security,
                max_bytes=self.opts.fetch_bytes,
            )


def _to_json(offsets: dict[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = off
    return out


def _from_json(offsets: dict[str, Any]) -> dict[TopicPartition, int]:
    if isinstance(offsets, str):
        offsets = json.loads(offsets)
    return {(t, int(p)): int(o) for t, ps in offsets.items() for p, o in ps.items()}


def rate_limit(
    limit: int, start: dict[TopicPartition, int], until: dict[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Spark's `KafkaMicroBatchStream.rateLimit`: `limit` offsets split across partitions
    in proportion to their backlog, a share below 1 rounded up so none starves."""
    sizes = {tp: end - start.get(tp, end) for tp, end in until.items()}
    sizes = {tp: s for tp, s in sizes.items() if s > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(until)
    out = {}
    for tp, end in until.items():
        if tp not in sizes:
            out[tp] = end
            continue
        prorate = limit * (sizes[tp] / total)
        n = int(prorate) if prorate >= 1 else (1 if prorate > 0 else 0)
        out[tp] = min(end, start[tp] + n)
    return out


class KafkarsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming read: offsets `{"topic":{"0":next}}`, `maxOffsetsPerTrigger` through
    admission control, Trigger.AvailableNow. Spark checkpoints the offsets."""

    def __init__(self, opts: _Options, schema: StructType) -> None:
        if opts.path is not None:
            raise ValueError("streaming reads need a broker ('path' is batch only)")
        self.opts = opts
        self.schema = schema
        self.planner = _KafkaPlanner(opts)
        self._client: KafkaClient | None = None
        self._latest: dict[TopicPartition, int] = {}
        self._target: dict[TopicPartition, int] | None = None

    def _c(self) -> KafkaClient:
        if self._client is None:
            self._client = self.planner.client()
        return self._client

    def initialOffset(self) -> dict:
        client = self._c()
        tps = self.planner.partitions(client)
        return _to_json(self.planner.check_loss(client, self.planner.starting(client, tps)))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets is not None:
            return ReadMaxRows(self.opts.max_offsets)
        return ReadAllAvailable()

    def _fetch_latest(self) -> dict[TopicPartition, int]:
        client = self._c()
        try:
            tps = self.planner.partitions(client)
            latest = client.list_offsets(dict.fromkeys(tps, LATEST)) if tps else {}
        except (OSError, KafkaError):
            client.close()
            self._client = None
            raise
        self._latest = latest
        return latest

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._fetch_latest()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = _from_json(start)
        latest = dict(self._target) if self._target is not None else self._fetch_latest()
        # Partitions that appeared since the query started are read from their beginning.
        new = [tp for tp in latest if tp not in begin]
        if new:
            begin.update(self._c().list_offsets(dict.fromkeys(new, EARLIEST)))
        until = {tp: max(off, begin[tp]) for tp, off in latest.items()}
        if isinstance(limit, ReadMaxRows):
            until = rate_limit(limit.max_rows, begin, until)
        # Keep partitions we no longer see where they were, so offsets only move forward.
        for tp, off in _from_json(start).items():
            until.setdefault(tp, off)
        return _to_json(until)

    def reportLatestOffset(self) -> dict | None:
        return _to_json(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = _from_json(start), _from_json(end)
        if begin != until and any(tp not in begin for tp in until):
            new = [tp for tp in until if tp not in begin]
            begin.update(self._c().list_offsets(dict.fromkeys(new, EARLIEST)))
        ranges = [
            KafkaRange(t, p, begin.get((t, p), off), off) for (t, p), off in sorted(until.items())
        ]
        return split_ranges(ranges, self.opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaRange) and self.opts.bootstrap is not None
        yield from read_range(
            partition,
            self.opts.bootstrap,
            to_arrow_schema(self.schema, timezone="UTC"),
            include_headers=self.opts.include_headers,
            fail_on_data_loss=self.opts.fail_on_data_loss,
            timeout=self.opts.poll_timeout,
            isolation=self.opts.isolation,
            security=self.opts.security,
            max_bytes=self.opts.fetch_bytes,
        )

    def commit(self, end: dict) -> None:
        """Nothing to do: like Spark's Kafka source, progress lives in the checkpoint."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


# --- writers --------------------------------------------------------------------------------

#: Where the exactly-once sink keeps its per-task markers, as consumer-group offsets
#: committed inside each task's transaction (option `commitsTopic`).
COMMITS_TOPIC = "__kafkars_spark_commits"
# Spark sets these on every task of a streaming micro-batch (StreamExecution.QUERY_ID_KEY,
# MicroBatchExecution.BATCH_ID_KEY); the query id survives restarts from a checkpoint.
_QUERY_ID_KEY = "sql.streaming.queryId"
_BATCH_ID_KEY = "streaming.sql.batchId"
_TXN_TIMEOUT = 60.0


@dataclass
class WriteResult(WriterCommitMessage):
    records: int
    #: The Spark partition (task) that wrote them, and its transactional id (exactlyOnce).
    partition: int = -1
    transactional_id: str | None = None
    #: exactlyOnce: an earlier attempt had committed this task's rows already (a replay).
    replayed: bool = False


def _kafka_properties(options: Mapping[str, Any]) -> dict[str, Any]:
    """The `kafka.`-prefixed options as Kafka client properties."""
    return {k[6:]: v for k, v in options.items() if k.lower().startswith("kafka.")}


#: The `compression.type` values the sink's producer takes.
_COMPRESSION = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class _ProducerSettings:
    """The sink's producer settings from the `kafka.*` options: `bootstrap.servers`,
    Spark's security options (`client_security`), and the Kafka producer settings the
    producer has: `compression.type`, `batch.size`, `delivery.timeout.ms`,
    `request.timeout.ms`, `transaction.timeout.ms`, `client.id`. Others are ignored (the
    producer is always idempotent with acks=all)."""

    bootstrap: str
    security: ClientSecurity
    compression: str = "none"
    #: librdkafka's batch size, which the sink had before: few requests for many rows.
    batch_bytes: int = 1 << 20
    delivery_timeout_ms: int = 120_000
    request_timeout_ms: int = 30_000
    transaction_timeout_ms: int = int(_TXN_TIMEOUT * 1000)
    client_id: str = "kafkars-spark"

    def producer(self, transactional_id: str | None = None) -> _core.Producer:
        return _core.Producer(
            bootstrap_addresses(self.bootstrap),
            client_id=self.client_id,
            security=self.security.settings(),
            timeout_ms=self.request_timeout_ms,
            transactional_id=transactional_id,
            compression=self.compression,
            transaction_timeout_ms=self.transaction_timeout_ms,
            delivery_timeout_ms=self.delivery_timeout_ms,
            batch_bytes=self.batch_bytes,
        )

    def client(self) -> KafkaClient:
        return KafkaClient(self.bootstrap, security=self.security)


def _producer_settings(options: Mapping[str, str]) -> _ProducerSettings:
    properties = {k.lower(): v for k, v in _kafka_properties(options).items()}
    for name in properties:
        if name in _REJECTED:
            raise ValueError(f"Kafka option '{name}' is not supported")
    bootstrap = properties.get("bootstrap.servers")
    if not bootstrap:
        raise ValueError("option 'kafka.bootstrap.servers' must be set")
    compression = str(properties.get("compression.type", "none")).strip().lower()
    if compression not in _COMPRESSION:
        raise ValueError(
            f"kafka.compression.type must be one of {', '.join(_COMPRESSION)}, not {compression!r}"
        )

    def number(name: str, default: int) -> int:
        v = properties.get(name)
        n = default if v is None else int(v)
        if n <= 0:
            raise ValueError(f"kafka.{name} must be positive")
        return n

    defaults = _ProducerSettings(bootstrap, PLAINTEXT)
    return _ProducerSettings(
        bootstrap,
        client_security(properties),
        compression,
        number("batch.size", defaults.batch_bytes),
        number("delivery.timeout.ms", defaults.delivery_timeout_ms),
        number("request.timeout.ms", defaults.request_timeout_ms),
        number("transaction.timeout.ms", defaults.transaction_timeout_ms),
        str(properties.get("client.id", defaults.client_id)),
    )


def _write_error(e: ProducerError, default_topic: str | None) -> Exception:
    """A denied Write as TopicAuthorizationError naming the topic (the producer's error
    carries it; the sink's `topic` otherwise); other errors as they are."""
    topic = getattr(e, "topic", None) or default_topic
    if e.code == Errors.TOPIC_AUTHORIZATION_FAILED and topic:
        return TopicAuthorizationError(topic, "Write")
    return e


def _send(
    producer: _core.Producer, default_topic: str | None, batches: Iterator[pa.RecordBatch]
) -> int:
    """Hands the rows (value, optional key/topic/partition/headers) to `producer`, one
    Arrow batch at a time: partitioned, batched and sent in Rust, each batch acknowledged
    before the next."""
    n = 0
    for batch in batches:
        n += producer.send(batch, default_topic)
    return n


def _default_topic(options: dict[str, str]) -> str | None:
    return {k.lower(): v for k, v in options.items()}.get("topic")


def produce_batches(options: dict[str, str], batches: Iterator[pa.RecordBatch]) -> int:
    """Sends the rows and waits for every acknowledgement: at-least-once, as Spark's
    Kafka sink."""
    producer = _producer_settings(options).producer()
    try:
        return _send(producer, _default_topic(options), batches)
    except ProducerError as e:
        raise _write_error(e, _default_topic(options)) from e


def _marker(write_id: str, epoch: int, records: int) -> str:
    return json.dumps({"write": write_id, "epoch": epoch, "records": records})


def _committed_before(metadata: str | None, write_id: str, epoch: int) -> bool:
    """Whether a task marker says this write's `epoch` (or a later one) was committed."""
    try:
        m = json.loads(metadata or "")
    except ValueError:
        return False
    return isinstance(m, dict) and m.get("write") == write_id and int(m.get("epoch", -1)) >= epoch


def produce_exactly_once(
    options: dict[str, str],
    batches: Iterator[pa.RecordBatch],
    *,
    prefix: str,
    write_id: str,
    epoch: int,
    commits_topic: str,
) -> WriteResult:
    """One task's rows in one Kafka transaction, with the task's marker (`write_id`,
    `epoch`) committed in the same transaction as a consumer-group offset (group = the
    transactional id `{prefix}-{partition}`). A replayed task whose marker is there
    already writes nothing; a new producer with the same id fences any older one."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    part = ctx.partitionId() if ctx is not None else 0
    batches = iter(batches)
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        return WriteResult(0, part)  # nothing to write, nothing to replay
    txn_id = f"{prefix}-{part}"
    settings = _producer_settings(options)
    default_topic = _default_topic(options)
    producer = settings.producer(txn_id)
    try:
        # Fences the producers of earlier attempts (retries, a killed driver's tasks) and
        # completes or aborts their transaction, so the marker read next is settled.
        producer.init_transactions()
        with settings.client() as client:
            _, done = client.committed(txn_id, commits_topic, 0)
        if _committed_before(done, write_id, epoch):
            for _ in batches:  # drain: Spark expects the input consumed
                pass
            return WriteResult(0, part, txn_id, replayed=True)
        producer.begin_transaction()
        try:
            n = _send(producer, default_topic, itertools.chain([first], batches))
            marker = (commits_topic, 0, epoch + 1, _marker(write_id, epoch, n))
            producer.send_offsets_to_transaction([marker], txn_id)
            producer.commit_transaction()
        except BaseException:
            with contextlib.suppress(Exception):
                producer.abort_transaction()
            raise
    except ProducerError as e:
        raise _write_error(e, default_topic) from e
    return WriteResult(n, part, txn_id)


def ensure_commits_topic(options: dict[str, str], topic: str) -> None:
    """Creates the markers' topic (one partition) if it is missing."""
    with _producer_settings(options).client() as client:
        client.create_topic(topic, 1)


class _ExactlyOnce:
    """The exactlyOnce options: `transactionalIdPrefix`, `commitsTopic`."""

    def __init__(self, options: dict[str, str]) -> None:
        o = {k.lower(): v for k, v in options.items()}
        self.enabled = _bool(o, "exactlyonce", False)
        self.prefix = o.get("transactionalidprefix")
        self.commits_topic = o.get("commitstopic", COMMITS_TOPIC)
        if self.enabled:
            ensure_commits_topic(options, self.commits_topic)


class KafkarsWriter(DataSourceArrowWriter):
    """Batch writes. exactlyOnce: every task's rows in one transaction, a retried task
    writing nothing when its predecessor had committed."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        _producer_settings(options)
        self.options = options
        self.txn = _ExactlyOnce(options)
        self.write_id = str(uuid.uuid4())  # made on the driver: one id for all the tasks

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        if not self.txn.enabled:
            return WriteResult(produce_batches(self.options, iterator))
        return produce_exactly_once(
            self.options,
            iterator,
            prefix=self.txn.prefix or f"kafkars-spark-{self.write_id}",
            write_id=self.write_id,
            epoch=0,
            commits_topic=self.txn.commits_topic,
        )


class KafkarsStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writes; at-least-once, or exactlyOnce: each task of a micro-batch
    commits its rows in one transaction whose id is `{prefix}-{task partition}` (prefix
    `kafkars-spark-{query id}` unless `transactionalIdPrefix` is set) together with a
    marker (query id, batch id). When a restarted query replays a micro-batch that was
    not in its checkpoint's commit log, the tasks whose marker is there write nothing."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        _producer_settings(options)
        self.options = options
        self.txn = _ExactlyOnce(options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        if not self.txn.enabled:
            return WriteResult(produce_batches(self.options, iterator))
        from pyspark import TaskContext

        ctx = TaskContext.get()
        query_id = ctx.getLocalProperty(_QUERY_ID_KEY) if ctx is not None else None
        batch_id = ctx.getLocalProperty(_BATCH_ID_KEY) if ctx is not None else None
        if query_id is None or batch_id is None:
            raise RuntimeError("exactlyOnce: the task carries no streaming query or batch id")
        return produce_exactly_once(
            self.options,
            iterator,
            prefix=self.txn.prefix or f"kafkars-spark-{query_id}",
            write_id=query_id,
            epoch=int(batch_id),
            commits_topic=self.txn.commits_topic,
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task has committed its own transaction by now (Kafka has no two-phase
        commit across producers); Spark records the batch in its commit log after this."""
        if self.txn.enabled and any(not isinstance(m, WriteResult) for m in messages):
            raise RuntimeError(f"exactlyOnce: a task of batch {batchId} reported no result")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Committed tasks stay: at-least-once; with exactlyOnce the replay of the batch
        skips them, and a failed task's transaction was aborted (or is fenced)."""
