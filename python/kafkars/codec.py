"""Kafka record batches (magic v2) from Python: decode, validate, build.

    for batch in kafkars.codec.decode_batches(data):
        for record in batch.records():
            print(record.offset, record.key, record.value, record.headers)

The same Rust decoder validates produce requests in the broker and feeds the Spark UDFs.
"""

from kafkars._core import (
    CorruptRecordError,
    Record,
    RecordBatch,
    build_batch,
    decode_batches,
)

COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")

__all__ = [
    "COMPRESSION_TYPES",
    "CorruptRecordError",
    "Record",
    "RecordBatch",
    "build_batch",
    "decode_batches",
]
