"""The Rust Arrow decoder and fetcher on their own (pyarrow and a broker, no JVM)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafkars.broker import Broker
from kafkars.codec import COMPRESSION_TYPES, CorruptRecordError, build_batch
from kafkars_spark.arrow import decode_batches


def records(n: int, start: int = 0) -> list:
    return [
        (
            f"k{i}".encode() if i % 3 else None,
            f"value-{i}".encode() * (i % 5 + 1),
            1_700_000_000_000 + i,
            [("h", b"1"), ("h", None), ("x", f"{i}".encode())] if i % 2 else [],
        )
        for i in range(start, start + n)
    ]


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_every_codec_decodes_to_kafka_rows(codec: str) -> None:
    blobs = pa.array(
        [
            build_batch(records(50), compression=codec, base_offset=0)
            + build_batch(records(30, 50), compression=codec, base_offset=50),
            None,
            build_batch(records(20, 80), compression=codec, base_offset=80),
        ],
        pa.large_binary(),
    )
    out = decode_batches(blobs, pa.array(["a", "b", "c"]), pa.array([0, 1, 2], pa.int32()))
    assert out.num_rows == 100
    assert out.column("offset").to_pylist() == list(range(100))
    assert out.column("topic").to_pylist() == ["a"] * 80 + ["c"] * 20
    assert out.column("partition").to_pylist() == [0] * 80 + [2] * 20
    assert out.column("compression").to_pylist() == [codec] * 100
    want = records(100)
    assert out.column("key").to_pylist() == [r[0] for r in want]
    assert out.column("value").to_pylist() == [r[1] for r in want]
    ts = out.column("timestamp")
    assert ts.type == pa.timestamp("us", tz="UTC")
    assert [t.value // 1000 for t in ts] == [r[2] for r in want]
    headers = out.column("headers").to_pylist()
    assert headers[1] == [
        {"key": "h", "value": b"1"},
        {"key": "h", "value": None},
        {"key": "x", "value": b"1"},
    ]
    assert headers[0] is None  # no headers: null, as Spark's Kafka source gives
    assert set(out.column("timestampType").to_pylist()) == {0}


def test_scalars_offset_window_and_no_extras() -> None:
    blobs = pa.array([build_batch(records(10), base_offset=100)], pa.binary())
    out = decode_batches(
        blobs, "t", 3, start_offset=103, end_offset=107, batch_fields=False, include_headers=False
    )
    assert out.schema.names == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    assert out.column("offset").to_pylist() == [103, 104, 105, 106]
    assert set(out.column("topic").to_pylist()) == {"t"}


def test_corrupt_batch_raises_or_becomes_an_error_row() -> None:
    good = build_batch(records(5), base_offset=0)
    bad = bytearray(build_batch(records(5, 5), compression="lz4", base_offset=5))
    bad[-3] ^= 0xFF  # flips a byte under the CRC
    blobs = pa.array([good, bytes(bad), good], pa.binary())
    with pytest.raises(CorruptRecordError) as e:
        decode_batches(blobs, "t", 0)
    assert "row 1" in str(e.value)
    out = decode_batches(blobs, "t", 0, on_error="column")
    errors = out.column("error").to_pylist()
    assert out.num_rows == 11
    assert [e is None for e in errors] == [True] * 5 + [False] + [True] * 5
    assert "crc" in errors[5].lower() or "corrupt" in errors[5].lower()
    assert out.column("baseOffset").to_pylist()[5] == 5


def test_truncated_tail_is_ignored_like_a_fetch_response() -> None:
    data = build_batch(records(5)) + build_batch(records(5, 5), base_offset=5)[:40]
    out = decode_batches(pa.array([data], pa.binary()), "t", 0)
    assert out.column("offset").to_pylist() == list(range(5))


def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        decode_batches(pa.array([1, 2]), "t", 0)
    with pytest.raises(ValueError):
        decode_batches(pa.array([b""]), "t", 0, on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        decode_batches(pa.array([b"", b""]), pa.array(["t"]), 0)


def test_rust_fetcher_reads_a_range_mid_batch(broker: Broker, topic: str) -> None:
    from confluent_kafka import Producer

    from kafkars import _core

    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50})
    for i in range(50):
        p.produce(topic, value=f"v{i}".encode(), key=b"k", partition=0)
    assert p.flush(30) == 0
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    fetcher = _core.ArrowFetcher(host, int(port))
    got: list[int] = []
    pos = 7
    while pos < 30:
        error, hw, log_start, nxt, capsules = fetcher.fetch(topic, 0, pos, 30)
        assert (error, hw, log_start) == (0, 50, 0)
        assert nxt is not None and nxt > pos
        if capsules is not None:
            got += pa.RecordBatch._import_from_c_capsule(*capsules).column("offset").to_pylist()
        pos = nxt
    assert got == list(range(7, 30))
    fetcher.close()


def test_rust_fetcher_connection_refused_is_an_oserror() -> None:
    import socket

    from kafkars import _core

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(OSError):
        _core.ArrowFetcher("127.0.0.1", port, 2000).fetch("t", 0, 0, 10)
