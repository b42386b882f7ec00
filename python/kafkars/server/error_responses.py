"""Error responses for requests whose handling failed (Kafka's `getErrorResponse`).

When a handler raises, the request is still answered: each API's response carries the
error in every error-code field, with one entry per topic, partition, group or resource
the request named (as each Kafka request class's `getErrorResponse(throwable)` builds
it), so the client sees an error for that request and the connection stays usable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkars import _core
from kafkars.config import ConfigException
from kafkars.protocol import ApiKey, Errors, KafkaError

log = logging.getLogger("kafkars.server.KafkaApis")

Body = dict[str, Any]
Builder = Callable[[Body, int, int, "str | None"], "dict[str, Any] | None"]


def error_for(exc: BaseException) -> tuple[Errors, str | None]:
    """The Kafka error an exception maps to, and the message to send with it.

    Like Kafka's `ApiError.fromThrowable`, UNKNOWN_SERVER_ERROR carries no message, so
    nothing internal leaks to clients (the log has it).
    """
    if isinstance(exc, KafkaError):
        return exc.code, exc.message
    if isinstance(exc, ConfigException):
        return Errors(exc.error_code), str(exc)
    if isinstance(exc, _core.CorruptRecordError):
        return Errors.CORRUPT_MESSAGE, str(exc)
    return Errors.UNKNOWN_SERVER_ERROR, None


def _topic_id(entry: Body) -> dict[str, Any]:
    """The entry's topic id, when the request version has one."""
    topic_id = entry.get("topic_id")
    return {} if topic_id is None else {"topic_id": topic_id}


# -- one builder per API: (request body, version, error code, message) -> response --------


def _produce(body: Body, version: int, code: int, message: str | None) -> dict[str, Any] | None:
    if body.get("acks") == 0:
        return None  # no response expected: Kafka closes the connection instead
    return {
        "throttle_time_ms": 0,
        "responses": [
            {
                "name": t["name"],
                "partition_responses": [
                    {
                        "index": p["index"],
                        "error_code": code,
                        "error_message": message,
                        "base_offset": -1,
                        "log_append_time_ms": -1,
                        "log_start_offset": -1,
                        "record_errors": [],
                    }
                    for p in t.get("partition_data", [])
                ],
            }
            for t in body.get("topic_data", [])
        ],
    }


def _fetch(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    # v13+ clients read the top-level code; older ones also need it in every partition.
    topics = []
    if version < 13:
        topics = [
            {
                "topic": t.get("topic") or "",
                **_topic_id(t),
                "partitions": [
                    {
                        "partition_index": p["partition"],
                        "error_code": code,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "records": _core.FileRecords.empty(),
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in body.get("topics", [])
        ]
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "session_id": body.get("session_id", 0),
        "responses": topics,
    }


def _offset_for_leader_epoch(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "topic": t["topic"],
                "partitions": [
                    {
                        "partition": p["partition"],
                        "error_code": code,
                        "leader_epoch": -1,
                        "end_offset": -1,
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in body.get("topics", [])
        ],
    }


def _list_offsets(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": code,
                        "timestamp": -1,
                        "offset": -1,
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in body.get("topics", [])
        ],
    }


def _metadata(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "brokers": [],
        "error_code": code,  # v13+
        "topics": [
            {
                "name": t.get("name") or "",  # not nullable in the response
                **_topic_id(t),
                "error_code": code,
                "is_internal": False,
                "partitions": [],
            }
            for t in body.get("topics") or []
        ],
    }


def _offset_commit(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": code}
                    for p in t.get("partitions", [])
                ],
            }
            for t in body.get("topics", [])
        ],
    }


def _offset_fetch(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    if version >= 8:
        groups = [
            {"group_id": g["group_id"], "topics": [], "error_code": code}
            for g in body.get("groups", [])
        ]
        return {"throttle_time_ms": 0, "groups": groups}
    topics = []
    if version < 2:
        # No top-level error code before v2: every requested partition carries it.
        topics = [
            {
                "name": t["name"],
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": -1,
                        "committed_leader_epoch": -1,
                        "metadata": "",
                        "error_code": code,
                    }
                    for p in t.get("partition_indexes", [])
                ],
            }
            for t in body.get("topics") or []
        ]
    return {"throttle_time_ms": 0, "error_code": code, "topics": topics}


def _find_coordinator(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    if version >= 4:
        return {
            "throttle_time_ms": 0,
            "coordinators": [
                {
                    "key": key,
                    "node_id": -1,
                    "host": "",
                    "port": -1,
                    "error_code": code,
                    # Kafka leaves the per-key message at its empty default.
                    "error_message": "",
                }
                for key in body.get("coordinator_keys", [])
            ],
        }
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "node_id": -1,
        "host": "",
        "port": -1,
    }


def _join_group(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None if version >= 7 else "",
        "leader": "",
        "member_id": "",
        "members": [],
    }


def _top_level_only(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    """Heartbeat, LeaveGroup, ListGroups, OffsetDelete, DescribeLogDirs: one error code."""
    return {"throttle_time_ms": 0, "error_code": code}


def _sync_group(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "assignment": b""}


def _describe_groups(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "groups": [
            {
                "group_id": g,
                "error_code": code,
                "error_message": message,
                "group_state": "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
                "authorized_operations": -(2**31),
            }
            for g in body.get("groups", [])
        ],
    }


def _list_groups(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "groups": []}


def _api_versions(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "api_keys": []}


def _create_topics(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "error_code": code,
                "error_message": message,
                "num_partitions": -1,
                "replication_factor": -1,
            }
            for t in body.get("topics", [])
        ],
    }


def _delete_topics(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    named = [{"name": n, "error_code": code} for n in body.get("topic_names", [])]
    by_id = [
        {"name": t.get("name"), **_topic_id(t), "error_code": code} for t in body.get("topics", [])
    ]
    for r in named + by_id:
        if version >= 5:
            r["error_message"] = message
    return {"throttle_time_ms": 0, "responses": named + by_id}


def _delete_records(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "low_watermark": -1,
                        "error_code": code,
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in body.get("topics", [])
        ],
    }


def _init_producer_id(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


def _describe_configs(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "results": [
            {
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
                "error_code": code,
                "error_message": message,
                "configs": [],
            }
            for r in body.get("resources", [])
        ],
    }


def _alter_configs(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    """AlterConfigs and IncrementalAlterConfigs: one result per resource."""
    return {
        "throttle_time_ms": 0,
        "responses": [
            {
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
                "error_code": code,
                "error_message": message,
            }
            for r in body.get("resources", [])
        ],
    }


def _create_partitions(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "results": [
            {"name": t["name"], "error_code": code, "error_message": message}
            for t in body.get("topics", [])
        ],
    }


def _delete_groups(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": code} for g in body.get("groups_names", [])],
    }


def _describe_cluster(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "endpoint_type": body.get("endpoint_type", 1),
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
    }


def _describe_topic_partitions(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {"error_code": code, "name": t["name"], "partitions": []}
            for t in body.get("topics", [])
        ],
    }


def _consumer_group_heartbeat(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message}


def _consumer_group_describe(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "groups": [
            {"group_id": g, "error_code": code, "error_message": message}
            for g in body.get("group_ids", [])
        ],
    }


def _sasl_handshake(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "mechanisms": []}


def _sasl_authenticate(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "auth_bytes": b""}


def _describe_user_scram_credentials(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "results": []}


def _alter_user_scram_credentials(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    users = dict.fromkeys(e["name"] for e in [*body["deletions"], *body["upsertions"]])
    return {
        "throttle_time_ms": 0,
        "results": [{"user": u, "error_code": code, "error_message": message} for u in users],
    }


def _create_acls(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    result = {"error_code": code, "error_message": message}
    return {"throttle_time_ms": 0, "results": [result for _ in body["creations"]]}


def _describe_acls(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}


def _delete_acls(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"error_code": code, "error_message": message, "matching_acls": []}
    return {"throttle_time_ms": 0, "filter_results": [result for _ in body["filters"]]}


def _describe_client_quotas(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}


def _alter_client_quotas(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "entries": [
            {"error_code": code, "error_message": message, "entity": e["entity"]}
            for e in body["entries"]
        ],
    }


def _add_partitions_to_txn(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    def topics(ts: list[Body]) -> list[dict[str, Any]]:
        return [
            {
                "name": t["name"],
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": code} for p in t["partitions"]
                ],
            }
            for t in ts
        ]

    if version <= 3:
        return {
            "throttle_time_ms": 0,
            "results_by_topic_v3_and_below": topics(body["v3_and_below_topics"]),
        }
    return {"throttle_time_ms": 0, "error_code": code, "results_by_transaction": []}


def _end_txn(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


def _leader_and_isr(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "topics": []}


def _stop_replica(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "partition_errors": []}


def _update_metadata(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"error_code": code}


def _elect_leaders(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    # v0 has no top-level error: each named partition carries it.
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "replica_election_results": [
            {
                "topic": t["topic"],
                "partition_result": [
                    {"partition_id": p, "error_code": code, "error_message": message}
                    for p in t["partitions"]
                ],
            }
            for t in body.get("topic_partitions") or []
        ],
    }


def _alter_partition_reassignments(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "responses": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": code}
                    for p in t["partitions"]
                ],
            }
            for t in body["topics"]
        ],
    }


def _list_partition_reassignments(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "topics": []}


def _alter_replica_log_dirs(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {}
    for d in body["dirs"]:
        for t in d["topics"]:
            results.setdefault(t["name"], []).extend(
                {"partition_index": p, "error_code": code} for p in t["partitions"]
            )
    return {
        "throttle_time_ms": 0,
        "results": [{"topic_name": n, "partitions": ps} for n, ps in results.items()],
    }


def _controlled_shutdown(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {"error_code": code, "remaining_partitions": []}


def _write_txn_markers(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "markers": [
            {
                "producer_id": m["producer_id"],
                "topics": [
                    {
                        "name": t["name"],
                        "partitions": [
                            {"partition_index": p, "error_code": code}
                            for p in t["partition_indexes"]
                        ],
                    }
                    for t in m["topics"]
                ],
            }
            for m in body["markers"]
        ]
    }


def _describe_producers(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p, "error_code": code, "error_message": message}
                    for p in t["partition_indexes"]
                ],
            }
            for t in body["topics"]
        ],
    }


def _describe_transactions(
    body: Body, version: int, code: int, message: str | None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "transaction_states": [
            {"error_code": code, "transactional_id": tid} for tid in body["transactional_ids"]
        ],
    }


def _list_transactions(body: Body, version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code}


ERROR_RESPONSES: dict[ApiKey, Builder] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _join_group,
    ApiKey.HEARTBEAT: _top_level_only,
    ApiKey.LEAVE_GROUP: _top_level_only,
    ApiKey.SYNC_GROUP: _sync_group,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.API_VERSIONS: _api_versions,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _top_level_only,
    ApiKey.END_TXN: _end_txn,
    ApiKey.TXN_OFFSET_COMMIT: _offset_commit,
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
    ApiKey.LEADER_AND_ISR: _leader_and_isr,
    ApiKey.STOP_REPLICA: _stop_replica,
    ApiKey.UPDATE_METADATA: _update_metadata,
    ApiKey.CONTROLLED_SHUTDOWN: _controlled_shutdown,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_partition_reassignments,
    ApiKey.ALTER_REPLICA_LOG_DIRS: _alter_replica_log_dirs,
    ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.DESCRIBE_LOG_DIRS: _top_level_only,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.OFFSET_DELETE: _top_level_only,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DESCRIBE_ACLS: _describe_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.SASL_HANDSHAKE: _sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: _sasl_authenticate,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
}


def error_response(
    api_key: int, version: int, body: Body, error: Errors, message: str | None = None
) -> dict[str, Any] | None:
    """The API's response answering the whole request with `error`; None when the request
    expects no response (Produce with acks=0)."""
    return ERROR_RESPONSES[ApiKey(api_key)](body, version, int(error), message)


def respond_with_error(request: Any, exc: BaseException) -> None:
    """Answers `request` with the error response for `exc`, logged at ERROR with its
    traceback. When no response can be given, the connection is closed, as Kafka does."""
    error, message = error_for(exc)
    what = (
        f"{_api_name(request.api_key)} v{request.api_version} (correlation id "
        f"{request.correlation_id}) from client {request.client_id!r} at "
        f"{request.client_host}:{request.client_port}"
    )
    # As Kafka's KafkaApis.handleError: whatever escaped a handler is logged with its
    # traceback, mapped Kafka errors included (handlers answer expected errors themselves).
    log.error(
        "Unexpected error handling request %s, answering %s: %s",
        what,
        error.name,
        exc,
        exc_info=exc,
    )
    if request.answered:
        return
    try:
        response = error_response(
            request.api_key, request.api_version, request.body, error, message
        )
        if response is None:
            request.close_connection()
        else:
            request.respond(response)
    except Exception:
        log.exception("Cannot answer request %s with an error response; closing", what)
        if not request.answered:
            request.close_connection()


def respond_or_error(request: Any, build: Callable[[], dict[str, Any]]) -> None:
    """Answers `request` with `build()`; if building or encoding it raises, with the error
    response instead. For delayed operations, which answer outside `KafkaApis.handle`."""
    if request.answered:
        return
    try:
        request.respond(build())
    except Exception as e:
        respond_with_error(request, e)


def _api_name(key: int) -> str:
    return ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
