"""The `kafkars` sink with exactlyOnce=true: every task's rows in one Kafka transaction
with a marker that makes a replayed task write nothing. A streaming query whose driver is
killed (SIGKILL) in the middle of a micro-batch, some of its tasks committed, restarted
from its checkpoint: a read_committed consumer sees every input record exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from kafkars.broker import Broker
from kafkars.testing.consume import read_to_end
from kafkars_spark.source import COMMITS_TOPIC, ensure_commits_topic, produce_exactly_once

from .test_source import create, read

pytestmark = pytest.mark.timeout(240)
PIPELINE = Path(__file__).with_name("eos_pipeline.py")


def committed_values(broker: Broker, topic: str, partitions: int) -> list[bytes]:
    """Every value a read_committed consumer sees in `topic`, up to the last stable offset."""
    return [m.value() for m in read_to_end(broker.bootstrap_servers, topic, partitions)]


def test_batch_write_exactly_once(spark: Any, broker: Broker, topic: str) -> None:
    create(broker, topic, 3)
    df = spark.range(300).selectExpr("CAST(id AS STRING) AS key", "CAST(id AS STRING) AS value")
    (
        df.repartition(3)
        .write.format("kafkars")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .mode("append")
        .save()
    )
    rows = read(spark, broker, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
    assert sorted(int(bytes(r.value)) for r in rows.collect()) == list(range(300))
    # Each record sits in a transaction: read_uncommitted offsets count the markers too.
    assert read(spark, broker, subscribe=topic).agg({"offset": "max"}).first()[0] > 100


def test_replayed_task_writes_nothing(broker: Broker, topic: str) -> None:
    """The same task of the same epoch twice (a retried or replayed task): the second
    finds its marker, committed with the first one's rows, and writes nothing."""
    create(broker, topic, 1)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic}
    ensure_commits_topic(options, COMMITS_TOPIC)
    batch = pa.RecordBatch.from_pydict({"value": [f"v{i}".encode() for i in range(10)]})
    prefix = f"replay-{uuid.uuid4().hex[:8]}"

    def write(epoch: int) -> Any:
        return produce_exactly_once(
            options,
            iter([batch]),
            prefix=prefix,
            write_id="query-1",
            epoch=epoch,
            commits_topic=COMMITS_TOPIC,
        )

    first = write(0)
    assert (first.records, first.replayed) == (10, False)
    again = write(0)
    assert (again.records, again.replayed) == (0, True)
    assert write(1).records == 10  # the next epoch writes
    assert Counter(committed_values(broker, topic, 1)) == Counter(
        {f"v{i}".encode(): 2 for i in range(10)}
    )


def _spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(PIPELINE), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: the driver JVM with it
        )


def test_driver_killed_mid_batch(broker: Broker, tmp_path: Path) -> None:
    source, sink = f"src-{uuid.uuid4().hex[:8]}", f"sink-{uuid.uuid4().hex[:8]}"
    create(broker, source, 2)
    create(broker, sink, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    sent = [f"r{i}".encode() for i in range(200)]  # two micro-batches of 100
    for i, v in enumerate(sent):
        p.produce(source, value=v, partition=i % 2)
    assert p.flush(30) == 0
    args = [broker.bootstrap_servers, source, sink, str(tmp_path / "ck")]
    log = tmp_path / "pipeline.log"

    # Batch 0 takes 50 records of each partition; the task of partition 1 stalls, so
    # only partition 0's transaction commits before the driver dies.
    start = time.monotonic()
    query = _spawn([*args, "--hang-partition", "1"], log)
    try:
        deadline = start + 120
        seen: list[bytes] = []
        while not seen and time.monotonic() < deadline and query.poll() is None:
            time.sleep(0.5)
            seen = committed_values(broker, sink, 2)
        assert seen, log.read_text(errors="replace")[-3000:]
        print(f"half committed after {time.monotonic() - start:.1f} s")
    finally:
        os.killpg(query.pid, signal.SIGKILL)
        query.wait()
    half = committed_values(broker, sink, 2)
    assert len(half) == 50 and set(half) <= set(sent[0::2])

    # Restarted from the checkpoint: Spark replays batch 0 (not in its commit log), whose
    # committed task writes nothing, then the rest.
    query = _spawn(args, log)
    try:
        assert query.wait(timeout=150) == 0, log.read_text(errors="replace")[-3000:]
        print(f"restarted query done after {time.monotonic() - start:.1f} s")
    finally:
        if query.poll() is None:
            os.killpg(query.pid, signal.SIGKILL)
            query.wait()
    assert Counter(committed_values(broker, sink, 2)) == Counter(sent)
