"""Metadata and DescribeCluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError
from kafkars.security.authorization import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    authorized_operations,
)
from kafkars.security.authorizer import AclOperation, ResourceType
from kafkars.server.metadata import validate_topic_name

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

# "Not requested" for authorized-operations fields (Kafka's Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def _brokers(apis: KafkaApis, listener_name: str) -> list[dict[str, Any]]:
    return [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in apis.metadata_cache.alive_brokers(listener_name)
    ]


def _cluster_operations(apis: KafkaApis, request: Any, requested: bool) -> int:
    if not requested:
        return AUTHORIZED_OPERATIONS_OMITTED
    principal = request.principal or "User:ANONYMOUS"
    return authorized_operations(
        apis.authorizer,
        principal,
        request.client_host,
        ResourceType.CLUSTER,
        "kafka-cluster",
        CLUSTER_OPERATIONS,
    )


def _topic_entry(apis: KafkaApis, name: str) -> dict[str, Any]:
    topic = apis.metadata_cache.get(name)
    if topic is None:
        return {"error_code": int(Errors.UNKNOWN_TOPIC_OR_PARTITION), "name": name}
    partitions = []
    for index in range(topic.num_partitions):
        state = apis.metadata_cache.partition_state(name, index)
        partitions.append(
            {
                # A partition without a live leader (cluster mode) is LEADER_NOT_AVAILABLE.
                "error_code": 0 if state.leader_id >= 0 else int(Errors.LEADER_NOT_AVAILABLE),
                "partition_index": index,
                "leader_id": state.leader_id,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": list(state.replicas),
                "isr_nodes": list(state.isr),
                "offline_replicas": apis.metadata_cache.offline_replicas(name, index),
            }
        )
    return {
        "error_code": 0,
        "name": name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def handle_metadata(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    requested = body["topics"]
    unknown_ids: list[Any] = []
    # v0: an empty list means every topic; v1+: null means every topic.
    if requested is None or (request.api_version == 0 and not requested):
        names = [t.name for t in apis.metadata_cache.topics()]
        auto_create = False
    else:
        names = []
        for t in requested:
            name = t["name"]
            if name is None:
                found = apis.metadata_cache.get_by_id(t["topic_id"])
                name = found.name if found else None
                if name is None:
                    unknown_ids.append(t["topic_id"])
            if name is not None:
                names.append(name)
        auto_create = body["allow_auto_topic_creation"] or request.api_version < 4
    authorizer = apis.authorizer
    principal = request.principal or "User:ANONYMOUS"

    def may(op: AclOperation, rtype: ResourceType, name: str) -> bool:
        host = request.client_host
        return authorizer is None or authorizer.authorize(principal, host, op, rtype, name)

    listing_all = requested is None or (request.api_version == 0 and not requested)
    topics = []
    for name in names:
        # Kafka hides the topics a principal may not describe from a full listing and
        # answers TOPIC_AUTHORIZATION_FAILED for the ones it asked for by name.
        if not may(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            if not listing_all:
                topics.append({"error_code": int(Errors.TOPIC_AUTHORIZATION_FAILED), "name": name})
            continue
        creating = (
            apis.metadata_cache.get(name) is None and auto_create and apis.config.auto_create_topics
        )
        if creating and not (
            may(AclOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster")
            or may(AclOperation.CREATE, ResourceType.TOPIC, name)
        ):
            topics.append({"error_code": int(Errors.TOPIC_AUTHORIZATION_FAILED), "name": name})
            continue
        if creating:
            try:
                validate_topic_name(name)
                apis.controller.create_topic(name, apis.config.default_partitions, {})
                # Kafka answers LEADER_NOT_AVAILABLE for a topic it just created; here the
                # leader is this broker and ready at once, so the topic is served directly.
            except KafkaError as e:
                topics.append({"error_code": int(e.code), "name": name})
                continue
        entry = _topic_entry(apis, name)
        if entry["error_code"] == 0 and body.get("include_topic_authorized_operations"):
            entry["topic_authorized_operations"] = authorized_operations(
                authorizer,
                principal,
                request.client_host,
                ResourceType.TOPIC,
                name,
                TOPIC_OPERATIONS,
            )
        topics.append(entry)
    # Kafka answers each id it does not know with a nameless UNKNOWN_TOPIC_ID entry.
    topics += [
        {"error_code": int(Errors.UNKNOWN_TOPIC_ID), "name": None, "topic_id": topic_id}
        for topic_id in unknown_ids
    ]
    return {
        "brokers": _brokers(apis, request.listener_name),
        "cluster_id": apis.metadata_cache.cluster_id,
        "controller_id": apis.metadata_cache.controller_id,
        "topics": topics,
        "cluster_authorized_operations": _cluster_operations(
            apis, request, bool(body.get("include_cluster_authorized_operations"))
        ),
    }


def handle_describe_cluster(apis: KafkaApis, request: Any) -> dict[str, Any]:
    cache = apis.metadata_cache
    return {
        "error_code": 0,
        "endpoint_type": request.body.get("endpoint_type", 1),
        "cluster_id": cache.cluster_id,
        "controller_id": cache.controller_id,
        "brokers": [
            {
                "broker_id": b.node_id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "is_fenced": False,
            }
            for b in cache.alive_brokers(request.listener_name)
        ],
        "cluster_authorized_operations": _cluster_operations(
            apis, request, bool(request.body.get("include_cluster_authorized_operations"))
        ),
    }
