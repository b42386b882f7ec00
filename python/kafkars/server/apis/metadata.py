"""Metadata and DescribeCluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.security.authorizer import AclOperation, ResourceType
from kafkars.server.errors import Errors, KafkaError
from kafkars.server.metadata import validate_topic_name

if TYPE_CHECKING:
    from kafkars.server.kafka_server import KafkaServer

# "Not requested" for authorized-operations fields (Kafka's Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def _brokers(server: KafkaServer, listener_name: str) -> list[dict[str, Any]]:
    host, port = server.advertised_endpoint(listener_name)
    return [{"node_id": server.broker_id, "host": host, "port": port, "rack": server.rack}]


def _topic_entry(server: KafkaServer, name: str) -> dict[str, Any]:
    topic = server.metadata.get(name)
    if topic is None:
        return {"error_code": int(Errors.UNKNOWN_TOPIC_OR_PARTITION), "name": name}
    node = server.broker_id
    partitions = []
    for index in range(topic.num_partitions):
        epoch = server.replica_manager.leader_epoch(name, index)
        partitions.append(
            {
                "error_code": 0,
                "partition_index": index,
                "leader_id": node,
                "leader_epoch": epoch,
                "replica_nodes": [node],
                "isr_nodes": [node],
                "offline_replicas": [],
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


def handle_metadata(server: KafkaServer, request: Any) -> dict[str, Any]:
    body = request.body
    requested = body["topics"]
    # v0: an empty list means every topic; v1+: null means every topic.
    if requested is None or (request.api_version == 0 and not requested):
        names = [t.name for t in server.metadata.topics()]
        auto_create = False
    else:
        names = []
        for t in requested:
            name = t["name"]
            if name is None:
                found = server.metadata.get_by_id(t["topic_id"])
                name = found.name if found else None
            if name is not None:
                names.append(name)
        auto_create = body["allow_auto_topic_creation"] or request.api_version < 4
    authorizer = getattr(server, "authorizer", None)
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
        creating = server.metadata.get(name) is None and auto_create and server.auto_create_topics
        if creating and not (
            may(AclOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster")
            or may(AclOperation.CREATE, ResourceType.TOPIC, name)
        ):
            topics.append({"error_code": int(Errors.TOPIC_AUTHORIZATION_FAILED), "name": name})
            continue
        if creating:
            try:
                validate_topic_name(name)
                server.create_topic(name, server.default_partitions, {})
                # Kafka answers LEADER_NOT_AVAILABLE for a topic it just created; here the
                # leader is this broker and ready at once, so the topic is served directly.
            except KafkaError as e:
                topics.append({"error_code": int(e.code), "name": name})
                continue
        topics.append(_topic_entry(server, name))
    return {
        "brokers": _brokers(server, request.listener_name),
        "cluster_id": server.cluster_id,
        "controller_id": server.broker_id,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def handle_describe_cluster(server: KafkaServer, request: Any) -> dict[str, Any]:
    host, port = server.advertised_endpoint(request.listener_name)
    return {
        "error_code": 0,
        "endpoint_type": request.body.get("endpoint_type", 1),
        "cluster_id": server.cluster_id,
        "controller_id": server.broker_id,
        "brokers": [
            {
                "broker_id": server.broker_id,
                "host": host,
                "port": port,
                "rack": server.rack,
                "is_fenced": False,
            }
        ],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
