"""The offline reader (`path`) on a log directory Apache Kafka wrote: the same rows as an
online read of that broker. The reference broker (`kafkars.testing.ReferenceKafka`) takes
keys, headers, several codecs and a committed transaction over several segments, then
stops; its data directory is read with no broker running."""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.testing import ReferenceKafka

from .test_jvm_connector import rows, rows_of

pytestmark = pytest.mark.timeout(300)


def fill(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # Kafka's smallest segment: a few segments per partition for about 3 MiB in all.
    spec = NewTopic(topic, 3, 1, config={"segment.bytes": str(1 << 20)})
    admin.create_topics([spec])[topic].result(30)
    for codec in ("none", "zstd", "lz4"):
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})
        for i in range(700):
            headers = [("codec", codec.encode()), ("i", str(i).encode())] if i % 4 else None
            key = None if i % 9 == 0 else f"{codec}-{i}".encode()
            p.produce(topic, value=os.urandom(1500), key=key, partition=i % 3, headers=headers)
        assert p.flush(30) == 0
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    tx.init_transactions(30)
    tx.begin_transaction()
    for i in range(30):
        tx.produce(topic, value=f"tx-{i}".encode(), partition=i % 3)
    tx.commit_transaction(30)


def test_offline_read_of_apache_kafka_log_dir(spark: Any) -> None:
    topic = f"offline-{uuid.uuid4().hex[:8]}"
    kafka = ReferenceKafka()
    kafka.start()
    try:
        fill(kafka.bootstrap_servers, topic)
        online = rows(spark, "kafkars", kafka.bootstrap_servers, {"subscribe": topic})
    finally:
        kafka.stop(remove=False)
    try:
        segments = list((kafka.log_dir / f"{topic}-0").glob("*.log"))
        assert len(segments) > 1  # the reader crosses segment boundaries
        offline = (
            spark.read.format("kafkars")
            .option("path", str(kafka.log_dir))
            .option("subscribe", topic)
            .option("includeHeaders", "true")
            .load()
        )
        assert len(online) == 3 * 700 + 30
        assert rows_of(offline) == online
    finally:
        shutil.rmtree(kafka.data_dir, ignore_errors=True)
