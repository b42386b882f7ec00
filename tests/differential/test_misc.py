"""The rest: ListGroups, client quotas, SCRAM credentials, the consumer group protocol's
ConsumerGroupHeartbeat and ConsumerGroupDescribe, AddPartitionsToTxn's broker form
(v4+), WriteTxnMarkers."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kafkars import _core
from kafkars.protocol import ApiKey

from .compare import Pair
from .test_groups import find_coordinator
from .test_records import fetch, seed
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
    describe = {
        "components": [{"entity_type": "client-id", "match_type": 0, "_match": name}],
        "strict": False,
    }
    # Kafka's broker learns of the change from its metadata log a moment later.
    deadline = time.monotonic() + 30
    while not all(
        r["entries"] for r in pair.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, describe).values()
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pair.check(ApiKey.DESCRIBE_CLIENT_QUOTAS, describe, scenario="exact match")
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


def test_list_every_group(pair: Pair) -> None:
    """v0–3 list every group: both brokers have seen the same groups in this session."""
    versions = [v for v in pair.versions(ApiKey.LIST_GROUPS) if v < 4]
    pair.check(ApiKey.LIST_GROUPS, {}, scenario="every group", versions=versions)


def test_write_txn_markers(pair: Pair, name: str) -> None:
    """The coordinator-to-leader request, sent as a client may (no authorizer): an abort
    marker for a producer that never wrote, then what Fetch shows of it."""
    seed(pair, name)
    marker = {
        "markers": [
            {
                "producer_id": 4242,
                "producer_epoch": 0,
                "transaction_result": False,
                "topics": [{"name": name, "partition_indexes": [0, 7]}],
                "coordinator_epoch": 0,
            }
        ]
    }
    pair.check(ApiKey.WRITE_TXN_MARKERS, marker, scenario="abort marker, a partition unknown")
    pair.check(ApiKey.FETCH, lambda v: fetch(name, v, offset=8), scenario="the marker fetched")


def _frame(
    api_key: int, version: int, correlation: int, body: bytes = b"", flexible: bool = False
) -> bytes:
    """A request frame with a v1 header (key, version, correlation id, client id), or a
    v2 one (empty tagged fields after it) when `flexible`."""
    client = b"differential"
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    header += b"\x00" if flexible else b""
    return struct.pack(">i", len(header) + len(body)) + header + body


def test_unsupported_api_versions_version(pair: Pair) -> None:
    """ApiVersions at a version newer than the broker knows: answered at v0 with
    UNSUPPORTED_VERSION and the supported ranges (KIP-511). The header is the flexible
    one, as clients send for ApiVersions v3+ (Kafka closes on a v1 header there)."""
    answers = {}
    for broker, conn in pair.conns.items():
        frame = conn.call_raw(_frame(18, 99, 7, flexible=True))
        assert frame is not None, broker
        decoded = _core.protocol.decode_response(18, 0, 7, frame)
        answers[broker] = (decoded["error_code"], bool(decoded["api_keys"]))
    assert answers["kafka"] == answers["kafkars"] == (35, True), answers


def test_unsupported_version_and_unknown_api_close(pair: Pair) -> None:
    """A version of an API beyond what the broker serves (Produce v2 too, though
    ApiVersions lists Produce from v0), or an API key it does not know: Kafka closes the
    connection, and so does kafkars."""
    for api_key, version in ((3, 99), (1, 99), (999, 0), (0, 2)):
        pair.reconnect()
        outcomes = {
            broker: conn.call_raw(_frame(api_key, version, 1))
            for broker, conn in pair.conns.items()
        }
        assert outcomes == {"kafka": None, "kafkars": None}, (api_key, version, outcomes)


def test_requests_sent_before_a_half_close_are_answered(pair: Pair) -> None:
    """Five pipelined ApiVersions, then the client shuts down its sending side: Kafka
    answers all five in order before it closes, and so does kafkars."""
    answered = {}
    for broker, address in pair.addresses.items():
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(b"".join(_frame(18, 0, cid) for cid in range(1, 6)))
            sock.shutdown(socket.SHUT_WR)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        ids = []
        while len(received) >= 8:
            size, correlation = struct.unpack(">ii", received[:8])
            ids.append(correlation)
            received = received[4 + size :]
        answered[broker] = ids
    assert answered == {"kafka": [1, 2, 3, 4, 5], "kafkars": [1, 2, 3, 4, 5]}, answered


def test_consumer_group_join_and_leave(pair: Pair, name: str) -> None:
    """A consumer-protocol member joins (its own member id, as v1 clients send), gets the
    partitions, heartbeats at its epoch and leaves."""
    seed(pair, name, partitions=2)
    versions = pair.versions(ApiKey.CONSUMER_GROUP_HEARTBEAT)
    # Kafka's group coordinator sees a new topic only once its metadata image has it: until
    # then a join is assigned nothing. Wait for that on a group of its own.
    warm, warm_member = f"{name}-warm-up", f"member-warm-{'x' * 16}"
    find_coordinator(pair, warm)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        kafka = pair.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, versions[0], heartbeat(warm, name, warm_member, 0)
        )["kafka"]
        if (kafka.get("assignment") or {}).get("topic_partitions"):
            break
        time.sleep(0.2)
    pair.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions[0], heartbeat(warm, name, warm_member, -1))
    for version in versions:
        group = f"{name}-v{version}"
        find_coordinator(pair, group)
        member = f"member-{version}-{'x' * 16}"
        answers = pair.check(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            heartbeat(group, name, member, 0),
            scenario="join",
            versions=[version],
        )
        epoch = answers[0]["kafka"]["member_epoch"]
        pair.check(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            heartbeat(group, name, member, epoch),
            scenario="heartbeat at the member's epoch",
            versions=[version],
        )
        pair.check(
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            {"group_ids": [group], "include_authorized_operations": False},
            scenario="a stable group of one",
        )
        pair.check(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            heartbeat(group, name, member, -1),
            scenario="leave",
            versions=[version],
        )
