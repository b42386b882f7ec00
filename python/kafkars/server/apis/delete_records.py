"""DeleteRecords: move partitions' log start offsets forward (Kafka's
`ReplicaManager.deleteRecords`). An offset of -1 means the high watermark; past it the
partition gets OFFSET_OUT_OF_RANGE. The segments wholly below the new start are removed
by the next `kafka-log-retention` run; reads below it get OFFSET_OUT_OF_RANGE at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

log = logging.getLogger("kafkars.server.DeleteRecords")


def _delete(apis: KafkaApis, topic: str, index: int, offset: int) -> dict[str, Any]:
    result: dict[str, Any] = {"partition_index": index, "low_watermark": -1, "error_code": 0}
    try:
        if apis.metadata_cache.get(topic) is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        partition = apis.replica_manager.get_partition(topic, index)
        if offset < -1:
            raise KafkaError(Errors.OFFSET_OUT_OF_RANGE)
        result["low_watermark"] = partition.log.delete_records(offset)
    except KafkaError as e:
        result["error_code"] = int(e.code)
    else:
        log.info("Deleted records of %s-%d below %d", topic, index, result["low_watermark"])
    return result


def handle_delete_records(apis: KafkaApis, request: Any) -> dict[str, Any]:
    topics = []
    for t in request.body["topics"]:
        name = t["name"]
        partitions = [
            _delete(apis, name, p["partition_index"], p["offset"]) for p in t["partitions"]
        ]
        topics.append({"name": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
