"""Group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, OffsetDelete, DescribeGroups, ListGroups, DeleteGroups, and KIP-848's
ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Each handler turns the request dict into a `GroupCoordinator` call; JoinGroup and
SyncGroup answer later, from whichever thread completes the rebalance.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kafkars.coordinator.group.group_metadata import OffsetAndMetadata
from kafkars.coordinator.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkars.coordinator.transaction.transaction_state_manager import (
    TRANSACTION_STATE_TOPIC_NAME,
)
from kafkars.protocol import Errors, KafkaError
from kafkars.security.authorization import GROUP_OPERATIONS, authorized_operations
from kafkars.security.authorizer import ResourceType
from kafkars.server.error_responses import respond_or_error

if TYPE_CHECKING:
    from kafkars.coordinator.group import GroupCoordinator
    from kafkars.coordinator.group.consumer_group import ConsumerGroupCoordinator
    from kafkars.server.kafka_apis import KafkaApis

COORDINATOR_TYPE_GROUP, COORDINATOR_TYPE_TRANSACTION = 0, 1
# DescribeGroups without include_authorized_operations (Kafka's "not requested" value).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def _coordinator(apis: KafkaApis) -> GroupCoordinator:
    coordinator = apis.group_coordinator
    assert coordinator is not None  # created at start-up, before requests are served
    return coordinator


def _consumer_groups(apis: KafkaApis) -> ConsumerGroupCoordinator:
    coordinator = apis.consumer_group_coordinator
    assert coordinator is not None  # created at start-up, before requests are served
    return coordinator


def _answer(request: Any, response: dict[str, Any]) -> None:
    # Called from the coordinator when a rebalance completes: a response that fails to
    # encode answers with the error response rather than raising into the coordinator.
    respond_or_error(request, lambda: response)


# -- FindCoordinator ----------------------------------------------------------------------
def handle_find_coordinator(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    key_type = body.get("key_type", 0)
    # The leader of the key's partition of the internal topic coordinates it (a single
    # broker leads every partition).

    def coordinator(key: str) -> Any:
        if key_type == COORDINATOR_TYPE_GROUP:
            topic, partition = (
                GROUP_METADATA_TOPIC_NAME,
                apis.group_metadata_manager.partition_for(key),
            )
        else:
            topic, partition = (
                TRANSACTION_STATE_TOPIC_NAME,
                apis.transaction_state_manager.partition_for(key),
            )
        leader = apis.metadata_cache.partition_state(topic, partition).leader_id
        return apis.metadata_cache.node(leader, request.listener_name) if leader >= 0 else None

    def find(key: str) -> dict[str, Any]:
        # Kafka words success as the error's name in the single-key form ("NONE") and
        # leaves it empty per key (v4+); an empty key is a valid group id to Kafka 4.
        if key_type not in (COORDINATOR_TYPE_GROUP, COORDINATOR_TYPE_TRANSACTION):
            error, message = Errors.INVALID_REQUEST, f"Unknown coordinator type {key_type}"
        else:
            error, message = Errors.NONE, ("" if request.api_version >= 4 else "NONE")
            try:
                if key_type == COORDINATOR_TYPE_GROUP:
                    apis.group_metadata_manager.ensure_topic()
                else:
                    apis.transaction_state_manager.ensure_topic()
            except KafkaError as e:
                error, message = e.code, e.error_message
        node = coordinator(key) if error is Errors.NONE else None
        if error is Errors.NONE and node is None:
            error, message = Errors.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available."
        return {
            "key": key,
            "node_id": node.node_id if node is not None else -1,
            "host": node.host if node is not None else "",
            "port": node.port if node is not None else -1,
            "error_code": int(error),
            "error_message": message,
        }

    if request.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [find(k) for k in body["coordinator_keys"]]}
    one = find(body["key"])
    del one["key"]
    return {"throttle_time_ms": 0, **one}


# -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----------------------------------------
def handle_join_group(apis: KafkaApis, request: Any) -> None:
    body = request.body
    version = request.api_version

    def respond(response: dict[str, Any]) -> None:
        if version < 7 and response["protocol_name"] is None:
            response["protocol_name"] = ""  # not nullable before v7
        _answer(request, {"throttle_time_ms": 0, **response})

    # A consumer-protocol group in use takes classic members too (the coordinator routes).
    session_timeout = body["session_timeout_ms"]
    # v0 has no rebalance timeout: the session timeout bounds the rebalance too.
    rebalance_timeout = body["rebalance_timeout_ms"] if version >= 1 else session_timeout
    _coordinator(apis).handle_join_group(
        group_id=body["group_id"],
        member_id=body["member_id"],
        group_instance_id=body.get("group_instance_id") if version >= 5 else None,
        require_known_member_id=version >= 4,
        client_id=request.client_id or "",
        client_host=f"/{request.client_host}",
        rebalance_timeout_ms=rebalance_timeout,
        session_timeout_ms=session_timeout,
        protocol_type=body["protocol_type"],
        protocols=[(p["name"], bytes(p["metadata"])) for p in body["protocols"]],
        callback=respond,
    )
    return None


def handle_sync_group(apis: KafkaApis, request: Any) -> None:
    body = request.body
    version = request.api_version
    _coordinator(apis).handle_sync_group(
        group_id=body["group_id"],
        generation_id=body["generation_id"],
        member_id=body["member_id"],
        group_instance_id=body.get("group_instance_id") if version >= 3 else None,
        protocol_type=body.get("protocol_type") if version >= 5 else None,
        protocol_name=body.get("protocol_name") if version >= 5 else None,
        assignments={a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]},
        callback=lambda response: _answer(request, {"throttle_time_ms": 0, **response}),
    )
    return None


def handle_heartbeat(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    error = _coordinator(apis).handle_heartbeat(
        body["group_id"],
        body["member_id"],
        body.get("group_instance_id") if request.api_version >= 3 else None,
        body["generation_id"],
    )
    return {"throttle_time_ms": 0, "error_code": int(error)}


def handle_leave_group(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    if request.api_version >= 3:
        leaving = [(m["member_id"], m.get("group_instance_id")) for m in body["members"]]
    else:
        leaving = [(body["member_id"], None)]
    error, results = _coordinator(apis).handle_leave_group(body["group_id"], leaving)
    if request.api_version < 3:
        top = error if error is not Errors.NONE else (results[0] if results else Errors.NONE)
        return {"throttle_time_ms": 0, "error_code": int(top), "members": []}
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "members": [
            {"member_id": m, "group_instance_id": i, "error_code": int(e)}
            for (m, i), e in zip(leaving, results, strict=False)
        ],
    }


# -- offsets ------------------------------------------------------------------------------
def partition_exists(apis: KafkaApis, topic: str, partition: int) -> bool:
    return apis.metadata_cache.contains_partition(topic, partition)


def requested_offsets(
    apis: KafkaApis,
    topics: list[dict[str, Any]],
    *,
    now: int,
    with_leader_epoch: bool,
    retention_ms: int = -1,
) -> tuple[dict[tuple[str, int], OffsetAndMetadata], set[tuple[str, int]]]:
    """The offsets an OffsetCommit or TxnOffsetCommit asks to store, and the partitions it
    names that do not exist (answered UNKNOWN_TOPIC_OR_PARTITION)."""
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    unknown: set[tuple[str, int]] = set()
    for t in topics:
        for p in t["partitions"]:
            tp = (t["name"], p["partition_index"])
            if not partition_exists(apis, *tp):
                unknown.add(tp)
                continue
            offsets[tp] = OffsetAndMetadata(
                offset=p["committed_offset"],
                leader_epoch=p.get("committed_leader_epoch", -1) if with_leader_epoch else -1,
                metadata=p.get("committed_metadata") or "",
                commit_timestamp=now,
                expire_timestamp=now + retention_ms if retention_ms >= 0 else None,
            )
    return offsets, unknown


def handle_offset_commit(apis: KafkaApis, request: Any) -> None:
    body = request.body
    version = request.api_version
    now = int(time.time() * 1000)
    retention = body.get("retention_time_ms", -1) if 2 <= version <= 4 else -1
    offsets, unknown = requested_offsets(
        apis, body["topics"], now=now, with_leader_epoch=version >= 6, retention_ms=retention
    )
    consumer_check = _consumer_groups(apis).validate_commit(
        body["group_id"], body["member_id"], body["generation_id_or_member_epoch"], version=version
    )

    def respond(results: dict[tuple[str, int], Errors]) -> None:
        topics = []
        for t in body["topics"]:
            partitions = []
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else results[tp]
                partitions.append({"partition_index": tp[1], "error_code": int(error)})
            topics.append({"name": t["name"], "partitions": partitions})
        _answer(request, {"throttle_time_ms": 0, "topics": topics})

    # Answered once the offsets are in the ISR of __consumer_offsets (or failed to get
    # there), from the thread that completes the write: this one returns at once.
    if consumer_check is None:
        _coordinator(apis).handle_commit_offsets(
            body["group_id"],
            body["member_id"],
            body.get("group_instance_id") if version >= 7 else None,
            body["generation_id_or_member_epoch"],
            offsets,
            respond,
        )
    elif consumer_check is not Errors.NONE:
        respond(dict.fromkeys(offsets, consumer_check))
    else:
        # A consumer-protocol member: checked above; the offsets go where every
        # group's do (as a commit from outside any classic generation).
        _coordinator(apis).handle_commit_offsets(body["group_id"], "", None, -1, offsets, respond)
    return None


def _fetch_group(
    apis: KafkaApis,
    group_id: str,
    topics: list[dict[str, Any]] | None,
    require_stable: bool = False,
) -> list[dict[str, Any]]:
    wanted = (
        None if topics is None else [(t["name"], p) for t in topics for p in t["partition_indexes"]]
    )
    found = _coordinator(apis).handle_fetch_offsets(group_id, wanted)
    # KIP-447: an offset an open transaction may still change is not handed out.
    unstable = _coordinator(apis).pending_txn_partitions(group_id) if require_stable else set()
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), o in found.items():
        pending = (topic, partition) in unstable
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": -1 if o is None or pending else o.offset,
                "committed_leader_epoch": -1 if o is None or pending else o.leader_epoch,
                "metadata": "" if o is None or pending else o.metadata,
                "error_code": int(Errors.UNSTABLE_OFFSET_COMMIT) if pending else 0,
            }
        )
    return [{"name": name, "partitions": parts} for name, parts in by_topic.items()]


def handle_offset_fetch(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    if request.api_version >= 8:
        groups = []
        for g in body["groups"]:
            # v9+: a consumer group's member names itself and its epoch (KIP-848).
            check = (
                _consumer_groups(apis).validate_fetch(
                    g["group_id"], g.get("member_id"), g.get("member_epoch", -1)
                )
                if request.api_version >= 9
                else None
            )
            if check is not None and check is not Errors.NONE:
                groups.append({"group_id": g["group_id"], "topics": [], "error_code": int(check)})
                continue
            topics = _fetch_group(
                apis, g["group_id"], g.get("topics"), bool(body.get("require_stable"))
            )
            groups.append({"group_id": g["group_id"], "topics": topics, "error_code": 0})
        return {"throttle_time_ms": 0, "groups": groups}
    topics = body.get("topics")
    if topics is None and request.api_version < 2:
        topics = []  # v0-1 cannot ask for every partition
    return {
        "throttle_time_ms": 0,
        "topics": _fetch_group(
            apis,
            body["group_id"],
            topics,
            request.api_version >= 7 and bool(body.get("require_stable")),
        ),
        "error_code": 0,
    }


def handle_offset_delete(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    wanted = [(t["name"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
    error, results = _coordinator(apis).handle_delete_offsets(body["group_id"], wanted)
    if error is not Errors.NONE:
        return {"throttle_time_ms": 0, "error_code": int(error), "topics": []}
    topics = [
        {
            "name": t["name"],
            "partitions": [
                {
                    "partition_index": p["partition_index"],
                    "error_code": int(results[(t["name"], p["partition_index"])]),
                }
                for p in t["partitions"]
            ],
        }
        for t in body["topics"]
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "topics": topics}


# -- admin --------------------------------------------------------------------------------
def handle_describe_groups(apis: KafkaApis, request: Any) -> dict[str, Any]:
    coordinator = _coordinator(apis)
    consumer_groups = _consumer_groups(apis)
    groups = []
    for group_id in request.body["groups"]:
        if consumer_groups.get(group_id) is not None:
            # As Kafka: consumer-protocol groups are described by ConsumerGroupDescribe.
            groups.append(
                {
                    "error_code": int(Errors.GROUP_ID_NOT_FOUND),
                    "error_message": f"Group {group_id} is not a classic group.",
                    "group_id": group_id,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
            )
            continue
        described = coordinator.describe_group(group_id)
        described["error_message"] = None
        if request.api_version >= 6 and described["group_state"] == "Dead":
            # v6 (KIP-1043) names a group that does not exist instead of describing it Dead.
            described.update(
                error_code=int(Errors.GROUP_ID_NOT_FOUND),
                error_message=f"Group {group_id} not found.",
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            )
            groups.append(described)
            continue
        described["authorized_operations"] = (
            authorized_operations(
                apis.authorizer,
                request.principal or "User:ANONYMOUS",
                request.client_host,
                ResourceType.GROUP,
                group_id,
                GROUP_OPERATIONS,
            )
            if request.body.get("include_authorized_operations")
            else AUTHORIZED_OPERATIONS_OMITTED
        )
        groups.append(described)
    return {"throttle_time_ms": 0, "groups": groups}


def handle_list_groups(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    states = set(body.get("states_filter") or []) if request.api_version >= 4 else None
    types = (
        {t.lower() for t in body.get("types_filter") or []} if request.api_version >= 5 else set()
    )
    consumer_groups = _consumer_groups(apis)
    consumer_ids = set(consumer_groups.group_ids())
    groups = []
    if not types or "classic" in types:
        # A consumer-protocol group's offsets live in a classic group of the same id.
        groups += [
            {"group_id": g, "protocol_type": pt, "group_state": state, "group_type": "classic"}
            for g, pt, state in _coordinator(apis).list_groups(states or None)
            if g not in consumer_ids
        ]
    if not types or "consumer" in types:
        for g in sorted(consumer_ids):
            group = consumer_groups.get(g)
            state = group.state if group is not None else "Dead"
            if not states or state.lower() in {x.lower() for x in states}:
                groups.append(
                    {
                        "group_id": g,
                        "protocol_type": "consumer",
                        "group_state": state,
                        "group_type": "consumer",
                    }
                )
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}


def handle_delete_groups(apis: KafkaApis, request: Any) -> dict[str, Any]:
    names = list(request.body["groups_names"])
    # A consumer-protocol group with members is in use; an empty one is forgotten here and
    # its offsets deleted with the classic group of the same id below.
    busy = {g for g in names if not _consumer_groups(apis).delete_if_empty(g)}
    results = _coordinator(apis).handle_delete_groups([g for g in names if g not in busy])
    results.update(dict.fromkeys(busy, Errors.NON_EMPTY_GROUP))
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": int(e)} for g, e in results.items()],
    }


# -- KIP-848 ------------------------------------------------------------------------------
def handle_consumer_group_heartbeat(apis: KafkaApis, request: Any) -> dict[str, Any]:
    return _consumer_groups(apis).heartbeat(
        request.body, request.client_id or "", request.client_host
    )


def handle_consumer_group_describe(apis: KafkaApis, request: Any) -> dict[str, Any]:
    consumer_groups = _consumer_groups(apis)
    return {
        "throttle_time_ms": 0,
        "groups": [consumer_groups.describe(g) for g in request.body["group_ids"]],
    }
