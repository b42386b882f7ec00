"""Record batches in pyarrow arrays decoded into Spark's Kafka rows, by the Rust core.

Needs only pyarrow; the Spark pieces (`kafkars_spark.udfs`, `kafkars_spark.source`) build
on it.
"""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa

from kafkars import _core

#: Spark's Kafka source schema (`includeHeaders=true` adds `headers`), as Spark DDL.
KAFKA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key:string,value:binary>>"
#: The batch-level columns `decode_batches(..., batch_fields=True)` adds.
BATCH_FIELDS_DDL = (
    "baseOffset long, producerId long, isTransactional boolean, isControl boolean, "
    "compression string"
)
ERROR_DDL = "error string"


def kafka_ddl(
    *, include_headers: bool = True, batch_fields: bool = False, error_column: bool = False
) -> str:
    """The DDL of what `decode_batches` returns with the same options."""
    parts = [KAFKA_DDL]
    if include_headers:
        parts.append(HEADERS_DDL)
    if batch_fields:
        parts.append(BATCH_FIELDS_DDL)
    if error_column:
        parts.append(ERROR_DDL)
    return ", ".join(parts)


def _as_array(values: Any) -> Any:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values


def decode_batches(
    blobs: pa.Array | pa.ChunkedArray,
    topic: str | pa.Array | pa.ChunkedArray | None = None,
    partition: int | pa.Array | pa.ChunkedArray | None = None,
    *,
    include_headers: bool = True,
    batch_fields: bool = True,
    on_error: Literal["raise", "column"] = "raise",
    verify_crc: bool = True,
    skip_control: bool = True,
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> pa.RecordBatch:
    """Decodes the record batches in `blobs` (binary or large_binary; each value one or
    more concatenated v2 batches of any codec) into one `pa.RecordBatch` of Kafka rows.

    `topic`/`partition` are one value for all rows or arrays as long as `blobs`.
    Records outside `[start_offset, end_offset)` and control batches are left out.
    `on_error="raise"` raises `kafkars.CorruptRecordError` (args: code, message, row,
    base offset) at the first bad batch; `"column"` adds an `error` column holding one
    row per bad batch instead, whose records are skipped. One call into Rust, which
    decodes with the GIL released and hands the result over the Arrow C data interface.
    """
    schema, array = _core.decode_batches_arrow(
        _as_array(blobs),
        _as_array(topic),
        _as_array(partition),
        include_headers=include_headers,
        batch_fields=batch_fields,
        on_error=on_error,
        verify_crc=verify_crc,
        skip_control=skip_control,
        start_offset=start_offset,
        end_offset=end_offset,
    )
    return pa.RecordBatch._import_from_c_capsule(schema, array)


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` with exactly `schema`'s columns, in order and types (Spark checks both)."""
    batch = batch.select(schema.names)
    if batch.schema.equals(schema):
        return batch
    return batch.cast(schema)
