"""The `kafkars` data source beside Spark's own Kafka connector (spark-sql-kafka-0-10,
fetched by `make spark-connector-deps`): batch reads of the same topics on a kafkars
broker, by offsets and by timestamps, give identical rows in every column."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer

from kafkars.broker import Broker

from .conftest import connector_jars
from .test_source import create

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not connector_jars(),
        reason="Spark's Kafka connector not fetched: make spark-connector-deps",
    ),
]
BASE_TS = 1_700_000_000_000


def produce(broker: Broker, topic: str, n: int) -> None:
    """Keys (some null), headers (some none, some repeated), timestamps 10 ms apart."""
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(n):
        headers = [("h", f"{i}".encode()), ("h", None)] if i % 3 == 0 else None
        key = None if i % 5 == 0 else f"k{i}".encode()
        p.produce(
            topic,
            value=f"v{i}".encode() * (i % 7 + 1),
            key=key,
            partition=i % 3,
            timestamp=BASE_TS + 10 * i,
            headers=headers,
        )
    assert p.flush(30) == 0


SCHEMA = [
    "key:binary",
    "value:binary",
    "topic:string",
    "partition:int",
    "offset:bigint",
    "timestamp:timestamp",
    "timestampType:int",
    "headers:array<struct<key:string,value:binary>>",
]


def rows(spark: Any, fmt: str, bootstrap: str, options: dict[str, str]) -> list[tuple]:
    """Every column of a batch read with `includeHeaders`, in (partition, offset) order."""
    r = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("includeHeaders", "true")
    )
    for k, v in options.items():
        r = r.option(k, v)
    return rows_of(r.load())


def rows_of(df: Any) -> list[tuple]:
    assert [f.simpleString() for f in df.schema.fields] == SCHEMA
    out = []
    for key, value, topic, partition, offset, ts, ts_type, headers in df.collect():
        hs = None if headers is None else [(h.key, h.value and bytes(h.value)) for h in headers]
        out.append((key and bytes(key), bytes(value), topic, partition, offset, ts, ts_type, hs))
    return sorted(out, key=lambda r: (r[3], r[4]))


def ts(i: int) -> int:
    return BASE_TS + 10 * i


@pytest.mark.parametrize(
    ("options", "count"),
    [
        ({}, 300),
        (
            {
                "startingOffsets": '{"T":{"0":5,"1":-2,"2":40}}',
                "endingOffsets": '{"T":{"0":20,"1":-1,"2":41}}',
            },
            15 + 100 + 1,
        ),
        (
            {
                "startingOffsetsByTimestamp": f'{{"T":{{"0":{ts(30)},"1":{ts(31)},"2":{ts(95)}}}}}',
                # No record as late as ts(500) in partition 1: it ends at the latest offset.
                "endingOffsetsByTimestamp": f'{{"T":{{"0":{ts(60)},"1":{ts(500)},"2":{ts(200)}}}}}',
            },
            10 + 90 + 35,
        ),
        ({"startingTimestamp": str(ts(100) + 5), "endingTimestamp": str(ts(250))}, 250 - 101),
        (
            {"startingTimestamp": str(ts(10_000)), "startingOffsetsByTimestampStrategy": "latest"},
            0,
        ),
    ],
    ids=["all", "offsets", "offsets-by-timestamp", "timestamp", "timestamp-past-the-end"],
)
def test_same_rows_as_spark_kafka(
    spark: Any, broker: Broker, topic: str, options: dict[str, str], count: int
) -> None:
    create(broker, topic, 3)
    produce(broker, topic, 300)
    opts = {"subscribe": topic, **{k: v.replace('"T"', f'"{topic}"') for k, v in options.items()}}
    ours = rows(spark, "kafkars", broker.bootstrap_servers, opts)
    theirs = rows(spark, "kafka", broker.bootstrap_servers, opts)
    assert len(ours) == count
    assert ours == theirs
