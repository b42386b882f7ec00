"""`kafkars-dump-log`: Kafka's DumpLogSegments for `.log`, `.index` and `.timeindex` files.

Output follows Kafka's format, so scripts written for `kafka-dump-log.sh` keep working:

    baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 ... size: 90 magic: 2
    compresscodec: NONE crc: 789477047 isvalid: true
    | offset: 0 CreateTime: 1653893607501 keysize: -1 valuesize: 7 sequence: -1 headerKeys: []
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import click

from kafkars._core import CorruptRecordError, RecordBatch, SegmentReader
from kafkars.log import base_offset_of, offset_index_entries, time_index_entries


def batch_line(batch: RecordBatch) -> str:
    timestamp_label = "LogAppendTime" if batch.timestamp_type == "LogAppendTime" else "CreateTime"
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
        f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
        f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {str(batch.is_transactional).lower()} "
        f"isControl: {str(batch.is_control).lower()} position: {batch.position} "
        f"{timestamp_label}: {batch.max_timestamp} size: {batch.size_in_bytes} "
        f"magic: {batch.magic} compresscodec: {batch.compression.upper()} crc: {batch.crc} "
        f"isvalid: {str(batch.is_valid).lower()}"
    )


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", errors="replace")


def record_lines(batch: RecordBatch, print_data: bool) -> Iterator[str]:
    timestamp_label = "LogAppendTime" if batch.timestamp_type == "LogAppendTime" else "CreateTime"
    for record in batch.records():
        sequence = (
            batch.base_sequence + (record.offset - batch.base_offset)
            if batch.base_sequence >= 0
            else -1
        )
        line = (
            f"| offset: {record.offset} {timestamp_label}: {record.timestamp} "
            f"keysize: {-1 if record.key is None else len(record.key)} "
            f"valuesize: {-1 if record.value is None else len(record.value)} "
            f"sequence: {sequence} headerKeys: [{', '.join(k for k, _ in record.headers)}]"
        )
        if batch.is_control and record.key is not None and len(record.key) >= 4:
            kind = struct.unpack_from(">h", record.key, 2)[0]
            marker = {0: "ABORT", 1: "COMMIT"}.get(kind, f"UNKNOWN({kind})")
            epoch = struct.unpack_from(">i", record.value or b"\0" * 6, 2)[0]
            line += f" endTxnMarker: {marker} coordinatorEpoch: {epoch}"
        elif print_data:
            if record.key is not None:
                line += f" key: {_text(record.key)}"
            line += f" payload: {_text(record.value)}"
        yield line


def dump_log_file(path: Path, print_data: bool, deep: bool, out: TextIO) -> None:
    print(f"Starting offset: {base_offset_of(path)}", file=out)
    reader = SegmentReader(str(path))
    for batch in reader:
        print(batch_line(batch), file=out)
        if print_data or deep:
            try:
                for line in record_lines(batch, print_data):
                    print(line, file=out)
            except CorruptRecordError as e:
                print(f"| could not decode records: {e.args[-1]}", file=out)
    if reader.invalid_bytes:
        print(f"Found {reader.invalid_bytes} invalid bytes at the end of {path.name}", file=out)


def dump_file(path: Path, print_data: bool, deep: bool, out: TextIO) -> None:
    print(f"Dumping {path}", file=out)
    suffix = path.suffix
    if suffix == ".log":
        dump_log_file(path, print_data, deep, out)
    elif suffix == ".index":
        for offset, position in offset_index_entries(path):
            print(f"offset: {offset} position: {position}", file=out)
    elif suffix == ".timeindex":
        for timestamp, offset in time_index_entries(path):
            print(f"timestamp: {timestamp} offset: {offset}", file=out)
    else:
        print(f"Ignoring unknown file {path}", file=out)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--files",
    required=True,
    help="Comma-separated .log, .index and .timeindex files to dump.",
)
@click.option("--print-data-log", is_flag=True, help="Print each record's key and payload.")
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batch headers.")
def main(files: str, print_data_log: bool, deep_iteration: bool) -> None:
    """Dump Kafka log segments and indexes (Kafka's DumpLogSegments)."""
    for name in files.split(","):
        path = Path(name.strip())
        if not path.exists():
            raise click.ClickException(f"{path} does not exist")
        dump_file(path, print_data_log, deep_iteration, sys.stdout)


if __name__ == "__main__":
    main()
