"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455), answered by the
active controller (`Controller`: a single broker's checks each replica set, and nothing is
ever in progress, as on Kafka's single node); other brokers answer NOT_CONTROLLER, as
Kafka's do, and the admin clients send them to the controller."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from kafkars.controller.reassignment import ReplicaAssignment
from kafkars.protocol import Errors

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

TopicPartition = tuple[str, int]


def _wait_timeout_s(body: dict[str, Any]) -> float:
    return max(1.0, body["timeout_ms"] / 1000)


def handle_alter_partition_reassignments(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    allow_rf_change = bool(body.get("allow_replication_factor_change", True))
    wanted: dict[TopicPartition, list[int] | None] = {}
    for topic in body["topics"]:
        for p in topic["partitions"]:
            replicas = p["replicas"]
            wanted[(topic["name"], p["partition_index"])] = (
                None if replicas is None else list(replicas)
            )

    def response(code: int, results: dict[TopicPartition, tuple[int, str | None]]) -> dict:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (name, index), (err, message) in results.items():
            by_topic.setdefault(name, []).append(
                {"partition_index": index, "error_code": err, "error_message": message}
            )
        return {
            "throttle_time_ms": 0,
            "allow_replication_factor_change": allow_rf_change,
            "error_code": code,
            "error_message": None,
            "responses": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
        }

    controller = apis.controller
    if not controller.active:
        return response(int(Errors.NOT_CONTROLLER), {tp: (0, None) for tp in wanted})
    done = threading.Event()
    results: dict[TopicPartition, tuple[int, str | None]] = {}

    def reply(outcome: dict[TopicPartition, tuple[int, str | None]]) -> None:
        results.update(outcome)
        done.set()

    controller.alter_reassignments(wanted, allow_rf_change, reply)
    if not done.wait(_wait_timeout_s(body)):
        return response(int(Errors.REQUEST_TIMED_OUT), {tp: (0, None) for tp in wanted})
    if any(code == int(Errors.NOT_CONTROLLER) for code, _ in results.values()):
        return response(int(Errors.NOT_CONTROLLER), {tp: (0, None) for tp in wanted})
    return response(0, results)


def handle_list_partition_reassignments(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    topics = body["topics"]
    partitions = (
        None if topics is None else [(t["name"], p) for t in topics for p in t["partition_indexes"]]
    )

    def response(code: int, ongoing: dict[TopicPartition, ReplicaAssignment]) -> dict:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (name, index), a in sorted(ongoing.items()):
            by_topic.setdefault(name, []).append(
                {
                    "partition_index": index,
                    "replicas": a.replicas,
                    "adding_replicas": a.adding,
                    "removing_replicas": a.removing,
                }
            )
        return {
            "throttle_time_ms": 0,
            "error_code": code,
            "error_message": None,
            "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
        }

    controller = apis.controller
    if not controller.active:
        return response(int(Errors.NOT_CONTROLLER), {})
    done = threading.Event()
    ongoing: dict[TopicPartition, ReplicaAssignment] = {}

    def reply(outcome: dict[TopicPartition, ReplicaAssignment]) -> None:
        ongoing.update(outcome)
        done.set()

    controller.list_reassignments(partitions, reply)
    if not done.wait(_wait_timeout_s(body)):
        return response(int(Errors.REQUEST_TIMED_OUT), {})
    return response(0, ongoing)
