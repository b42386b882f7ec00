"""Decoding throughput for Spark: the Rust Arrow decoder (`kafkars_spark.decode_batches`,
one call per Arrow batch) against a pure-Python decoder (kafka-python's
`DefaultRecordBatch`) on the same batches. Not a test: `make bench`, or run this file
directly for a records/s table.

Single-threaded on purpose: records/s here is per core.
"""

from __future__ import annotations

import os

# Per core, as the docstring says: numpy's BLAS worker threads (pulled in with pyarrow)
# otherwise spin on the other core and make the figures swing by 2x from run to run.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from kafkars.codec import build_batch
from kafkars_spark.arrow import decode_batches

RECORDS_PER_BATCH = 100
CASES = [(size, codec) for size in (100, 10_000) for codec in ("none", "lz4", "zstd")]


def make_batches(value_size: int, codec: str, total_bytes: int = 8 << 20) -> list[bytes]:
    n_batches = max(4, total_bytes // (value_size * RECORDS_PER_BATCH))
    out, offset = [], 0
    for b in range(n_batches):
        recs = [
            (
                f"key-{offset + i}".encode(),
                (f"{b}:{i}:".encode() + bytes(range(256)) * (value_size // 256 + 1))[:value_size],
                1_700_000_000_000 + offset + i,
                [("trace", b"abc")],
            )
            for i in range(RECORDS_PER_BATCH)
        ]
        out.append(build_batch(recs, compression=codec, base_offset=offset))
        offset += RECORDS_PER_BATCH
    return out


def rust_arrow(batches: list[bytes]) -> Callable[[], int]:
    blobs = pa.array(batches, pa.binary())

    def run() -> int:
        return decode_batches(blobs, "t", 0, batch_fields=False).num_rows

    return run


def pure_python(batches: list[bytes]) -> Callable[[], int]:
    from kafka.record.default_records import DefaultRecordBatch

    def run() -> int:
        n = 0
        for data in batches:
            for r in DefaultRecordBatch(bytearray(data)):
                _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
                n += 1
        return n

    return run


DECODERS = {"rust_arrow": rust_arrow, "pure_python": pure_python}


@pytest.mark.parametrize("decoder", list(DECODERS))
@pytest.mark.parametrize(("value_size", "codec"), CASES)
def test_decode(benchmark: Any, decoder: str, value_size: int, codec: str) -> None:
    if decoder == "pure_python" and codec != "none":
        pytest.importorskip("lz4" if codec == "lz4" else "zstandard")  # kafka-python's codecs
    batches = make_batches(value_size, codec, total_bytes=2 << 20)
    run = DECODERS[decoder](batches)
    n = benchmark(run)
    assert n == len(batches) * RECORDS_PER_BATCH
    benchmark.extra_info["records"] = n
    if benchmark.stats is not None:
        benchmark.extra_info["records_per_s"] = n / benchmark.stats.stats.mean


def _rate(run: Callable[[], int], min_time: float = 3.0) -> float:
    run()  # warm up
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < min_time:
        n += run()
    return n / elapsed


def main() -> None:
    print(f"{'value':>7} {'codec':>5} {'rust_arrow rec/s':>17} {'pure_python rec/s':>18} {'x':>6}")
    for value_size, codec in CASES:
        batches = make_batches(value_size, codec)
        fast = _rate(rust_arrow(batches))
        slow = _rate(pure_python(batches))
        print(f"{value_size:>6}B {codec:>5} {fast:>17,.0f} {slow:>18,.0f} {fast / slow:>6.1f}")


if __name__ == "__main__":
    main()
