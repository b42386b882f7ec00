"""OffsetForLeaderEpoch: where a leader epoch ends in this leader's log (KIP-101, KIP-320).

A follower asks it before fetching from a new leader and truncates to the answer, so
records the old leader never committed do not survive; consumers ask it after a leader
change to detect truncation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

UNDEFINED = -1


def _epoch_end_offset(apis: KafkaApis, topic: str, p: dict[str, Any]) -> dict[str, Any]:
    result = {
        "partition": p["partition"],
        "error_code": 0,
        "leader_epoch": UNDEFINED,
        "end_offset": UNDEFINED,
    }
    try:
        partition = apis.replica_manager.get_partition(topic, p["partition"])
    except KafkaError as e:
        result["error_code"] = int(e.code)
        return result
    # The requester's view of the current epoch must match ours (KIP-320 fencing).
    current = p.get("current_leader_epoch", -1)
    if current != -1 and current < partition.leader_epoch:
        result["error_code"] = int(Errors.FENCED_LEADER_EPOCH)
    elif current > partition.leader_epoch:
        result["error_code"] = int(Errors.UNKNOWN_LEADER_EPOCH)
    else:
        epoch, end_offset = partition.log.end_offset_for_epoch(p["leader_epoch"])
        result["leader_epoch"], result["end_offset"] = epoch, end_offset
    return result


def handle_offset_for_leader_epoch(apis: KafkaApis, request: Any) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "topic": t["topic"],
                "partitions": [_epoch_end_offset(apis, t["topic"], p) for p in t["partitions"]],
            }
            for t in request.body["topics"]
        ],
    }
