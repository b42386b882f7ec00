"""Topics and metadata: Metadata, CreateTopics, DeleteTopics, CreatePartitions,
DescribeTopicPartitions, DescribeCluster, ApiVersions."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kafkars.protocol import ApiKey

from .compare import Pair
from .known import AUTO_CREATED_TOPIC

ZERO = uuid.UUID(int=0)


def create_topics(
    topics: list[dict[str, Any]], *, validate_only: bool = False, timeout_ms: int = 30000
) -> dict[str, Any]:
    full = [
        {
            "replication_factor": -1,
            "num_partitions": -1,
            "assignments": [],
            "configs": [],
            **t,
        }
        for t in topics
    ]
    return {"topics": full, "timeout_ms": timeout_ms, "validate_only": validate_only}


def make_topic(pair: Pair, topic: str, partitions: int = 1, **configs: str) -> None:
    """Creates `topic` on both brokers (at the newest common version) and checks it."""
    [version] = pair.versions(ApiKey.CREATE_TOPICS)[-1:]
    request = create_topics(
        [
            {
                "name": topic,
                "num_partitions": partitions,
                "replication_factor": 1,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ]
    )
    answers = pair.call(ApiKey.CREATE_TOPICS, version, request)
    for broker, response in answers.items():
        assert response["topics"][0]["error_code"] == 0, (broker, response)
    wait_for_leaders(pair, topic, partitions)


def wait_for_leaders(pair: Pair, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Until both brokers lead every partition of `topic` (Kafka's KRaft broker learns
    of a new topic from its metadata log a moment after CreateTopics returns)."""
    deadline = time.monotonic() + timeout
    while True:
        answers = pair.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
        ready = all(
            len(t["partitions"]) == partitions
            and all(p["leader_id"] >= 0 and p["error_code"] == 0 for p in t["partitions"])
            for response in answers.values()
            for t in response["topics"]
        )
        if ready:
            return
        assert time.monotonic() < deadline, f"{topic} has no leaders: {answers}"
        time.sleep(0.05)


def test_api_versions_ranges_are_within_kafkas(pair: Pair) -> None:
    """Every version kafkars advertises, Kafka serves (the set of keys differs by design:
    see the README's list of what kafkars does not implement)."""
    beyond = {
        key: (ours, pair.kafka_versions.get(key))
        for key, ours in pair.kafkars_versions.items()
        if key not in pair.kafka_versions
        or ours[0] < pair.kafka_versions[key][0]
        or ours[1] > pair.kafka_versions[key][1]
    }
    assert beyond == {}


def test_api_versions(pair: Pair) -> None:
    def body(version: int) -> dict[str, Any]:
        return {"client_software_name": "differential", "client_software_version": "1.0"}

    pair.check(ApiKey.API_VERSIONS, body, scenario="valid")


def test_metadata_all_and_named(pair: Pair, name: str) -> None:
    make_topic(pair, name, 3)

    def named(version: int) -> dict[str, Any]:
        topic: dict[str, Any] = {"name": name}
        if version >= 10:
            topic["topic_id"] = ZERO
        request: dict[str, Any] = {"topics": [topic]}
        if version >= 4:
            request["allow_auto_topic_creation"] = False
        if version >= 8:
            request["include_topic_authorized_operations"] = True
        return request

    pair.check(ApiKey.METADATA, named, scenario="existing topic")


def test_metadata_unknown_topic_without_auto_create(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        topic: dict[str, Any] = {"name": f"{name}-missing-v{version}"}
        if version >= 10:
            topic["topic_id"] = ZERO
        return {"topics": [topic], "allow_auto_topic_creation": False}

    versions = [v for v in pair.versions(ApiKey.METADATA) if v >= 4]
    pair.check(ApiKey.METADATA, body, scenario="unknown topic", versions=versions)


def test_metadata_auto_creates(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        topic: dict[str, Any] = {"name": f"{name}-auto-v{version}"}
        if version >= 10:
            topic["topic_id"] = ZERO
        return {"topics": [topic], "allow_auto_topic_creation": True}

    pair.check(ApiKey.METADATA, body, scenario="auto-created topic", known=AUTO_CREATED_TOPIC)


def test_metadata_invalid_topic_name(pair: Pair) -> None:
    def body(version: int) -> dict[str, Any]:
        topic: dict[str, Any] = {"name": "bad/name"}
        if version >= 10:
            topic["topic_id"] = ZERO
        return {"topics": [topic], "allow_auto_topic_creation": True}

    pair.check(ApiKey.METADATA, body, scenario="invalid topic name")


def test_metadata_unknown_topic_id(pair: Pair) -> None:
    def body(version: int) -> dict[str, Any]:
        return {"topics": [{"name": None, "topic_id": uuid.uuid4()}]}

    versions = [v for v in pair.versions(ApiKey.METADATA) if v >= 12]
    pair.check(ApiKey.METADATA, body, scenario="unknown topic id", versions=versions)


def test_create_topics_valid_and_validate_only(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        return create_topics(
            [
                {"name": f"{name}-v{version}", "num_partitions": 2, "replication_factor": 1},
                {
                    "name": f"{name}-cfg-v{version}",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [
                        {"name": "cleanup.policy", "value": "compact"},
                        {"name": "retention.ms", "value": "3600000"},
                    ],
                },
            ]
        )

    pair.check(ApiKey.CREATE_TOPICS, body, scenario="valid")

    def dry(version: int) -> dict[str, Any]:
        return create_topics(
            [{"name": f"{name}-dry-v{version}", "num_partitions": 2, "replication_factor": 1}],
            validate_only=True,
        )

    pair.check(ApiKey.CREATE_TOPICS, dry, scenario="validate only")


def test_create_topics_defaults(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        return create_topics([{"name": f"{name}-v{version}"}])

    versions = [v for v in pair.versions(ApiKey.CREATE_TOPICS) if v >= 4]
    pair.check(ApiKey.CREATE_TOPICS, body, scenario="broker defaults", versions=versions)


def test_create_topics_errors(pair: Pair, name: str) -> None:
    make_topic(pair, name)

    def body(version: int) -> dict[str, Any]:
        return create_topics(
            [
                {"name": name, "num_partitions": 1, "replication_factor": 1},
                {"name": f"{name}-zero-v{version}", "num_partitions": 0, "replication_factor": 1},
                {"name": f"{name}-rf-v{version}", "num_partitions": 1, "replication_factor": 3},
                {"name": "bad/name", "num_partitions": 1, "replication_factor": 1},
                {
                    "name": f"{name}-cfg-v{version}",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [{"name": "cleanup.policy", "value": "sideways"}],
                },
                {
                    "name": f"{name}-unknown-cfg-v{version}",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [{"name": "no.such.config", "value": "1"}],
                },
            ]
        )

    pair.check(ApiKey.CREATE_TOPICS, body, scenario="invalid requests")


def test_delete_topics(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        topic = f"{name}-v{version}"
        make_topic(pair, topic)
        if version >= 6:
            return {
                "topics": [
                    {"name": topic, "topic_id": ZERO},
                    {"name": f"{topic}-missing", "topic_id": ZERO},
                ],
                "timeout_ms": 30000,
            }
        return {"topic_names": [topic, f"{topic}-missing"], "timeout_ms": 30000}

    pair.check(ApiKey.DELETE_TOPICS, body, scenario="existing and unknown")


def test_create_partitions(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        topic = f"{name}-v{version}"
        make_topic(pair, topic, 2)
        return {
            "topics": [
                {"name": topic, "count": 4, "assignments": None},
                {"name": f"{topic}-missing", "count": 2, "assignments": None},
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        }

    pair.check(ApiKey.CREATE_PARTITIONS, body, scenario="grow and unknown")

    def shrink(version: int) -> dict[str, Any]:
        topic = f"{name}-v{version}"
        return {
            "topics": [{"name": topic, "count": 3, "assignments": None}],
            "timeout_ms": 30000,
            "validate_only": False,
        }

    pair.check(ApiKey.CREATE_PARTITIONS, shrink, scenario="decrease")


def test_describe_topic_partitions(pair: Pair, name: str) -> None:
    make_topic(pair, name, 3)

    def body(version: int) -> dict[str, Any]:
        return {
            "topics": [{"name": name}, {"name": f"{name}-missing"}],
            "response_partition_limit": 2000,
            "cursor": None,
        }

    pair.check(ApiKey.DESCRIBE_TOPIC_PARTITIONS, body, scenario="existing and unknown")


def test_describe_cluster(pair: Pair) -> None:
    def body(version: int) -> dict[str, Any]:
        return {"include_cluster_authorized_operations": True}

    pair.check(ApiKey.DESCRIBE_CLUSTER, body, scenario="valid")
