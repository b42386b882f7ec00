"""The decoding UDFs on a real local Spark: a binary column of raw record batches."""

from __future__ import annotations

from typing import Any

import pytest

from kafkars.codec import COMPRESSION_TYPES, build_batch
from kafkars_spark.arrow import kafka_ddl
from kafkars_spark.udfs import decode_kafka_batches, decode_records_udf


def batches_df(spark: Any, codec: str) -> Any:
    rows = []
    for p in range(2):
        for b in range(3):
            recs = [
                (f"k{p}-{b}-{i}".encode(), f"v{i}".encode(), 1_700_000_000_000 + i,
                 [("h", b"1"), ("h", b"2")])
                for i in range(10)
            ]  # fmt: skip
            rows.append(("t", p, build_batch(recs, compression=codec, base_offset=b * 10)))
    return spark.createDataFrame(rows, "topic string, partition int, batch binary")


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_map_in_arrow_gives_kafka_rows(spark: Any, codec: str) -> None:
    df = batches_df(spark, codec).mapInArrow(
        decode_kafka_batches("batch", batch_fields=True), kafka_ddl(batch_fields=True)
    )
    rows = df.orderBy("partition", "offset").collect()
    assert len(rows) == 60
    for p in range(2):
        mine = [r for r in rows if r.partition == p]
        assert [r.offset for r in mine] == list(range(30))  # contiguous per partition
        assert [r.key for r in mine][:2] == [f"k{p}-0-0".encode(), f"k{p}-0-1".encode()]
    first = rows[0]
    assert (first.topic, first.value, first.compression) == ("t", b"v0", codec)
    assert [(h.key, h.value) for h in first.headers] == [("h", b"1"), ("h", b"2")]
    assert first.timestamp.timestamp() == 1_700_000_000
    assert {r.baseOffset for r in rows} == {0, 10, 20}


def test_arrow_udf_gives_records_per_batch(spark: Any) -> None:
    decode = decode_records_udf()
    df = batches_df(spark, "zstd").select("partition", decode("batch").alias("records"))
    out = df.collect()
    assert [len(r.records) for r in out] == [10] * 6
    assert sorted(rec.offset for r in out if r.partition == 1 for rec in r.records) == sorted(
        list(range(30))
    )
