"""DescribeTopicPartitions (KIP-966): topic metadata a page of partitions at a time.

Like Metadata, but the partitions of many topics are listed in pages: the response holds
at most `response_partition_limit` partitions (capped by the broker's
`max.request.partition.size.limit`) and, when it had to stop, a `next_cursor` naming the
topic and partition to ask from next. Topics are served sorted by name.

Kafka serves this API only in KRaft mode (it answers ELR state, which ZooKeeper clusters
do not keep). Here it is served in both modes, from whichever metadata cache the broker
has; without ELR the eligible-leader lists are empty.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError
from kafkars.security.authorization import TOPIC_OPERATIONS, authorized_operations
from kafkars.security.authorizer import AclOperation, ResourceType
from kafkars.server.apis.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafkars.server.metadata import INTERNAL_TOPICS, validate_topic_name

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis
    from kafkars.server.metadata_cache import MetadataCache

ZERO_UUID = uuid.UUID(int=0)


def _partition_entry(cache: MetadataCache, topic: str, index: int) -> dict[str, Any]:
    state = cache.partition_state(topic, index)
    return {
        "error_code": 0,
        "partition_index": index,
        "leader_id": state.leader_id,
        "leader_epoch": state.leader_epoch,
        "replica_nodes": list(state.replicas),
        "isr_nodes": list(state.isr),
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": cache.offline_replicas(topic, index),
    }


def _missing_topic(name: str) -> dict[str, Any]:
    try:
        validate_topic_name(name)
        error = Errors.UNKNOWN_TOPIC_OR_PARTITION
    except KafkaError as e:
        error = e.code
    return {
        "error_code": int(error),
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
    }


def _page(
    cache: MetadataCache,
    names: list[str],
    start: dict[str, int],
    limit: int,
    listing_all: bool,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The topics in `names` order with at most `limit` partitions in all, and the cursor
    to continue from (None when everything was listed)."""
    topics: list[dict[str, Any]] = []
    remaining = limit
    for name in names:
        if remaining == 0:
            # The previous topic was listed to its end: the next page starts here.
            return topics, {"topic_name": name, "partition_index": 0}
        topic = cache.get(name)
        if topic is None:
            # A full listing only names topics that exist; one gone since is skipped.
            if not listing_all:
                topics.append(_missing_topic(name))
            continue
        first = start.get(name, 0)
        end = min(topic.num_partitions, first + remaining)
        partitions = [_partition_entry(cache, name, i) for i in range(first, end)]
        topics.append(
            {
                "error_code": 0,
                "name": name,
                "topic_id": topic.topic_id,
                "is_internal": topic.is_internal,
                "partitions": partitions,
            }
        )
        if end < topic.num_partitions:
            return topics, {"topic_name": name, "partition_index": end}
        remaining -= len(partitions)
    return topics, None


def handle_describe_topic_partitions(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    cache = apis.metadata_cache
    cursor = body.get("cursor")
    after = cursor["topic_name"] if cursor else ""
    listing_all = not body["topics"]
    if listing_all:
        candidates = {t.name for t in cache.topics() if t.name >= after}
    else:
        candidates = {t["name"] for t in body["topics"] if t["name"] >= after}
        if cursor and cursor["topic_name"] not in candidates:
            raise KafkaError(
                Errors.INVALID_REQUEST,
                f"The cursor's topic {cursor['topic_name']} is not among the requested topics",
            )
    if cursor and cursor["partition_index"] < 0:
        raise KafkaError(
            Errors.INVALID_REQUEST,
            f"The cursor's partition index {cursor['partition_index']} is negative",
        )

    authorizer = apis.authorizer
    principal = request.principal or "User:ANONYMOUS"
    host = request.client_host
    allowed: list[str] = []
    denied: list[dict[str, Any]] = []
    for name in sorted(candidates):
        if authorizer is None or authorizer.authorize(
            principal, host, AclOperation.DESCRIBE, ResourceType.TOPIC, name
        ):
            allowed.append(name)
        elif not listing_all:
            # Named but not describable: refused without saying whether it exists.
            denied.append(
                {
                    "error_code": int(Errors.TOPIC_AUTHORIZATION_FAILED),
                    "name": name,
                    "topic_id": ZERO_UUID,
                    "is_internal": False,
                    "partitions": [],
                    "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
            )

    cap = int(apis.config.get("max.request.partition.size.limit"))
    limit = max(1, min(cap, body["response_partition_limit"]))
    start = {cursor["topic_name"]: cursor["partition_index"]} if cursor else {}
    topics, next_cursor = _page(cache, allowed, start, limit, listing_all)
    for topic in topics:
        topic["topic_authorized_operations"] = authorized_operations(
            authorizer, principal, host, ResourceType.TOPIC, topic["name"], TOPIC_OPERATIONS
        )
    return {"throttle_time_ms": 0, "topics": topics + denied, "next_cursor": next_cursor}
