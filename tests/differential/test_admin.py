"""What a single Apache Kafka broker answers and kafkars must too: ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments."""

from __future__ import annotations

from typing import Any

from kafkars.protocol import ApiKey

from .compare import Pair
from .test_topics import make_topic


def elect(topic_partitions: list[tuple[str, list[int]]] | None, election_type: int) -> Any:
    return {
        "election_type": election_type,
        "topic_partitions": None
        if topic_partitions is None
        else [{"topic": t, "partitions": ps} for t, ps in topic_partitions],
        "timeout_ms": 30000,
    }


def test_elect_leaders(pair: Pair, name: str) -> None:
    make_topic(pair, name, 2)
    versions = pair.versions(ApiKey.ELECT_LEADERS)
    pair.check(
        ApiKey.ELECT_LEADERS,
        elect([(name, [0, 1])], 0),
        scenario="preferred leader already leads",
        versions=versions,
    )
    pair.check(
        ApiKey.ELECT_LEADERS,
        elect([(name, [5]), (f"{name}-missing", [0])], 0),
        scenario="unknown partition and topic",
        versions=versions,
    )
    unclean = [v for v in versions if v >= 1]
    pair.check(
        ApiKey.ELECT_LEADERS,
        elect([(name, [0])], 1),
        scenario="unclean election with a live leader",
        versions=unclean,
    )


def reassign(topic: str, partitions: dict[int, list[int] | None]) -> Any:
    return {
        "timeout_ms": 30000,
        "allow_replication_factor_change": True,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "replicas": r} for p, r in partitions.items()
                ],
            }
        ],
    }


def test_partition_reassignments(pair: Pair, name: str) -> None:
    make_topic(pair, name, 3)
    pair.check(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        reassign(name, {0: [1]}),
        scenario="to the replicas it has",
    )
    pair.check(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        reassign(name, {1: [7]}),
        scenario="to a broker that does not exist",
    )
    pair.check(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        reassign(name, {2: None}),
        scenario="cancel with nothing in progress",
    )
    pair.check(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        reassign(name, {9: [1]}),
        scenario="unknown partition",
    )
    pair.check(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        reassign(f"{name}-missing", {0: [1]}),
        scenario="unknown topic",
    )
    pair.check(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        reassign(name, {0: [1, 1]}),
        scenario="duplicate replicas",
    )
    pair.check(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        {"timeout_ms": 30000, "topics": None},
        scenario="none in progress",
    )
    pair.check(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        {"timeout_ms": 30000, "topics": [{"name": name, "partition_indexes": [0, 9]}]},
        scenario="named partitions",
    )
