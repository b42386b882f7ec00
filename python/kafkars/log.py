"""Read-only access to Kafka log directories: ours, or ones Apache Kafka wrote.

    d = kafkars.log.LogDir("./kafkars-data")
    for p in d.partitions():
        for record in p.records(start_offset=0):
            ...

Nothing here takes the log dir lock or writes: it is safe on a copy of a broker's data
and, with care, beside a running broker (a segment being appended to may end mid-batch;
that tail is reported as invalid bytes, never returned).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkars._core import Record, RecordBatch, SegmentReader

CHECKPOINT_FILES = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def read_checkpoint(path: str | Path) -> dict[tuple[str, int], int]:
    """An offset checkpoint file: version line (0), entry count, `topic partition offset`.
    A file that ends before its entry count has no entries, as Kafka reads it."""
    lines = Path(path).read_text().splitlines()
    if lines and lines[0].strip() != "0":
        raise ValueError(f"{path}: unrecognised checkpoint version {lines[:1]}")
    if len(lines) < 2:
        return {}
    count = int(lines[1])
    entries: dict[tuple[str, int], int] = {}
    for line in lines[2 : 2 + count]:
        topic, partition, offset = line.rsplit(" ", 2)
        entries[(topic, int(partition))] = int(offset)
    if len(entries) != count:
        raise ValueError(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


def read_properties(path: str | Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def base_offset_of(path: Path) -> int:
    """Segment files are named by their base offset, zero-padded to 20 digits."""
    return int(path.name.split(".", 1)[0])


def offset_index_entries(path: str | Path) -> list[tuple[int, int]]:
    """(offset, position) entries of an `.index` file. A preallocated (active) index is
    zero-filled past its last entry; like Kafka, stop at the first zero entry after the
    first."""
    path = Path(path)
    base = base_offset_of(path)
    data = path.read_bytes()
    out = []
    for i in range(len(data) // 8):
        relative, position = struct.unpack_from(">ii", data, i * 8)
        if i > 0 and relative == 0 and position == 0:
            break
        out.append((base + relative, position))
    return out


def time_index_entries(path: str | Path) -> list[tuple[int, int]]:
    """(timestamp, offset) entries of a `.timeindex` file."""
    path = Path(path)
    base = base_offset_of(path)
    data = path.read_bytes()
    out = []
    for i in range(len(data) // 12):
        timestamp, relative = struct.unpack_from(">qi", data, i * 12)
        if i > 0 and timestamp == 0 and relative == 0:
            break
        out.append((timestamp, base + relative))
    return out


@dataclass(frozen=True)
class Segment:
    """One `<base offset>.log` with its indexes."""

    base_offset: int
    log_path: Path

    @property
    def index_path(self) -> Path:
        return self.log_path.with_suffix(".index")

    @property
    def time_index_path(self) -> Path:
        return self.log_path.with_suffix(".timeindex")

    @property
    def size(self) -> int:
        return self.log_path.stat().st_size

    def batches(self, start_offset: int | None = None) -> Iterator[RecordBatch]:
        """Batches from the one containing `start_offset` (found through the sparse
        index, then a forward scan), or from the start."""
        position = 0
        if start_offset is not None and self.index_path.exists():
            entries = offset_index_entries(self.index_path)
            i = bisect.bisect_right([o for o, _ in entries], start_offset) - 1
            if i >= 0:
                position = entries[i][1]
        for batch in SegmentReader(str(self.log_path), position):
            if start_offset is None or batch.last_offset >= start_offset:
                yield batch


@dataclass(frozen=True)
class PartitionLog:
    """A `<topic>-<partition>` directory."""

    topic: str
    partition: int
    path: Path

    def segments(self) -> list[Segment]:
        logs = sorted(self.path.glob("*.log"), key=base_offset_of)
        return [Segment(base_offset_of(p), p) for p in logs]

    def batches(self, start_offset: int | None = None) -> Iterator[RecordBatch]:
        segments = self.segments()
        if start_offset is not None:
            bases = [s.base_offset for s in segments]
            first = max(bisect.bisect_right(bases, start_offset) - 1, 0)
            segments = segments[first:]
        for segment in segments:
            yield from segment.batches(start_offset)

    def records(self, start_offset: int | None = None) -> Iterator[Record]:
        for batch in self.batches(start_offset):
            if batch.is_control:
                continue
            for record in batch.records():
                if start_offset is None or record.offset >= start_offset:
                    yield record

    @property
    def log_start_offset(self) -> int:
        segments = self.segments()
        return segments[0].base_offset if segments else 0

    @property
    def log_end_offset(self) -> int:
        """One past the last offset of the last complete batch."""
        for segment in reversed(self.segments()):
            last = None
            for batch in segment.batches():
                last = batch
            if last is not None:
                return int(last.next_offset)
        return self.log_start_offset

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """The first offset whose record timestamp is >= `timestamp` (ListOffsets)."""
        for segment in self.segments():
            entries = (
                time_index_entries(segment.time_index_path)
                if segment.time_index_path.exists()
                else []
            )
            if entries and entries[-1][0] < timestamp:
                continue  # every record in this segment is older
            for batch in segment.batches():
                if batch.max_timestamp < timestamp:
                    continue
                for record in batch.records():
                    if record.timestamp >= timestamp:
                        return int(record.offset)
        return None


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """`my.topic-3` → ("my.topic", 3); None for anything else (deleted dirs, files)."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class LogDir:
    """One entry of `log.dirs`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"{self.path} is not a directory")

    @property
    def meta_properties(self) -> dict[str, str]:
        meta = self.path / "meta.properties"
        return read_properties(meta) if meta.exists() else {}

    def checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        path = self.path / name
        return read_checkpoint(path) if path.exists() else {}

    def partitions(self) -> list[PartitionLog]:
        out = []
        for child in sorted(self.path.iterdir()):
            parsed = parse_partition_dir(child.name) if child.is_dir() else None
            if parsed:
                out.append(PartitionLog(parsed[0], parsed[1], child))
        return out

    def partition(self, topic: str, partition: int) -> PartitionLog:
        path = self.path / f"{topic}-{partition}"
        if not path.is_dir():
            raise KeyError(f"{topic}-{partition} is not in {self.path}")
        return PartitionLog(topic, partition, path)

    def topics(self) -> dict[str, list[PartitionLog]]:
        out: dict[str, list[PartitionLog]] = {}
        for p in self.partitions():
            out.setdefault(p.topic, []).append(p)
        return out
