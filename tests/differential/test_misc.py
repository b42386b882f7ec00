"""The rest: ListGroups, client quotas, SCRAM credentials, the consumer group protocol's
ConsumerGroupHeartbeat and ConsumerGroupDescribe, AddPartitionsToTxn's broker form
(v4+), WriteTxnMarkers."""

from __future__ import annotations

from typing import Any

from kafkars.server.api_keys import ApiKey

from .compare import Pair
from .test_groups import find_coordinator
from .test_records import seed
from .test_transactions import EPOCH, PID, Producer


def test_list_groups(pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        # Only states no other test leaves a group in, so both brokers list the same.
        return {"states_filter": ["PreparingRebalance"], "types_filter": []}

    versions = [v for v in pair.versions(ApiKey.LIST_GROUPS) if v >= 4]
    pair.check(ApiKey.LIST_GROUPS, body, scenario="filtered by a state", versions=versions)


def test_client_quotas(pair: Pair, name: str) -> None:
    entity = [{"entity_type": "client-id", "entity_name": name}]

    def alter(value: float, remove: bool = False) -> dict[str, Any]:
        return {
            "entries": [
                {
                    "entity": entity,
                    "ops": [{"key": "producer_byte_rate", "value": value, "remove": remove}],
                }
            ],
            "validate_only": False,
        }

    pair.check(ApiKey.ALTER_CLIENT_QUOTAS, alter(1024.0), scenario="set a rate")
    pair.check(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        {
            "components": [{"entity_type": "client-id", "match_type": 0, "_match": name}],
            "strict": False,
        },
        scenario="exact match",
    )
    bad = alter(1.0)
    bad["entries"][0]["ops"][0]["key"] = "no_such_quota"
    pair.check(ApiKey.ALTER_CLIENT_QUOTAS, bad, scenario="unknown quota key")
    pair.check(ApiKey.ALTER_CLIENT_QUOTAS, alter(0.0, remove=True), scenario="remove")


def test_scram_credentials(pair: Pair, name: str) -> None:
    upsert = {
        "deletions": [],
        "upsertions": [
            {
                "name": name,
                "mechanism": 1,
                "iterations": 4096,
                "salt": b"0123456789abcdef",
                "salted_password": b"s" * 32,
            }
        ],
    }
    pair.check(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, upsert, scenario="add SCRAM-SHA-256")
    pair.check(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        {"users": [{"name": name}, {"name": f"{name}-missing"}]},
        scenario="a user and an unknown one",
    )
    low = {
        "deletions": [],
        "upsertions": [dict(upsert["upsertions"][0], iterations=10)],  # type: ignore[call-overload]
    }
    pair.check(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, low, scenario="too few iterations")
    pair.check(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        {"deletions": [{"name": f"{name}-missing", "mechanism": 2}], "upsertions": []},
        scenario="delete what is not there",
    )


def heartbeat(group: str, topic: str, member_id: str, epoch: int) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": [topic] if epoch == 0 else None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None,
    }


def test_consumer_group_protocol_errors(pair: Pair, name: str) -> None:
    seed(pair, name)
    find_coordinator(pair, name)
    versions = pair.versions(ApiKey.CONSUMER_GROUP_HEARTBEAT)
    pair.check(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        heartbeat(name, name, "unknown-member-id-000000", 3),
        scenario="unknown member",
        versions=versions,
    )
    missing = heartbeat(name, name, "m" * 22, 0)
    missing["rebalance_timeout_ms"] = -1
    pair.check(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        missing,
        scenario="join without a rebalance timeout",
        versions=versions,
    )
    bad_assignor = heartbeat(name, name, "a" * 22, 0)
    bad_assignor["server_assignor"] = "no-such-assignor"
    pair.check(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        bad_assignor,
        scenario="unknown server assignor",
        versions=versions,
    )
    pair.check(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        {"group_ids": [f"{name}-missing"], "include_authorized_operations": False},
        scenario="unknown group",
    )


def test_add_partitions_broker_form(pair: Pair, name: str) -> None:
    seed(pair, name)
    producer = Producer(pair, name)

    def body(verify_only: bool) -> dict[str, Any]:
        return {
            "transactions": [
                {
                    "transactional_id": name,
                    "producer_id": PID,
                    "producer_epoch": EPOCH,
                    "verify_only": verify_only,
                    "topics": [{"name": name, "partitions": [0]}],
                }
            ]
        }

    versions = [v for v in pair.versions(ApiKey.ADD_PARTITIONS_TO_TXN) if v >= 4]
    for version in versions:
        producer.check(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            body(True),
            "verify a partition not added",
            versions=[version],
        )
    producer.check(ApiKey.ADD_PARTITIONS_TO_TXN, body(False), "add", versions=versions[:1])
    producer.check(
        ApiKey.ADD_PARTITIONS_TO_TXN, body(True), "verify an added partition", versions=versions
    )
