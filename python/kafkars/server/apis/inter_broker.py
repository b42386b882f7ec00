"""The controller's requests to brokers in cluster mode: LeaderAndIsr, StopReplica,
UpdateMetadata; and what brokers ask the controller: ControlledShutdown, and from
Apache Kafka's brokers in a mixed cluster AlterPartition and AllocateProducerIds."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, code_description

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


def _ask_controller(apis: KafkaApis, submit: Any) -> dict[str, Any]:
    """Queues a request on the controller's event loop and waits for its answer."""
    done = threading.Event()
    result: dict[str, Any] = {"throttle_time_ms": 0, "error_code": int(Errors.REQUEST_TIMED_OUT)}

    def reply(body: dict[str, Any]) -> None:
        result.update(body)
        done.set()

    submit(reply)
    done.wait(_CONTROLLED_SHUTDOWN_WAIT_S)
    return result


def handle_alter_partition(apis: KafkaApis, request: Any) -> dict[str, Any]:
    """AlterPartition from a leader of Kafka's kind (mixed clusters): its ISR change."""
    assert apis.cluster is not None
    controller = apis.cluster.controller
    return _ask_controller(
        apis, lambda reply: controller.alter_partition(request.body, request.api_version, reply)
    )


def handle_allocate_producer_ids(apis: KafkaApis, request: Any) -> dict[str, Any]:
    """AllocateProducerIds from a broker of Kafka's kind (mixed clusters)."""
    assert apis.cluster is not None
    controller = apis.cluster.controller
    body = request.body
    return _ask_controller(
        apis,
        lambda reply: controller.allocate_producer_ids(
            body["broker_id"], body["broker_epoch"], reply
        ),
    )


def handle_elect_leaders(apis: KafkaApis, request: Any) -> dict[str, Any]:
    """ElectLeaders (KIP-460), answered by the controller: preferred (type 0) or unclean
    (type 1) election for the given partitions, or all of them. A single broker leads
    every partition already: each named one answers ELECTION_NOT_NEEDED."""
    body = request.body
    unclean = body.get("election_type", 0) == 1
    wanted = body["topic_partitions"]
    partitions = (
        None if wanted is None else [(t["topic"], p) for t in wanted for p in t["partitions"]]
    )
    done = threading.Event()
    results: dict[tuple[str, int], int] = {}

    def reply(outcome: dict[tuple[str, int], int]) -> None:
        results.update(outcome)
        done.set()

    controller = apis.controller
    if not controller.active:
        return {"throttle_time_ms": 0, "error_code": int(Errors.NOT_CONTROLLER)}
    controller.elect_leaders(partitions, unclean, reply)
    if not done.wait(max(1.0, body["timeout_ms"] / 1000)):
        return {"throttle_time_ms": 0, "error_code": int(Errors.REQUEST_TIMED_OUT)}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in sorted(results.items()):
        by_topic.setdefault(topic, []).append(
            {
                "partition_id": partition,
                "error_code": code,
                # Kafka words every failed election with its error's description.
                "error_message": code_description(Errors(code)) if code else None,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "replica_election_results": [
            {"topic": t, "partition_result": ps} for t, ps in by_topic.items()
        ],
    }
