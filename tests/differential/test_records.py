"""Records: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords."""

from __future__ import annotations

import time
from typing import Any

from kafkars import _core
from kafkars.protocol import ApiKey

from .compare import Pair, TopicIdOf
from .test_topics import make_topic

NOT_LEADER_OR_FOLLOWER = 6
NO_PRODUCER = {"producer_id": -1, "producer_epoch": -1, "base_sequence": -1}


def batch(count: int, *, size: int = 10, compression: str = "none", start: int = 0) -> Any:
    now = int(time.time() * 1000)
    rows = [
        (f"k{i}".encode(), bytes([65 + i % 26]) * size, now, [("h", f"{i}".encode())])
        for i in range(start, start + count)
    ]
    return _core.RecordSet(_core.build_batch(rows, compression=compression))


def produce(
    topic: str, records: Any, *, partition: int = 0, acks: int = -1, version: int = 9
) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }


def fetch(
    topic: str,
    version: int,
    *,
    offset: int = 0,
    partition: int = 0,
    max_bytes: int = 1 << 20,
    isolation_level: int = 0,
) -> dict[str, Any]:
    topic_entry: dict[str, Any] = {
        "partitions": [
            {
                "partition": partition,
                "current_leader_epoch": -1,
                "fetch_offset": offset,
                "log_start_offset": -1,
                "partition_max_bytes": max_bytes,
            }
        ]
    }
    if version >= 13:
        topic_entry["topic_id"] = TopicIdOf(topic)
    else:
        topic_entry["topic"] = topic
    request: dict[str, Any] = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [topic_entry],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    if version < 15:
        request["replica_id"] = -1
    return request


def seed(pair: Pair, topic: str, partitions: int = 1) -> None:
    """`topic` with 5 records in one batch, then 3 compressed ones, on both brokers."""
    make_topic(pair, topic, partitions)
    for records in (batch(5), batch(3, compression="zstd", start=5)):
        for broker, conn in pair.conns.items():
            # Kafka's partition may still be becoming leader a moment after Metadata names
            # it (NOT_LEADER_OR_FOLLOWER): retry that, as a producer does.
            deadline = time.monotonic() + 30
            while True:
                response = conn.call(ApiKey.PRODUCE, 9, produce(topic, records))
                [part] = response["responses"][0]["partition_responses"]
                if part["error_code"] != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert part["error_code"] == 0, (broker, response)


def test_produce(pair: Pair, name: str) -> None:
    make_topic(pair, name)
    pair.check(
        ApiKey.PRODUCE, lambda v: produce(name, batch(3, compression="lz4")), scenario="acks=all"
    )
    pair.check(ApiKey.PRODUCE, lambda v: produce(name, batch(2), acks=1), scenario="acks=1")


def test_produce_errors(pair: Pair, name: str) -> None:
    make_topic(pair, name)
    pair.check(
        ApiKey.PRODUCE,
        lambda v: produce(name, batch(1), partition=7),
        scenario="unknown partition",
    )
    pair.check(
        ApiKey.PRODUCE,
        lambda v: produce(f"{name}-missing", batch(1)),
        scenario="unknown topic",
    )
    pair.check(
        ApiKey.PRODUCE,
        lambda v: produce(name, batch(1), acks=2),
        scenario="invalid acks",
    )
    pair.check(
        ApiKey.PRODUCE,
        lambda v: produce(name, batch(1, size=1_100_000)),
        scenario="record larger than max.message.bytes",
    )


def test_produce_record_errors(pair: Pair, name: str) -> None:
    """Batches refused record by record (Kafka's LogValidator): keyless records on a
    compacted topic, and CreateTime timestamps outside the topic's bounds."""
    compacted = f"{name}-compacted"
    make_topic(pair, compacted, **{"cleanup.policy": "compact"})
    keyless = [(None if i % 2 == 0 else b"k", b"v", int(time.time() * 1000), []) for i in range(5)]
    pair.check(
        ApiKey.PRODUCE,
        lambda v: produce(compacted, _core.RecordSet(_core.build_batch(keyless))),
        scenario="keyless records on a compacted topic",
    )
    bounded = f"{name}-bounded"
    make_topic(pair, bounded, **{"message.timestamp.before.max.ms": "3600000"})
    now = int(time.time() * 1000)
    rows = [(b"k", b"v", ts, []) for ts in (now, now - 7_200_000, now - 1, now - 9_000_000)]
    records = _core.RecordSet(_core.build_batch(rows, compression="lz4"))
    # The bounds in the messages follow each broker's clock: compared without them.
    answers = pair.call(ApiKey.PRODUCE, 9, produce(bounded, records))
    shapes = {}
    for broker, response in answers.items():
        [part] = response["responses"][0]["partition_responses"]
        shapes[broker] = (
            part["error_code"],
            part["error_message"],
            part["base_offset"],
            part["log_start_offset"],
            [
                (e["batch_index"], e["batch_index_error_message"].split(" is out of range")[0])
                for e in part["record_errors"]
            ],
        )
    assert shapes["kafka"] == shapes["kafkars"], shapes
    assert shapes["kafka"][0] == 32, shapes  # INVALID_TIMESTAMP


def test_fetch(pair: Pair, name: str) -> None:
    seed(pair, name)
    pair.check(ApiKey.FETCH, lambda v: fetch(name, v), scenario="from the start")
    pair.check(ApiKey.FETCH, lambda v: fetch(name, v, offset=5), scenario="mid-log")
    pair.check(ApiKey.FETCH, lambda v: fetch(name, v, offset=8), scenario="at the end")


def test_fetch_errors(pair: Pair, name: str) -> None:
    seed(pair, name)
    pair.check(ApiKey.FETCH, lambda v: fetch(name, v, offset=1000), scenario="offset out of range")
    pair.check(ApiKey.FETCH, lambda v: fetch(name, v, partition=4), scenario="unknown partition")
    versions = [v for v in pair.versions(ApiKey.FETCH) if v < 13]
    pair.check(
        ApiKey.FETCH,
        lambda v: fetch(f"{name}-missing", v),
        scenario="unknown topic",
        versions=versions,
    )


def list_offsets(topic: str, timestamp: int, version: int, partition: int = 0) -> dict[str, Any]:
    part: dict[str, Any] = {
        "partition_index": partition,
        "current_leader_epoch": -1,
        "timestamp": timestamp,
    }
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [part]}],
        "timeout_ms": 1000,
    }


def test_list_offsets(pair: Pair, name: str) -> None:
    seed(pair, name)
    for timestamp, scenario in ((-1, "latest"), (-2, "earliest"), (0, "by timestamp 0")):
        pair.check(
            ApiKey.LIST_OFFSETS,
            lambda v, ts=timestamp: list_offsets(name, ts, v),  # type: ignore[misc]
            scenario=scenario,
        )
    versions = [v for v in pair.versions(ApiKey.LIST_OFFSETS) if v >= 7]
    pair.check(
        ApiKey.LIST_OFFSETS,
        lambda v: list_offsets(name, -3, v),
        scenario="max timestamp",
        versions=versions,
    )
    pair.check(
        ApiKey.LIST_OFFSETS,
        lambda v: list_offsets(name, int(time.time() * 1000) + 3_600_000, v),
        scenario="timestamp after every record",
    )
    pair.check(
        ApiKey.LIST_OFFSETS, lambda v: list_offsets(name, -1, v, 3), scenario="unknown partition"
    )


def test_offset_for_leader_epoch(pair: Pair, name: str) -> None:
    seed(pair, name)

    def body(epoch: int, partition: int = 0) -> dict[str, Any]:
        return {
            "replica_id": -1,
            "topics": [
                {
                    "topic": name,
                    "partitions": [
                        {"partition": partition, "current_leader_epoch": -1, "leader_epoch": epoch}
                    ],
                }
            ],
        }

    pair.check(ApiKey.OFFSET_FOR_LEADER_EPOCH, lambda v: body(0), scenario="current epoch")
    pair.check(ApiKey.OFFSET_FOR_LEADER_EPOCH, lambda v: body(7), scenario="future epoch")
    pair.check(ApiKey.OFFSET_FOR_LEADER_EPOCH, lambda v: body(0, 3), scenario="unknown partition")


def test_delete_records(pair: Pair, name: str) -> None:
    seed(pair, name, partitions=2)

    def body(offset: int, partition: int = 0) -> dict[str, Any]:
        return {
            "topics": [
                {"name": name, "partitions": [{"partition_index": partition, "offset": offset}]}
            ],
            "timeout_ms": 30000,
        }

    versions = pair.versions(ApiKey.DELETE_RECORDS)
    for version in versions:
        pair.check(
            ApiKey.DELETE_RECORDS,
            body(1 + version),
            scenario="below the high watermark",
            versions=[version],
        )
    pair.check(ApiKey.DELETE_RECORDS, body(100), scenario="past the high watermark")
    pair.check(ApiKey.DELETE_RECORDS, body(-1, 1), scenario="to the high watermark (-1)")
    pair.check(ApiKey.DELETE_RECORDS, body(1, 9), scenario="unknown partition")
