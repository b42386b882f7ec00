"""Fetch: Python resolves the partitions; Rust reads, waits and answers.

The handler turns topic names or ids into `_core.Partition` handles (or the error a
partition gets) and hands them to `_core.ReplicaManager.fetch`, which reads the file
slices, parks the fetch in the Rust fetch purgatory when fewer than `min_bytes` are
there, and sends the response with sendfile: no per-partition Python after planning,
and no GIL while a consumer waits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

READ_COMMITTED = 1

# (partition_index, Partition handle or None, error_code, fetch_offset, partition_max_bytes,
# preferred_read_replica or -1, current_leader_epoch, last_fetched_epoch (-1: none))
PlannedPartition = tuple[int, Any, int, int, int, int, int, int]

# The selector Kafka ships for KIP-392 (`replica.selector.class`); the only one we have.
RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def preferred_read_replica(
    apis: KafkaApis, handle: Any, fetch_offset: int, client_rack: str
) -> int:
    """KIP-392 on the leader: a replica in the consumer's rack that has the offset
    (Kafka's RackAwareReplicaSelector: the leader itself when it is in that rack, else
    the caught-up follower there with the most data), or -1 to read here."""
    racks = apis.metadata_cache.alive_broker_racks()
    if racks.get(apis.broker_id) == client_rack:
        return -1
    isr = set(handle.isr)
    candidates = [
        (log_end, replica)
        for replica, log_end, _ in handle.replica_states
        if replica in isr and racks.get(replica) == client_rack and log_end >= fetch_offset
    ]
    return max(candidates)[1] if candidates else -1


def plan_partitions(apis: KafkaApis, request: Any) -> list[tuple[str, Any, list[PlannedPartition]]]:
    """The request's partitions in order, each with its handle or its error code."""
    topics = []
    find = apis.replica_manager.find_partition
    body = request.body
    client_rack = body.get("rack_id") or ""
    select = (
        bool(client_rack)
        and body.get("replica_id", -1) < 0
        and apis.config.get("replica.selector.class") == RACK_AWARE_REPLICA_SELECTOR
    )
    for t in request.body["topics"]:
        name = t["topic"]
        if request.api_version >= 13:
            found = apis.metadata_cache.get_by_id(t["topic_id"])
            name = found.name if found else None
        planned: list[PlannedPartition] = []
        for p in t["partitions"]:
            index = p["partition"]
            handle = find(name, index) if name is not None else None
            if handle is not None:
                code = 0
            elif name is None:
                code = int(Errors.UNKNOWN_TOPIC_ID)
            else:
                code = int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            preferred = (
                preferred_read_replica(apis, handle, p["fetch_offset"], client_rack)
                if select and handle is not None and handle.is_leader
                else -1
            )
            planned.append(
                (
                    index,
                    handle,
                    code,
                    p["fetch_offset"],
                    p["partition_max_bytes"],
                    preferred,
                    p.get("current_leader_epoch", -1),
                    p.get("last_fetched_epoch", -1),
                )
            )
        topics.append((name or "", t["topic_id"], planned))
    return topics


def fetch_response(responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def handle_fetch(apis: KafkaApis, request: Any) -> dict[str, Any] | None:
    body = request.body
    if body.get("session_id", 0) != 0:
        # This broker keeps no fetch sessions (it always answers session_id 0), so a
        # client naming one is told it does not exist and falls back to full fetches.
        return {**fetch_response([]), "error_code": int(Errors.FETCH_SESSION_ID_NOT_FOUND)}
    quota = None
    if apis.quota_store.has_quotas():
        # Only with client quotas configured does the answer come back through Python.
        def quota(size: int) -> int:
            return apis.record_fetch_bytes(request, size)

    apis.delayed_operations.fetch(
        request,
        body.get("replica_id", -1),
        body["max_wait_ms"],
        body["min_bytes"],
        body.get("max_bytes", 2**31 - 1),
        body.get("isolation_level", 0),
        plan_partitions(apis, request),
        quota,
    )
    return None
