"""ListOffsets: latest (-1), earliest (-2), max timestamp (-3), earliest local (-4),
latest tiered (-5) or by timestamp."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5

# The first ListOffsets version that may ask for each special timestamp (Kafka's
# ReplicaManager.timestampMinSupportedVersion as of 4.0). Any other negative timestamp,
# or one asked for at an older version, gets UNSUPPORTED_VERSION for its partition.
TIMESTAMP_MIN_VERSION = {
    LATEST: 1,
    EARLIEST: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
}


def timestamp_unsupported(timestamp: int, version: int) -> bool:
    """Kafka's `isListOffsetsTimestampUnsupported`."""
    return timestamp < 0 and version < TIMESTAMP_MIN_VERSION.get(timestamp, 2**15)


def _error(index: int, error: Errors) -> dict[str, Any]:
    return {"partition_index": index, "error_code": int(error), "timestamp": -1, "offset": -1}


def _lookup(
    apis: KafkaApis, topic: str, p: dict[str, Any], committed: bool, version: int
) -> dict[str, Any]:
    index = p["partition_index"]
    # ReplicaManager.fetchOffset's order: the timestamp's version check comes before the
    # partition lookup, so an unknown topic asked with an unsupported timestamp gets
    # UNSUPPORTED_VERSION.
    if timestamp_unsupported(p["timestamp"], version):
        return _error(index, Errors.UNSUPPORTED_VERSION)
    try:
        partition = apis.replica_manager.get_partition(topic, index)
    except KafkaError as e:
        return _error(index, e.code)
    log = partition.log
    target = p["timestamp"]
    # read_committed consumers see only up to the last stable offset.
    visible = log.last_stable_offset if committed else log.high_watermark
    if target == LATEST:
        offset = visible
        found = (-1, offset, partition.leader_epoch)
    elif target in (EARLIEST, EARLIEST_LOCAL):
        # Without tiered storage the local log starts where the log does.
        found = (-1, log.log_start_offset, partition.leader_epoch)
    elif target == LATEST_TIERED:
        # Nothing is tiered: Kafka answers no offset, with leader epoch -1, and no error.
        found = (-1, -1, -1)
    else:
        hit = log.fetch_offset_by_timestamp(target)
        found = (-1, -1, -1) if hit is None else (hit[1], hit[0], hit[2])
        # Never point past what consumers may read.
        if found[1] >= visible and target != MAX_TIMESTAMP:
            found = (-1, -1, -1)
    timestamp, offset, epoch = found
    return {
        "partition_index": index,
        "error_code": 0,
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": epoch,
    }


def handle_list_offsets(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    committed = body.get("isolation_level", 0) == 1
    # A partition named twice is answered INVALID_REQUEST each time, as Kafka does.
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for t in body["topics"]:
        for p in t["partitions"]:
            tp = (t["name"], p["partition_index"])
            (duplicates if tp in seen else seen).add(tp)
    topics = []
    for t in body["topics"]:
        name = t["name"]
        partitions = []
        for p in t["partitions"]:
            if (name, p["partition_index"]) in duplicates:
                partitions.append(_error(p["partition_index"], Errors.INVALID_REQUEST))
            else:
                partitions.append(_lookup(apis, name, p, committed, request.api_version))
        topics.append({"name": name, "partitions": partitions})
    return {"topics": topics, "throttle_time_ms": 0}
