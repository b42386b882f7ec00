"""The kafka-clients 4.1.1 Admin client (tests/java AdminScenario.java) against both brokers:
one JVM per broker runs every step in order, each test asserts one step's result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .support import both, both_steps, step

Scenario = Callable[[str], dict[str, Any]]

# What each step returns (the same from both brokers).
EXPECTED: dict[str, Any] = {
    "describe_cluster": {"nodes": 1, "cluster_id_set": True, "controller_is_a_node": True},
    "create_topics": {"listed": True, "partitions": 2, "replicas": 1},
    "create_topic_exists": "TopicExistsException",
    "create_partitions": 4,
    "describe_configs": {
        "retention.ms": "86400000",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "cleanup.policy": "delete",
        "cleanup.policy.source": "DEFAULT_CONFIG",
    },
    "incremental_alter_configs": {
        "set": "12345",
        "appended": "delete,compact",
        "deleted": "604800000",
        "deleted_source": "DEFAULT_CONFIG",
    },
    "produce": 10,
    "consume_and_commit": 10,
    "list_consumer_groups": {"state": "Empty", "type": "Classic", "simple": False},
    "describe_consumer_groups": {
        "state": "Empty",
        "type": "Classic",
        "members": 0,
        "coordinator_set": True,
    },
    "list_consumer_group_offsets": {"partition-0": 10},
    "alter_consumer_group_offsets": [3, "meta"],
    "delete_consumer_group_offsets": {},
    "delete_consumer_groups": [],
    "describe_producers": {
        "producers": 1,
        "last_sequence": 9,
        "epoch": 0,
        "current_txn_start": False,
    },
    "transaction_open": True,
    "list_transactions": "Ongoing",
    "describe_transactions_ongoing": {
        "state": "Ongoing",
        "partitions": [0],
        "timeout_ms": 60000,
        "start_time_set": True,
    },
    # The open transaction starts at offset 10, after the idempotent producer's records.
    "describe_producers_in_transaction": [10],
    "describe_transactions_committed": {
        "state": "CompleteCommit",
        "partitions": [],
        "timeout_ms": 60000,
        "start_time_set": True,
    },
    "describe_log_dirs": {
        "dirs": 1,
        "data_size_positive": True,
        "is_future": False,
        "error": None,
        "total_bytes_known": True,
        "new_partition_listed": True,
    },
    "delete_topics": "deleted",
}


@both()
@pytest.mark.parametrize("name", list(EXPECTED))
def test_admin(scenario: Scenario, name: str) -> None:
    assert step(scenario("AdminScenario"), name) == EXPECTED[name]


@both()
def test_admin_ran_every_step(scenario: Scenario) -> None:
    assert list(scenario("AdminScenario")) == list(EXPECTED)


# AdminMore.java: the rest of the Admin API.
EXPECTED_MORE: dict[str, Any] = {
    "setup": True,
    "describe_features": {
        "finalized_names": [
            "eligible.leader.replicas.version",
            "group.version",
            "metadata.version",
            "transaction.version",
        ],
        "supported_has_metadata_version": True,
        "epoch_present": True,
    },
    # Timestamps rise to offset 6 and fall after it.
    "list_offsets": {
        "earliest": 0,
        "latest": 10,
        "max_timestamp": 6,
        "by_timestamp_0": 0,
        "by_timestamp_future": -1,
    },
    "delete_records": [4, 4],
    "acls": {"described": ["User:{user} WRITE ALLOW LITERAL"], "deleted": 1, "left": 0},
    "client_quotas": {"producer_byte_rate": 1048576.0, "request_percentage": 50.0},
    "scram_credentials": ["SCRAM_SHA_256/8192"],
    "fence_producers": "ProducerFencedException",
    "remove_members_from_consumer_group": [1, 0],
    "list_groups": ["Classic", "consumer", "Empty"],
    "describe_metadata_quorum": {
        "leader_is_voter": True,
        "voters": 1,
        "high_watermark_positive": True,
    },
    "elect_leaders": "ElectionNotNeededException",
    "list_partition_reassignments": 0,
}

KAFKARS_DIFFERENCES = {
    "describe_features": "kafkars's ApiVersions lists no supported or finalized features "
    "(Kafka 4.1 finalizes metadata.version, group.version, transaction.version and "
    "eligible.leader.replicas.version)",
    "describe_metadata_quorum": "kafkars does not serve DescribeQuorum (it runs no KRaft "
    "quorum): UnsupportedVersionException",
}


@both_steps(list(EXPECTED_MORE), KAFKARS_DIFFERENCES)
def test_admin_more(scenario: Scenario, name: str) -> None:
    results = scenario("AdminMore")
    expected = EXPECTED_MORE[name]
    if name == "acls":
        user = results["user"]
        expected = {**expected, "described": [d.format(user=user) for d in expected["described"]]}
    assert step(results, name) == expected


@both()
def test_admin_more_ran_every_step(scenario: Scenario) -> None:
    assert [k for k in scenario("AdminMore") if k != "user"] == list(EXPECTED_MORE)
