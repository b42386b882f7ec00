"""Fetch: Python resolves the partitions; Rust reads, waits and answers.

The handler turns topic names or ids into `_core.Partition` handles (or the error a
partition gets) and hands them to `_core.DelayedOperations.fetch`, which reads the file
slices, parks the fetch in the Rust fetch purgatory when fewer than `min_bytes` are
there, and sends the response with sendfile: no per-partition Python after planning,
and no GIL while a consumer waits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.server.errors import Errors

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

READ_COMMITTED = 1

# (partition_index, Partition handle or None, error_code, fetch_offset, partition_max_bytes)
PlannedPartition = tuple[int, Any, int, int, int]


def plan_partitions(apis: KafkaApis, request: Any) -> list[tuple[str, Any, list[PlannedPartition]]]:
    """The request's partitions in order, each with its handle or its error code."""
    topics = []
    find = apis.replica_manager.find_partition
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
            planned.append((index, handle, code, p["fetch_offset"], p["partition_max_bytes"]))
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
    if apis.quota_store.entities():
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
