"""Classic consumer groups and offsets: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, DescribeGroups, ListGroups, DeleteGroups, OffsetCommit, OffsetFetch,
OffsetDelete; and the consumer group protocol's ConsumerGroupHeartbeat and
ConsumerGroupDescribe."""

from __future__ import annotations

import time
from typing import Any

from kafkars import _core
from kafkars.protocol import ApiKey

from .compare import Pair
from .test_records import seed

MEMBER_ID_REQUIRED = 79
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
JOIN_VERSION = 9


def find_coordinator(pair: Pair, group: str, key_type: int = 0) -> None:
    """Until both brokers name a coordinator for `group` (Kafka creates
    __consumer_offsets on the first lookup and answers COORDINATOR_NOT_AVAILABLE until it
    is ready)."""
    deadline = time.monotonic() + 30
    while True:
        answers = pair.call(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [group]}
        )
        if all(r["coordinators"][0]["error_code"] == 0 for r in answers.values()):
            # ...and until its coordinator has loaded the group's partition: an
            # OffsetFetch answers COORDINATOR_LOAD_IN_PROGRESS until then.
            wait_loaded(pair, group, key_type, deadline)
            return
        assert time.monotonic() < deadline, answers
        time.sleep(0.1)


def wait_loaded(pair: Pair, key: str, key_type: int, deadline: float) -> None:
    while True:
        if key_type == 0:
            answers = pair.call(ApiKey.OFFSET_FETCH, 7, offset_fetch(key, None, 7))
            codes = {r["error_code"] for r in answers.values()}
        else:
            answers = pair.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [key]})
            codes = {r["transaction_states"][0]["error_code"] for r in answers.values()}
        if not codes & RETRIABLE:
            return
        assert time.monotonic() < deadline, answers
        time.sleep(0.1)


def subscription(topics: list[str]) -> bytes:
    return bytes(_core.protocol.encode_subscription(1, {"topics": topics, "user_data": None}))


def join(group: str, topic: str, member_id: str = "", session_timeout_ms: int = 10000) -> Any:
    return {
        "group_id": group,
        "session_timeout_ms": session_timeout_ms,
        "rebalance_timeout_ms": 10000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription([topic])}],
        "reason": None,
    }


class Member:
    """One classic member per broker: the same group joined on both sides."""

    def __init__(self, pair: Pair, group: str, topic: str) -> None:
        self.pair, self.group, self.topic = pair, group, topic
        self.ids = {"kafka": "", "kafkars": ""}
        self.generation = -1

    def join(self) -> None:
        for broker, conn in self.pair.conns.items():
            deadline = time.monotonic() + 30
            while True:
                response = conn.call(
                    ApiKey.JOIN_GROUP, JOIN_VERSION, join(self.group, self.topic, self.ids[broker])
                )
                self.ids[broker] = response["member_id"]
                # Kafka loads the offsets partition a moment after naming its coordinator.
                if response["error_code"] in RETRIABLE and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                if response["error_code"] != MEMBER_ID_REQUIRED:
                    break
            assert response["error_code"] == 0, (broker, response)
            self.generation = response["generation_id"]

    def body(self, broker: str, request: dict[str, Any]) -> dict[str, Any]:
        return {k: (self.ids[broker] if v is MEMBER else v) for k, v in request.items()}

    def sync(self) -> None:
        assignment = bytes(
            _core.protocol.encode_assignment(
                1,
                {
                    "assigned_partitions": [{"topic": self.topic, "partitions": [0]}],
                    "user_data": None,
                },
            )
        )
        for broker, conn in self.pair.conns.items():
            response = conn.call(
                ApiKey.SYNC_GROUP,
                5,
                {
                    "group_id": self.group,
                    "generation_id": self.generation,
                    "member_id": self.ids[broker],
                    "group_instance_id": None,
                    "protocol_type": "consumer",
                    "protocol_name": "range",
                    "assignments": [{"member_id": self.ids[broker], "assignment": assignment}],
                },
            )
            assert response["error_code"] == 0, (broker, response)


class _Member:
    """Stands for the member id each broker gave (they differ)."""


MEMBER = _Member()


def check_member(
    pair: Pair, member: Member, api_key: int, body: Any, scenario: str, **kw: Any
) -> None:
    """`pair.check` with each broker's own member id put where the body has MEMBER."""
    real_call = pair.call

    def call(key: int, version: int, request: dict[str, Any]) -> dict[str, Any]:
        both = {}
        for broker, conn in pair.conns.items():
            both[broker] = conn.call(key, version, _substitute(request, member.ids[broker]))
        return both

    pair.call = call  # type: ignore[method-assign]
    try:
        pair.check(api_key, body, scenario=scenario, **kw)
    finally:
        pair.call = real_call  # type: ignore[method-assign]


def _substitute(value: Any, member_id: str) -> Any:
    if value is MEMBER:
        return member_id
    if isinstance(value, dict):
        return {k: _substitute(v, member_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, member_id) for v in value]
    return value


def stable_group(pair: Pair, name: str) -> Member:
    seed(pair, name)
    find_coordinator(pair, name)
    member = Member(pair, name, name)
    member.join()
    member.sync()
    return member


def test_find_coordinator(pair: Pair, name: str) -> None:
    find_coordinator(pair, name)

    def body(version: int) -> dict[str, Any]:
        if version >= 4:
            return {"key_type": 0, "coordinator_keys": [name]}
        return {"key": name, "key_type": 0}

    pair.check(ApiKey.FIND_COORDINATOR, body, scenario="group")
    versions = [v for v in pair.versions(ApiKey.FIND_COORDINATOR) if v >= 1]

    def bad_type(version: int) -> dict[str, Any]:
        if version >= 4:
            return {"key_type": 5, "coordinator_keys": [name]}
        return {"key": name, "key_type": 5}

    pair.check(ApiKey.FIND_COORDINATOR, bad_type, scenario="unknown key type", versions=versions)


def test_join_group_every_version(pair: Pair, name: str) -> None:
    seed(pair, name)
    for version in pair.versions(ApiKey.JOIN_GROUP):
        group = f"{name}-v{version}"
        find_coordinator(pair, group)
        first = pair.check(
            ApiKey.JOIN_GROUP, join(group, name), scenario="new member", versions=[version]
        )
        if first[0]["kafka"]["error_code"] == MEMBER_ID_REQUIRED:
            ids = {b: r["member_id"] for b, r in first[0].items()}
            member = Member(pair, group, name)
            member.ids = ids
            check_member(
                pair,
                member,
                ApiKey.JOIN_GROUP,
                join(group, name, MEMBER),  # type: ignore[arg-type]
                "rejoin with the member id",
                versions=[version],
            )


def test_join_group_errors(pair: Pair, name: str) -> None:
    seed(pair, name)
    find_coordinator(pair, name)
    pair.check(
        ApiKey.JOIN_GROUP,
        join(name, name, session_timeout_ms=10),
        scenario="session timeout below the minimum",
    )
    pair.check(
        ApiKey.JOIN_GROUP,
        join(name, name, member_id="unknown-member"),
        scenario="unknown member id",
    )
    empty = join(name, name)
    empty["protocols"] = []
    pair.check(ApiKey.JOIN_GROUP, empty, scenario="no protocols")


def test_sync_heartbeat_describe_leave(pair: Pair, name: str) -> None:
    member = stable_group(pair, name)

    def heartbeat(generation: int, member_id: Any = MEMBER) -> dict[str, Any]:
        return {
            "group_id": name,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": None,
        }

    check_member(pair, member, ApiKey.HEARTBEAT, heartbeat(member.generation), "stable member")
    check_member(
        pair, member, ApiKey.HEARTBEAT, heartbeat(member.generation + 5), "stale generation"
    )
    check_member(
        pair, member, ApiKey.HEARTBEAT, heartbeat(member.generation, "nobody"), "unknown member"
    )

    def describe(version: int) -> dict[str, Any]:
        return {"groups": [name, f"{name}-missing"], "include_authorized_operations": version >= 3}

    pair.check(ApiKey.DESCRIBE_GROUPS, describe, scenario="stable group and unknown group")

    def sync(generation: int, member_id: Any = MEMBER) -> dict[str, Any]:
        return {
            "group_id": name,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        }

    check_member(pair, member, ApiKey.SYNC_GROUP, sync(member.generation + 3), "stale generation")
    check_member(
        pair, member, ApiKey.SYNC_GROUP, sync(member.generation, "nobody"), "unknown member"
    )

    def list_groups(version: int) -> dict[str, Any]:
        return {"states_filter": ["Stable"] if version >= 4 else [], "types_filter": []}

    # Only this test's group is listed on both (other tests' groups are in other states).
    listed = pair.call(ApiKey.LIST_GROUPS, 5, list_groups(5))
    for broker, response in listed.items():
        assert name in [g["group_id"] for g in response["groups"]], broker

    def leave(version: int) -> dict[str, Any]:
        if version >= 3:
            return {"group_id": name, "members": [{"member_id": MEMBER, "reason": None}]}
        return {"group_id": name, "member_id": MEMBER}

    versions = pair.versions(ApiKey.LEAVE_GROUP)
    check_member(pair, member, ApiKey.LEAVE_GROUP, leave, "leave", versions=versions[-1:])
    check_member(pair, member, ApiKey.LEAVE_GROUP, leave, "leave again", versions=versions)
    pair.check(ApiKey.DESCRIBE_GROUPS, describe, scenario="empty group")


def commit(group: str, topic: str, generation: int, member: Any, offset: int) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                ],
            }
        ],
    }


def offset_fetch(group: str, topic: str | None, version: int) -> dict[str, Any]:
    topics = None if topic is None else [{"name": topic, "partition_indexes": [0, 3]}]
    if version >= 8:
        return {
            "groups": [
                {"group_id": group, "topics": topics, "member_id": None, "member_epoch": -1}
            ],
            "require_stable": True,
        }
    return {"group_id": group, "topics": topics, "require_stable": version >= 7}


def test_offsets(pair: Pair, name: str) -> None:
    member = stable_group(pair, name)
    for version in pair.versions(ApiKey.OFFSET_COMMIT):
        check_member(
            pair,
            member,
            ApiKey.OFFSET_COMMIT,
            commit(name, name, member.generation, MEMBER, version),
            "member of a stable group",
            versions=[version],
        )
    check_member(
        pair,
        member,
        ApiKey.OFFSET_COMMIT,
        commit(name, name, member.generation + 2, MEMBER, 1),
        "stale generation",
    )
    check_member(
        pair,
        member,
        ApiKey.OFFSET_COMMIT,
        commit(name, name, member.generation, "nobody", 1),
        "unknown member",
    )
    pair.check(
        ApiKey.OFFSET_COMMIT,
        commit(name, f"{name}-missing", -1, "", 1),
        scenario="unknown topic, no generation",
    )
    pair.check(ApiKey.OFFSET_FETCH, lambda v: offset_fetch(name, name, v), scenario="committed")
    # Null (every topic) exists from v2 on.
    pair.check(
        ApiKey.OFFSET_FETCH,
        lambda v: offset_fetch(name, None, v),
        scenario="all topics",
        versions=[v for v in pair.versions(ApiKey.OFFSET_FETCH) if v >= 2],
    )
    pair.check(
        ApiKey.OFFSET_FETCH,
        lambda v: offset_fetch(f"{name}-none", name, v),
        scenario="unknown group",
    )

    def offset_delete(topic: str) -> dict[str, Any]:
        return {
            "group_id": name,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
        }

    pair.check(ApiKey.OFFSET_DELETE, offset_delete(name), scenario="subscribed topic")

    def delete_groups(version: int) -> dict[str, Any]:
        return {"groups_names": [name, f"{name}-missing"]}

    pair.check(ApiKey.DELETE_GROUPS, delete_groups, scenario="non-empty and unknown")


def test_delete_empty_group(pair: Pair, name: str) -> None:
    seed(pair, name)
    find_coordinator(pair, name)
    pair.check(ApiKey.OFFSET_COMMIT, commit(name, name, -1, "", 3), scenario="simple consumer")
    pair.check(
        ApiKey.OFFSET_DELETE,
        {"group_id": name, "topics": [{"name": name, "partitions": [{"partition_index": 0}]}]},
        scenario="empty group",
    )
    pair.check(ApiKey.DELETE_GROUPS, {"groups_names": [name]}, scenario="empty group", versions=[2])
