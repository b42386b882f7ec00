"""kafkars.codec: the Rust batch codec through the bindings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkars import codec

optional_bytes = st.none() | st.binary(max_size=64)
records = st.lists(
    st.tuples(
        optional_bytes,
        optional_bytes,
        st.integers(min_value=0, max_value=2**41),
        st.lists(st.tuples(st.text(max_size=8), optional_bytes), max_size=4),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(records=records, compression=st.sampled_from(codec.COMPRESSION_TYPES))
def test_build_decode_round_trip(records, compression: str) -> None:
    data = codec.build_batch(records, compression=compression, base_offset=100)
    (batch,) = codec.decode_batches(data)
    batch.validate()
    assert batch.compression == compression
    assert batch.base_offset == 100
    assert batch.records_count == len(records)
    decoded = batch.records()
    assert [r.offset for r in decoded] == list(range(100, 100 + len(records)))
    assert [(r.key, r.value, r.timestamp) for r in decoded] == [
        (k, v, ts) for k, v, ts, _ in records
    ]
    # Duplicate header keys survive in order.
    assert [r.headers for r in decoded] == [h for _, _, _, h in records]


def test_seed_batch_has_the_printed_size_and_crc() -> None:
    # Seed 003: `CreateTime: 1562121985144 size: 82 ... crc: 2717637561`, value
    # "hello, Kafka0!", no key, partitionLeaderEpoch 2 (outside the CRC).
    data = codec.build_batch(
        [(None, b"hello, Kafka0!", 1562121985144, [])], partition_leader_epoch=2
    )
    (batch,) = codec.decode_batches(data)
    assert batch.size_in_bytes == 82
    assert batch.crc == 2717637561
    assert batch.is_valid


def test_corruption_is_detected() -> None:
    data = bytearray(codec.build_batch([(b"k", b"v" * 100, 1, [])]))
    data[-5] ^= 0xFF
    (batch,) = codec.decode_batches(bytes(data))
    assert not batch.is_valid
    with pytest.raises(codec.CorruptRecordError) as err:
        batch.validate()
    assert err.value.args[0] == 2  # CORRUPT_MESSAGE


def test_truncated_tail_is_not_a_batch() -> None:
    one = codec.build_batch([(None, b"a", 1, [])])
    two = codec.build_batch([(None, b"b", 2, [])], base_offset=1)
    batches = codec.decode_batches(one + two[:-3])
    assert len(batches) == 1


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_never_crashes(data: bytes) -> None:
    try:
        for batch in codec.decode_batches(data):
            try:
                batch.validate()
                batch.records()
            except codec.CorruptRecordError:
                pass
    except codec.CorruptRecordError:
        pass
