"""`kafkars-dump-log`: Kafka's DumpLogSegments for `.log`, `.index` and `.timeindex` files.

Output follows Kafka's format, so scripts written for `kafka-dump-log.sh` keep working:

    baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 ... size: 90 magic: 2
    compresscodec: NONE crc: 789477047 isvalid: true
    | offset: 0 CreateTime: 1653893607501 keysize: -1 valuesize: 7 sequence: -1 headerKeys: []

`--deep-iteration` prints every record, `--print-data-log` its key and payload as text;
`--offsets-decoder` (a `__consumer_offsets` segment) and `--transaction-log-decoder` (a
`__transaction_state` one) print them decoded, as JSON, and imply both. Segments are read
by the Rust core (`SegmentReader`); offsets records by the group coordinator's decoders,
transaction log records by the Rust codec. A file that is not a segment or an index is
one line on standard error and exit code 1, after the other files are dumped.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import click

from kafkars._core import CorruptRecordError, KafkarsError, RecordBatch, SegmentReader
from kafkars.log import base_offset_of, offset_index_entries, time_index_entries
from kafkars.tools.client import Tool, version_option


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


class Decoder:
    """How a record's key and payload are printed: as text, or decoded from an internal
    topic's format (`offsets`, `transaction-log`)."""

    def __init__(self, kind: str | None) -> None:
        self.kind = kind

    def parts(self, key: bytes | None, value: bytes | None) -> tuple[str | None, str]:
        if self.kind is None:
            return (None if key is None else _text(key)), _text(value)
        from kafkars.tools import internal_records

        try:
            if self.kind == "offsets":
                decoded = internal_records.decode(key, value)
            else:
                decoded = internal_records.decode_transaction(key, value)
        except ValueError as e:
            return None, f"<{e}>"
        if decoded is None:
            return (None if key is None else _text(key)), _text(value)
        payload = decoded["value"]
        return (
            internal_records.to_json(decoded["key"]),
            "NULL" if payload is None else internal_records.to_json(payload),
        )


def record_lines(
    batch: RecordBatch,
    print_data: bool,
    decoder: Decoder | None = None,
    skip_metadata: bool = False,
) -> Iterator[str]:
    timestamp_label = "LogAppendTime" if batch.timestamp_type == "LogAppendTime" else "CreateTime"
    decoder = decoder or Decoder(None)
    for record in batch.records():
        sequence = (
            batch.base_sequence + (record.offset - batch.base_offset)
            if batch.base_sequence >= 0
            else -1
        )
        line = (
            ""
            if skip_metadata
            else (
                f"| offset: {record.offset} {timestamp_label}: {record.timestamp} "
                f"keysize: {-1 if record.key is None else len(record.key)} "
                f"valuesize: {-1 if record.value is None else len(record.value)} "
                f"sequence: {sequence} headerKeys: [{', '.join(k for k, _ in record.headers)}]"
            )
        )
        if batch.is_control and record.key is not None and len(record.key) >= 4:
            kind = struct.unpack_from(">h", record.key, 2)[0]
            marker = {0: "ABORT", 1: "COMMIT"}.get(kind, f"UNKNOWN({kind})")
            epoch = struct.unpack_from(">i", record.value or b"\0" * 6, 2)[0]
            line += f" endTxnMarker: {marker} coordinatorEpoch: {epoch}"
        elif print_data:
            key, payload = decoder.parts(record.key, record.value)
            if key is not None:
                line += f" key: {key}"
            line += f" payload: {payload}"
        yield line.lstrip() if skip_metadata else line


def dump_log_file(
    path: Path,
    print_data: bool,
    deep: bool,
    out: TextIO,
    decoder: Decoder | None = None,
    skip_metadata: bool = False,
) -> None:
    print(f"Starting offset: {base_offset_of(path)}", file=out)
    reader = SegmentReader(str(path))
    for batch in reader:
        if not skip_metadata:
            print(batch_line(batch), file=out)
        if print_data or deep:
            try:
                for line in record_lines(batch, print_data, decoder, skip_metadata):
                    print(line, file=out)
            except CorruptRecordError as e:
                print(f"| could not decode records: {e.args[-1]}", file=out)
    if reader.invalid_bytes:
        print(f"Found {reader.invalid_bytes} invalid bytes at the end of {path.name}", file=out)


def _check_named_by_offset(path: Path) -> None:
    stem = path.name.split(".", 1)[0]
    if not stem.isdigit():
        raise click.ClickException(
            f"{path} is not a log segment or index: its name is not a base offset "
            "(like 00000000000000000000.log)"
        )


def dump_file(
    path: Path,
    print_data: bool,
    deep: bool,
    out: TextIO,
    decoder: Decoder | None = None,
    skip_metadata: bool = False,
) -> None:
    """Dumps one file; a ClickException (one line) when it is no segment or index."""
    if path.is_dir():
        raise click.ClickException(f"{path} is a directory; give its .log/.index files")
    suffix = path.suffix
    if suffix not in (".log", ".index", ".timeindex"):
        raise click.ClickException(f"{path} is not a .log, .index or .timeindex file")
    _check_named_by_offset(path)
    print(f"Dumping {path}", file=out)
    try:
        if suffix == ".log":
            dump_log_file(path, print_data, deep, out, decoder, skip_metadata)
        elif suffix == ".index":
            for offset, position in offset_index_entries(path):
                print(f"offset: {offset} position: {position}", file=out)
        else:
            for timestamp, offset in time_index_entries(path):
                print(f"timestamp: {timestamp} offset: {offset}", file=out)
    except BrokenPipeError:
        raise
    except (OSError, KafkarsError, ValueError, struct.error) as e:
        raise click.ClickException(f"cannot read {path}: {e}") from None


@click.command(cls=Tool)
@click.option(
    "--files",
    required=True,
    help="Comma-separated .log, .index and .timeindex files to dump.",
)
@click.option("--print-data-log", is_flag=True, help="Print each record's key and payload.")
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batch headers.")
@click.option(
    "--offsets-decoder",
    is_flag=True,
    help="Decode __consumer_offsets records (implies --print-data-log).",
)
@click.option(
    "--transaction-log-decoder",
    is_flag=True,
    help="Decode __transaction_state records (implies --print-data-log).",
)
@click.option(
    "--skip-record-metadata", is_flag=True, help="With --print-data-log: only key and payload."
)
@version_option()
def main(
    files: str,
    print_data_log: bool,
    deep_iteration: bool,
    offsets_decoder: bool,
    transaction_log_decoder: bool,
    skip_record_metadata: bool,
) -> None:
    """Dump Kafka log segments and indexes (Kafka's DumpLogSegments)."""
    if offsets_decoder and transaction_log_decoder:
        raise click.UsageError("give --offsets-decoder or --transaction-log-decoder, not both")
    kind = "offsets" if offsets_decoder else "transaction-log" if transaction_log_decoder else None
    if kind == "transaction-log":
        from kafkars.tools import internal_records

        if not internal_records.transaction_decoder_available():
            raise click.ClickException("this build of kafkars has no __transaction_state decoder")
    print_data = print_data_log or kind is not None
    names = [n.strip() for n in files.split(",") if n.strip()]
    if not names:
        raise click.BadParameter("no file given", param_hint="'--files'")
    failed = 0
    for name in names:
        path = Path(name)
        try:
            if not path.exists():
                raise click.ClickException(f"{path} does not exist")
            dump_file(
                path, print_data, deep_iteration, sys.stdout, Decoder(kind), skip_record_metadata
            )
        except click.ClickException as e:
            sys.stdout.flush()
            e.show()
            failed += 1
    if failed:
        raise click.exceptions.Exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
