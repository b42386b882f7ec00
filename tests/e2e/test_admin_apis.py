"""Admin APIs as Kafka 4.0 answers them, through real clients: DescribeLogDirs,
ListGroups filters, ListOffsets special timestamps."""

from __future__ import annotations

from pathlib import Path

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from kafkars.broker import Broker


def test_describe_log_dirs_lists_every_partition(broker: Broker, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for _ in range(3):
            producer.send(topic, b"x" * 100, partition=1)
        producer.flush()
        producer.close()

        [answer] = admin.describe_log_dirs()
        [log_dir] = answer["log_dirs"]
        assert log_dir["error_code"] == 0
        assert Path(log_dir["log_dir"]) == broker.log_dir.resolve()
        assert log_dir["total_bytes"] > 0 and 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        [mine] = [t for t in log_dir["topics"] if t["name"] == topic]
        partitions = {p["partition_index"]: p for p in mine["partitions"]}
        assert sorted(partitions) == [0, 1]
        assert partitions[0]["partition_size"] == 0
        assert partitions[1]["partition_size"] > 300  # three batches of 100-byte values
        assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in partitions.values())

        # Asking for one partition answers that partition only.
        [answer] = admin.describe_log_dirs({topic: [1]})
        [log_dir] = answer["log_dirs"]
        assert [
            (t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]
        ] == [(topic, [1])]
    finally:
        admin.close()
