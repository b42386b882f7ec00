"""`kafka.isolation.level` in the `kafkars` source: read_committed leaves out aborted
transactions and control records and stops at the last stable offset, in batch and
streaming reads; read_uncommitted (the default, as Spark's) sees everything but the
control records. Real transactions from confluent-kafka's transactional producer."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from kafkars.broker import Broker

from .test_source import create, read

pytestmark = pytest.mark.timeout(240)


def transactional(broker: Broker) -> Any:
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "transactional.id": f"tx-{uuid.uuid4().hex[:8]}",
            "linger.ms": 5,
        }
    )
    p.init_transactions(30)
    return p


def write_transactions(broker: Broker, topic: str) -> tuple[set[bytes], set[bytes], Any]:
    """Committed, aborted, committed, then one left open (the producer is returned).
    Returns the committed values, the uncommitted ones (aborted and open) and the producer."""
    p = transactional(broker)
    committed: set[bytes] = set()
    uncommitted: set[bytes] = set()
    for txn, outcome in enumerate(["commit", "abort", "commit", "open"]):
        p.begin_transaction()
        for i in range(30):
            value = f"{outcome}-{txn}-{i}".encode()
            p.produce(topic, value=value, key=str(i).encode(), partition=i % 2)
            (committed if outcome == "commit" else uncommitted).add(value)
        p.flush(30)
        if outcome == "commit":
            p.commit_transaction(30)
        elif outcome == "abort":
            p.abort_transaction(30)
    return committed, uncommitted, p


def test_batch_read_committed(spark: Any, broker: Broker, topic: str) -> None:
    create(broker, topic, 2)
    committed, uncommitted, open_txn = write_transactions(broker, topic)
    try:
        rows = read(spark, broker, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
        got = [bytes(r.value) for r in rows.collect()]
        assert sorted(got) == sorted(committed)
        # read_uncommitted (the default) sees the aborted and the open transaction too,
        # never a control record (a commit or abort marker).
        everything = {bytes(r.value) for r in read(spark, broker, subscribe=topic).collect()}
        assert everything == committed | uncommitted
        # The open transaction holds the last stable offset: `latest` stops before it.
        ends = rows.groupBy("partition").max("offset").collect()
        unc = read(spark, broker, subscribe=topic).groupBy("partition").max("offset").collect()
        assert all(c[1] < u[1] for c, u in zip(sorted(ends), sorted(unc), strict=True))
    finally:
        open_txn.abort_transaction(30)


def test_streaming_read_committed(spark: Any, broker: Broker, topic: str, tmp_path: Any) -> None:
    create(broker, topic, 2)
    committed, _, open_txn = write_transactions(broker, topic)
    out = str(tmp_path / "out")

    def run() -> list[bytes]:
        df = (
            spark.readStream.format("kafkars")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("kafka.isolation.level", "read_committed")
            .option("maxOffsetsPerTrigger", "25")
            .load()
        )
        q = (
            df.select("value")
            .writeStream.format("parquet")
            .option("path", out)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            assert q.awaitTermination(120)
        finally:
            q.stop()
        return [bytes(r.value) for r in spark.read.parquet(out).collect()]

    assert sorted(run()) == sorted(committed)
    # The open transaction commits: the next run reads it from where the LSO had stopped.
    open_txn.commit_transaction(30)
    more = {f"open-3-{i}".encode() for i in range(30)}
    assert sorted(run()) == sorted(committed | more)
