"""CreateTopics, DeleteTopics and CreatePartitions."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError
from kafkars.server import descriptor_budget
from kafkars.server.metadata import validate_topic_name

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis


def _resolve_counts(apis: KafkaApis, t: dict[str, Any]) -> tuple[int, int]:
    assignments = t["assignments"]
    if assignments:
        if t["num_partitions"] != -1 or t["replication_factor"] != -1:
            raise KafkaError(
                Errors.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        alive = set(apis.metadata_cache.alive_broker_ids())
        for a in assignments:
            if set(a["broker_ids"]) - alive:
                raise KafkaError(
                    Errors.INVALID_REPLICA_ASSIGNMENT, f"Unknown broker in {a['broker_ids']}"
                )
        return len(assignments), len(assignments[0]["broker_ids"])
    partitions = (
        t["num_partitions"] if t["num_partitions"] != -1 else apis.config.default_partitions
    )
    factor = (
        t["replication_factor"]
        if t["replication_factor"] != -1
        else apis.config.default_replication_factor
    )
    if partitions <= 0:
        raise KafkaError(Errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if factor <= 0:
        raise KafkaError(
            Errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    brokers = len(apis.metadata_cache.alive_broker_ids())
    if factor > brokers:
        raise KafkaError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {factor} time(s): The target replication factor "
            f"of {factor} cannot be reached because only {brokers} broker(s) are registered.",
        )
    return partitions, factor


def _check_descriptors(
    apis: KafkaApis, partitions: int, factor: int, assignments: list[list[int]] | None
) -> None:
    """Refuses new partitions this broker's descriptor limit cannot hold: those assigned
    here, or without assignments, this broker's even share of the replicas."""
    if assignments:
        here = sum(apis.broker_id in a for a in assignments)
    else:
        brokers = max(len(apis.metadata_cache.alive_broker_ids()), 1)
        here = -(-partitions * factor // brokers)
    descriptor_budget.check_new_partitions(here)


def handle_create_topics(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    names = [t["name"] for t in body["topics"]]
    results = []
    for t in body["topics"]:
        name = t["name"]
        result: dict[str, Any] = {"name": name, "num_partitions": -1, "replication_factor": -1}
        try:
            if names.count(name) > 1:
                raise KafkaError(Errors.INVALID_REQUEST, "Duplicate topic name.")
            validate_topic_name(name)
            if apis.metadata_cache.get(name) is not None:
                raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            partitions, factor = _resolve_counts(apis, t)
            configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
            apis.controller.validate_topic_configs(configs)
            replica_lists = [a["broker_ids"] for a in t["assignments"]] or None
            _check_descriptors(apis, partitions, factor, replica_lists)
            if body["validate_only"]:
                # Kafka's controller answers a dry run with the id it would have used.
                topic_id = uuid.uuid4()
            else:
                topic_id = apis.controller.create_topic(
                    name, partitions, configs, replication_factor=factor, assignments=replica_lists
                ).topic_id
            # Kafka leaves the message null on success.
            result.update(
                error_code=0,
                error_message=None,
                num_partitions=partitions,
                replication_factor=factor,
            )
            if topic_id is not None:
                result["topic_id"] = topic_id
            if request.api_version >= 5:
                result["configs"] = [
                    {
                        "name": e.name,
                        "value": e.value,
                        "read_only": e.read_only,
                        "config_source": e.source,
                        "is_sensitive": e.is_sensitive,
                    }
                    for e in apis.config.describe_topic_configs(configs)
                ]
        except KafkaError as e:
            result.update(error_code=int(e.code), error_message=e.error_message)
        results.append(result)
    return {"throttle_time_ms": 0, "topics": results}


def handle_delete_topics(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    wanted: list[tuple[str | None, Any]] = [(n, None) for n in body["topic_names"]]
    wanted += [(t["name"], t["topic_id"]) for t in body["topics"]]
    results = []
    for name, topic_id in wanted:
        result: dict[str, Any] = {"name": name}
        if topic_id is not None:
            result["topic_id"] = topic_id
        try:
            topic = (
                apis.metadata_cache.get(name) if name else apis.metadata_cache.get_by_id(topic_id)
            )
            if topic is None:
                code = Errors.UNKNOWN_TOPIC_OR_PARTITION if name else Errors.UNKNOWN_TOPIC_ID
                raise KafkaError(code)
            if not apis.config.delete_topic_enable:
                raise KafkaError(Errors.TOPIC_DELETION_DISABLED)
            if topic.is_internal:
                raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, "Cannot delete internal topics")
            result.update(name=topic.name, topic_id=topic.topic_id)
            apis.controller.delete_topic(topic.name)
            result.update(error_code=0, error_message=None)
        except KafkaError as e:
            result.update(error_code=int(e.code), error_message=e.error_message)
        results.append(result)
    return {"throttle_time_ms": 0, "responses": results}


def _check_new_assignments(
    apis: KafkaApis, replication_factor: int, assignments: list[dict[str, Any]]
) -> None:
    """The new partitions' replicas: live brokers, each once, as many as the topic's
    existing partitions have."""
    alive = set(apis.metadata_cache.alive_broker_ids())
    for a in assignments:
        replicas = a["broker_ids"]
        if set(replicas) - alive:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Unknown broker(s) in replica assignment {replicas}.",
            )
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers in replica assignment {replicas}.",
            )
        if len(replicas) != replication_factor:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Inconsistent replication factor: the topic has {replication_factor}, "
                f"the assignment {replicas} has {len(replicas)}.",
            )


def handle_create_partitions(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    results = []
    for t in body["topics"]:
        name = t["name"]
        result: dict[str, Any] = {"name": name}
        try:
            topic = apis.metadata_cache.get(name)
            if topic is None:
                raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            count = t["count"]
            if count <= topic.num_partitions:
                raise KafkaError(
                    Errors.INVALID_PARTITIONS,
                    f"Topic currently has {topic.num_partitions} partitions, which is higher "
                    f"than the requested {count}.",
                )
            assignments = t["assignments"]
            if assignments is not None:
                if len(assignments) != count - topic.num_partitions:
                    raise KafkaError(
                        Errors.INVALID_REPLICA_ASSIGNMENT,
                        "Increasing the number of partitions by "
                        f"{count - topic.num_partitions} but {len(assignments)} assignments "
                        "provided.",
                    )
                _check_new_assignments(apis, topic.replication_factor, assignments)
            _check_descriptors(
                apis,
                count - topic.num_partitions,
                topic.replication_factor,
                [a["broker_ids"] for a in assignments] if assignments else None,
            )
            if not body["validate_only"]:
                apis.controller.add_partitions(
                    name,
                    count,
                    assignments=[a["broker_ids"] for a in assignments] if assignments else None,
                )
            result.update(error_code=0, error_message=None)
        except KafkaError as e:
            result.update(error_code=int(e.code), error_message=e.message)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}
