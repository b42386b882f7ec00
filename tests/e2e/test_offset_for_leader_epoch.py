"""OffsetForLeaderEpoch: where an epoch ends, and the KIP-320 epoch fencing checks."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer
from raw_client import CodecConnection

from kafkars.broker import Broker
from kafkars.protocol import ApiKey, Errors


def epoch_end(conn: CodecConnection, topic: str, partition: int, **fields: int) -> dict[str, Any]:
    body = {
        "replica_id": -1,
        "topics": [{"topic": topic, "partitions": [{"partition": partition, **fields}]}],
    }
    [t] = conn.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, body)["topics"]
    [p] = t["partitions"]
    return p


def test_epoch_end_offsets_and_fencing(broker: Broker, topic: str) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(3):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    conn = CodecConnection(broker)
    try:
        found = epoch_end(conn, topic, 0, current_leader_epoch=0, leader_epoch=0)
        assert (found["error_code"], found["leader_epoch"], found["end_offset"]) == (0, 0, 3)
        # A later epoch than the leader's: the requester knows something this broker does not.
        ahead = epoch_end(conn, topic, 0, current_leader_epoch=5, leader_epoch=0)
        assert ahead["error_code"] == Errors.UNKNOWN_LEADER_EPOCH
        missing = epoch_end(conn, topic, 7, current_leader_epoch=-1, leader_epoch=0)
        assert missing["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        conn.close()
