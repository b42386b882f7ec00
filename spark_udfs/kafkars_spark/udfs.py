"""Spark functions decoding a binary column of raw record batches with the Rust decoder:
`decode_kafka_batches` for `mapInArrow` (flat rows, the fast path), and `decode_records`,
an `arrow_udf` giving each batch's records as an array of structs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkars_spark.arrow import decode_batches, kafka_ddl

#: The struct of one record in `decode_records`' result.
RECORD_DDL = (
    "struct<offset:bigint,timestamp:timestamp,timestampType:int,key:binary,value:binary,"
    "headers:array<struct<key:string,value:binary>>,baseOffset:bigint,producerId:bigint,"
    "isTransactional:boolean,isControl:boolean,compression:string>"
)
_RECORD_FIELDS = [
    "offset",
    "timestamp",
    "timestampType",
    "key",
    "value",
    "headers",
    "baseOffset",
    "producerId",
    "isTransactional",
    "isControl",
    "compression",
]


def decode_kafka_batches(
    column: str = "value",
    *,
    topic_column: str | None = "topic",
    partition_column: str | None = "partition",
    include_headers: bool = True,
    batch_fields: bool = True,
    on_error: str = "raise",
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A function for `df.mapInArrow(f, schema)` turning rows of raw batches in `column`
    into one row per record; pair it with `kafka_ddl(...)` of the same options:

        f = decode_kafka_batches("batch")
        df.mapInArrow(f, kafka_ddl(batch_fields=True))

    `topic_column`/`partition_column` are copied onto the records when present."""

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            names = b.schema.names
            yield decode_batches(
                b.column(column),
                b.column(topic_column) if topic_column in names else None,
                b.column(partition_column) if partition_column in names else None,
                include_headers=include_headers,
                batch_fields=batch_fields,
                on_error=on_error,  # type: ignore[arg-type]
            )

    return decode


def _records_per_blob(blobs: pa.Array) -> pa.Array:
    """One list of records per value of `blobs`, in `RECORD_DDL`'s shape."""
    if isinstance(blobs, pa.ChunkedArray):
        blobs = blobs.combine_chunks()
    # The row of each record is known from per-row decoding offsets: decode each blob's
    # share by giving the row number as the "partition" column.
    rows = pa.array(range(len(blobs)), pa.int32())
    decoded = decode_batches(blobs, None, rows, include_headers=True, batch_fields=True)
    counts = pc.value_counts(decoded.column("partition")) if decoded.num_rows else None
    per_row = [0] * len(blobs)
    if counts is not None:
        for item in counts.to_pylist():
            per_row[item["values"]] = item["counts"]
    offsets = [0]
    for n in per_row:
        offsets.append(offsets[-1] + n)
    struct = pa.StructArray.from_arrays(
        [decoded.column(f) for f in _RECORD_FIELDS], names=_RECORD_FIELDS
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct)


def decode_records_udf() -> Any:
    """An `arrow_udf`: `df.select(decode_records(col("batch")))` gives an
    `array<RECORD_DDL>` per row (null blobs give an empty array)."""
    from pyspark.sql.functions import arrow_udf

    return arrow_udf(f"array<{RECORD_DDL}>")(_records_per_blob)  # type: ignore[call-overload]


def decode_records_pandas_udf() -> Any:
    """The same as a `pandas_udf`, for code built on pandas UDFs (slower: pandas holds the
    bytes as Python objects)."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    @pandas_udf(f"array<{RECORD_DDL}>")  # type: ignore[call-overload]
    def decode_records(blobs: pd.Series) -> pd.Series:
        out = _records_per_blob(pa.array(blobs, pa.binary()))
        return out.to_pandas()

    return decode_records


__all__ = [
    "RECORD_DDL",
    "decode_kafka_batches",
    "decode_records_pandas_udf",
    "decode_records_udf",
    "kafka_ddl",
]
