"""Fetch: read file slices from the logs; Rust sends them with sendfile.

A fetch that finds fewer than `min_bytes` waits in the fetch purgatory (`DelayedFetch`)
until an append brings enough bytes or `max_wait_ms` passes, then reads again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkars import _core
from kafkars.server.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis
    from kafkars.server.replica_manager import ReplicaManager

READ_COMMITTED = 1


@dataclass
class FetchPlan:
    """The partitions a fetch asks for, resolved to names, in request order."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    # (topic name or None, topic id, [partition dicts])
    topics: list[tuple[str | None, Any, list[dict[str, Any]]]] = field(default_factory=list)

    @property
    def partition_keys(self) -> list[tuple[str, int]]:
        return [(name, p["partition"]) for name, _, ps in self.topics if name for p in ps]


def plan_fetch(apis: KafkaApis, request: Any) -> FetchPlan:
    body = request.body
    plan = FetchPlan(
        max_wait_ms=body["max_wait_ms"],
        min_bytes=body["min_bytes"],
        max_bytes=body["max_bytes"] if request.api_version >= 3 else 2**31 - 1,
        isolation_level=body.get("isolation_level", 0),
    )
    for t in body["topics"]:
        name = t["topic"]
        if request.api_version >= 13:
            found = apis.metadata_cache.get_by_id(t["topic_id"])
            name = found.name if found else None
        plan.topics.append((name, t["topic_id"], t["partitions"]))
    return plan


def _error_partition(index: int, code: Errors, hw: int = -1, lso: int = -1) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": int(code),
        "high_watermark": hw,
        "last_stable_offset": hw,
        "log_start_offset": lso,
        "records": _core.FileRecords.empty(),
    }


def read_plan(
    replica_manager: ReplicaManager, plan: FetchPlan
) -> tuple[list[dict[str, Any]], int, bool]:
    """Reads every partition once. Returns the response topics, the bytes read, and whether
    any partition had an error (errors answer at once)."""
    remaining = plan.max_bytes
    total = 0
    had_error = False
    responses = []
    for name, topic_id, partitions in plan.topics:
        out = []
        for p in partitions:
            index = p["partition"]
            if name is None:
                out.append(_error_partition(index, Errors.UNKNOWN_TOPIC_ID))
                had_error = True
                continue
            try:
                partition = replica_manager.get_partition(name, index)
            except KafkaError as e:
                out.append(_error_partition(index, e.code))
                had_error = True
                continue
            log = partition.log
            hw = log.high_watermark
            offset = p["fetch_offset"]
            if offset < log.log_start_offset or offset > log.log_end_offset:
                out.append(
                    _error_partition(index, Errors.OFFSET_OUT_OF_RANGE, hw, log.log_start_offset)
                )
                had_error = True
                continue
            limit = min(p["partition_max_bytes"], remaining)
            # read_committed reads stop at the last stable offset: past it a transaction
            # may still abort.
            committed = plan.isolation_level == READ_COMMITTED
            lso = log.last_stable_offset
            upper = lso if committed else hw
            # Kafka returns at least one whole batch for the first partition with data, even
            # past max_bytes, so a consumer can always make progress.
            try:
                records = log.read(offset, max(limit, 0), upper, total == 0)
            except _core.LogError as e:
                # An offline partition (KAFKA_STORAGE_ERROR) fails alone.
                out.append(_error_partition(index, Errors(e.args[0])))
                had_error = True
                continue
            size = len(records)
            total += size
            remaining = max(remaining - size, 0)
            out.append(
                {
                    "partition_index": index,
                    "error_code": 0,
                    "high_watermark": hw,
                    "last_stable_offset": lso,
                    "log_start_offset": log.log_start_offset,
                    "aborted_transactions": (
                        [
                            {"producer_id": pid, "first_offset": first}
                            for pid, first in log.aborted_transactions(offset, upper)
                        ]
                        if committed
                        else None
                    ),
                    "preferred_read_replica": -1,
                    "records": records,
                }
            )
        responses.append({"topic": name or "", "topic_id": topic_id, "partitions": out})
    return responses, total, had_error


def fetch_response(responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def handle_fetch(apis: KafkaApis, request: Any) -> dict[str, Any] | None:
    body = request.body
    if body.get("session_id", 0) != 0:
        # This broker keeps no fetch sessions (it always answers session_id 0), so a
        # client naming one is told it does not exist and falls back to full fetches.
        return {**fetch_response([]), "error_code": int(Errors.FETCH_SESSION_ID_NOT_FOUND)}
    plan = plan_fetch(apis, request)
    responses, total, had_error = read_plan(apis.replica_manager, plan)
    if (
        plan.max_wait_ms <= 0
        or total >= plan.min_bytes
        or had_error
        or not plan.partition_keys
        or apis.fetch_purgatory is None
    ):
        apis.topic_metrics.record_fetch(responses)
        return fetch_response(responses)
    apis.fetch_purgatory.watch(request, plan, responses)
    return None
