"""The controller's requests to brokers in cluster mode: LeaderAndIsr, StopReplica,
UpdateMetadata, and ControlledShutdown (a broker asking the controller)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from kafkars.server.errors import Errors

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

# How long a ControlledShutdown request waits for the controller to move leaders.
_CONTROLLED_SHUTDOWN_WAIT_S = 30.0


def handle_leader_and_isr(apis: KafkaApis, request: Any) -> dict[str, Any]:
    assert apis.cluster is not None
    return apis.cluster.become_leader_or_follower(request.body)


def handle_stop_replica(apis: KafkaApis, request: Any) -> dict[str, Any]:
    assert apis.cluster is not None
    return apis.cluster.stop_replicas(request.body)


def handle_update_metadata(apis: KafkaApis, request: Any) -> dict[str, Any]:
    assert apis.cluster is not None
    return apis.cluster.update_metadata(request.body)


def handle_controlled_shutdown(apis: KafkaApis, request: Any) -> dict[str, Any]:
    assert apis.cluster is not None
    done = threading.Event()
    result: dict[str, Any] = {
        "error_code": int(Errors.REQUEST_TIMED_OUT),
        "remaining_partitions": [],
    }

    def reply(code: int, remaining: list[tuple[str, int]]) -> None:
        result["error_code"] = code
        result["remaining_partitions"] = [
            {"topic_name": t, "partition_index": p} for t, p in remaining
        ]
        done.set()

    apis.cluster.controller.controlled_shutdown(request.body["broker_id"], reply)
    done.wait(_CONTROLLED_SHUTDOWN_WAIT_S)
    return result
