"""The `kafkars` data source on a local Spark against real brokers: batch and streaming
reads, writes, and the offline log-dir reader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker

pytestmark = pytest.mark.timeout(240)


def create(broker: Broker, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def produce(
    broker: Broker, topic: str, n: int, *, codec: str = "none", start: int = 0, partitions: int = 3
) -> list[tuple[int, bytes, bytes, list]]:
    """n records spread over the partitions; returns (partition, key, value, headers)."""
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "compression.type": codec,
            "linger.ms": 5,
            "batch.num.messages": 200,
        }
    )
    sent = []
    for i in range(start, start + n):
        part = i % partitions
        key, value = f"k{i}".encode(), f"v{i}:".encode() + b"x" * (i % 50)
        headers = [("a", f"{i}".encode()), ("a", b"dup")] if i % 4 == 0 else []
        p.produce(topic, value=value, key=key, partition=part, headers=headers or None)
        sent.append((part, key, value, headers))
    assert p.flush(30) == 0
    return sent


def read(spark: Any, broker: Broker, **options: str) -> Any:
    r = spark.read.format("kafkars").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def check_contents(rows: list, sent: list) -> None:
    got = sorted(
        (
            r.partition,
            r.offset,
            bytes(r.key),
            bytes(r.value),
            [(h.key, bytes(h.value)) for h in (r.headers or [])],
        )
        for r in rows
    )
    by_part: dict[int, list] = {}
    for part, key, value, headers in sent:
        by_part.setdefault(part, []).append((key, value, headers))
    want = sorted(
        (part, off, k, v, h) for part, recs in by_part.items() for off, (k, v, h) in enumerate(recs)
    )
    assert got == want


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_batch_read_every_codec(spark: Any, broker: Broker, topic: str, codec: str) -> None:
    create(broker, topic, 3)
    sent = produce(broker, topic, 900, codec=codec)
    df = read(spark, broker, subscribe=topic, includeHeaders="true")
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = df.collect()
    assert len(rows) == 900
    assert {r.topic for r in rows} == {topic}
    check_contents(rows, sent)
    # per-partition offsets contiguous from 0
    for part in range(3):
        offs = sorted(r.offset for r in rows if r.partition == part)
        assert offs == list(range(len(offs)))


def test_offsets_options_and_min_partitions(spark: Any, broker: Broker, topic: str) -> None:
    create(broker, topic, 2)
    produce(broker, topic, 400, partitions=2)
    df = read(spark, broker, subscribePattern=topic[:-2] + ".*", minPartitions="8")
    assert df.rdd.getNumPartitions() >= 8
    assert df.count() == 400
    spec = json.dumps({topic: {"0": 10, "1": -2}})
    end = json.dumps({topic: {"0": 50, "1": -1}})
    df = read(
        spark, broker, assign=json.dumps({topic: [0, 1]}), startingOffsets=spec, endingOffsets=end
    )
    got = {(p, c) for p, c in df.groupBy("partition").count().collect()}
    assert got == {(0, 40), (1, 200)}
    assert read(spark, broker, subscribe=topic, startingTimestamp="0").count() == 400


# Spark's KafkaOffsetRangeCalculatorSuite figures: (minPartitions, ranges, the split),
# a range as (partition, start, end).
SPARK_SPLITS = [
    (None, [(1, 1, 2), (2, 1, 1)], [(1, 1, 2)]),
    (3, [(1, 1, 2), (2, 1, 2), (3, 1, 2)], [(1, 1, 2), (2, 1, 2), (3, 1, 2)]),
    (4, [(1, 1, 5)], [(1, 1, 2), (1, 2, 3), (1, 3, 4), (1, 4, 5)]),
    (4, [(1, 1, 5), (2, 1, 21)], [(1, 1, 5), (2, 1, 7), (2, 7, 14), (2, 14, 21)]),
    (4, [(1, 1, 1), (2, 1, 21)], [(2, 1, 6), (2, 6, 11), (2, 11, 16), (2, 16, 21)]),
    (4, [(1, 1, 2), (2, 1, 1001)], [(1, 1, 2), (2, 1, 334), (2, 334, 667), (2, 667, 1001)]),
    (1, [(1, 1, 5), (2, 1, 21)], [(1, 1, 5), (2, 1, 21)]),
    (3, [(1, 1, 11)], [(1, 1, 4), (1, 4, 7), (1, 7, 11)]),
    (
        6,
        [(1, 0, 10), (2, 0, 10), (3, 0, 1)],
        [(1, 0, 3), (1, 3, 6), (1, 6, 10), (2, 0, 3), (2, 3, 6), (2, 6, 10), (3, 0, 1)],
    ),
    (
        9,
        [(1, 0, 10000), (2, 0, 15000), (3, 0, 20000)],
        [(1, 0, 5000), (1, 5000, 10000)]
        + [(2, s, s + 5000) for s in (0, 5000, 10000)]
        + [(3, s, s + 5000) for s in (0, 5000, 10000, 15000)],
    ),
    (
        6,
        [(1, 0, 500), (2, 0, 12000), (3, 0, 15001)],
        [(1, 0, 500), (2, 0, 6000), (2, 6000, 12000), (3, 0, 5000), (3, 5000, 10000)]
        + [(3, 10000, 15001)],
    ),
    (
        6,
        [(1, 0, 1), (2, 0, 1), (3, 0, 10000)],
        [(1, 0, 1), (2, 0, 1), (3, 0, 2500), (3, 2500, 5000), (3, 5000, 7500), (3, 7500, 10000)],
    ),
    (4, [(1, 0, 1), (2, 0, 1), (3, 0, 2)], [(1, 0, 1), (2, 0, 1), (3, 0, 1), (3, 1, 2)]),
]


@pytest.mark.parametrize(("min_partitions", "ranges", "want"), SPARK_SPLITS)
def test_min_partitions_split_as_spark(
    min_partitions: int | None, ranges: list, want: list
) -> None:
    from kafkars_spark.source import KafkaRange, split_ranges

    got = split_ranges([KafkaRange("t", *r) for r in ranges], min_partitions)
    assert [(r.partition, r.start, r.end) for r in got] == want


def test_offline_reader_matches_broker_reader(spark: Any, broker: Broker, topic: str) -> None:
    create(broker, topic, 3)
    produce(broker, topic, 600, codec="zstd")
    cols = ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    online = read(spark, broker, subscribe=topic, includeHeaders="true").select(cols)
    offline = (
        spark.read.format("kafkars")
        .option("path", str(broker.log_dir))
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .select(cols)
    )
    assert offline.rdd.getNumPartitions() == 3  # one per segment
    assert sorted(offline.collect()) == sorted(online.collect())


def test_batch_write_reads_back(spark: Any, broker: Broker, topic: str) -> None:
    create(broker, topic, 2)
    data = [(f"k{i}", f"v{i}", i % 2, [("h", b"x")]) for i in range(200)]
    df = spark.createDataFrame(
        data,
        "key string, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    (
        df.write.format("kafkars")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    back = read(spark, broker, subscribe=topic, includeHeaders="true").collect()
    got = sorted(
        (
            bytes(r.key).decode(),
            bytes(r.value).decode(),
            r.partition,
            [(h.key, bytes(h.value)) for h in r.headers],
        )
        for r in back
    )
    assert got == sorted(data)


def test_streaming_rate_limit_and_resume(spark: Any, broker: Broker, topic: str, tmp_path) -> None:
    create(broker, topic, 2)
    produce(broker, topic, 300, partitions=2)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run() -> list:
        q = (
            spark.readStream.format("kafkars")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "100")
            .load()
            .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
            .writeStream.format("parquet")
            .option("path", out)
            .option("checkpointLocation", ckpt)
            .trigger(availableNow=True)
            .start()
        )
        try:
            assert q.awaitTermination(120)
            assert q.exception() is None
            return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
        finally:
            q.stop()

    assert run() == [100, 100, 100]
    produce(broker, topic, 150, partitions=2, start=300)
    assert run() == [100, 50]  # resumes from the checkpoint
    rows = spark.read.parquet(out).collect()
    assert len(rows) == 450
    assert len({(r.partition, r.offset) for r in rows}) == 450
    for part in range(2):
        assert sorted(r.offset for r in rows if r.partition == part) == list(range(225))


def test_streaming_write(spark: Any, broker: Broker, topic: str, tmp_path) -> None:
    create(broker, topic, 2)
    create(broker, topic + "-out", 1)
    produce(broker, topic, 120, partitions=2)
    q = (
        spark.readStream.format("kafkars")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        .writeStream.format("kafkars")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic + "-out")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert q.awaitTermination(120)
        assert q.exception() is None
    finally:
        q.stop()
    back = read(spark, broker, subscribe=topic + "-out").collect()
    src = read(spark, broker, subscribe=topic).collect()
    assert sorted(bytes(r.value) for r in back) == sorted(bytes(r.value).upper() for r in src)
