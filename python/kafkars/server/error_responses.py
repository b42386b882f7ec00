"""Error responses for requests whose handling failed (Kafka's `getErrorResponse`).

When a handler raises, the request is still answered: each API's response carries the
error in every error-code field, with one entry per topic, partition, group or resource
the request named (as each Kafka request class's `getErrorResponse(throwable)` builds
it), so the client sees an error for that request and the connection stays usable.

One walker builds every response from the request: `SHAPES` says, per API, which request
lists the response mirrors, which fields each entry copies from the request entry, and
which it fills (the error, and Kafka's "unknown" values such as offset -1). Fields not
named take the schema's defaults when the codec encodes the response.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkars import _core
from kafkars.config import ConfigException
from kafkars.protocol import ApiKey, Errors, KafkaError

log = logging.getLogger("kafkars.server.KafkaApis")

Body = dict[str, Any]


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


class _Marker(enum.Enum):
    CODE = "the error code"
    MESSAGE = "the error message"
    ITEM = "the request entry itself (an entry of a list of names or indexes)"


CODE, MESSAGE, ITEM = _Marker.CODE, _Marker.MESSAGE, _Marker.ITEM
CODE_ONLY = {"error_code": CODE}
ERROR = {**CODE_ONLY, "error_message": MESSAGE}


@dataclass(frozen=True)
class Part:
    """How one response struct is built from one request entry.

    `copy`: response field <- a request field's name (left out when the entry has none),
    ITEM, or a function of the entry. `fill`: response field <- a constant,
    CODE or MESSAGE (a callable is called once per entry). `lists`: response list <-
    (request lists, Part for each of their entries).
    """

    copy: Mapping[str, Any] = field(default_factory=dict)
    fill: Mapping[str, Any] = field(default_factory=dict)
    lists: Mapping[str, tuple[tuple[str, ...], Part]] = field(default_factory=dict)

    def build(self, entry: Any, code: int, message: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, source in self.copy.items():
            if source is ITEM:
                out[name] = entry
            elif callable(source):
                out[name] = source(entry)
            elif isinstance(entry, dict) and entry.get(source) is not None:
                out[name] = entry[source]
        for name, value in self.fill.items():
            if value is CODE:
                out[name] = code
            elif value is MESSAGE:
                out[name] = message
            else:
                out[name] = value() if callable(value) else value
        for name, (sources, part) in self.lists.items():
            out[name] = [
                part.build(e, code, message) for source in sources for e in entry.get(source) or []
            ]
        return out


def entries(
    source: str | tuple[str, ...],
    copy: Mapping[str, Any] | None = None,
    fill: Mapping[str, Any] | None = None,
    **lists: tuple[tuple[str, ...], Part],
) -> tuple[tuple[str, ...], Part]:
    """One response entry per entry of the request list `source` (or lists, in turn)."""
    sources = (source,) if isinstance(source, str) else source
    return sources, Part(copy or {}, fill or {}, lists)


def top(fill: Mapping[str, Any] | None = None, **lists: tuple[tuple[str, ...], Part]) -> Part:
    """A response's top level: throttle_time_ms 0, `fill`, the mirrored lists."""
    return Part({}, {"throttle_time_ms": 0, **(fill or {})}, lists)


def named(
    partitions: tuple[tuple[str, ...], Part],
    source: str = "topics",
    name: str = "name",
    into: str = "partitions",
) -> tuple[tuple[str, ...], Part]:
    """The usual topic level: its name copied, its partitions mirrored beneath it."""
    return (source,), Part({name: name}, {}, {into: partitions})


def since(version: int, old: Part, new: Part) -> Callable[[int], Part]:
    """`new` from `version` on, `old` before."""
    return lambda v: new if v >= version else old


ERROR_ONLY = top(CODE_ONLY)
ERROR_AND_MESSAGE = top(ERROR)
NO_PRODUCER = top({"error_code": CODE, "producer_id": -1, "producer_epoch": -1})
NO_COORDINATOR = {"node_id": -1, "host": "", "port": -1}
NO_OFFSET = {"timestamp": -1, "offset": -1}
TOPIC_ID = {"topic_id": "topic_id"}
SESSION = {"session_id": lambda body: body.get("session_id", 0)}
RESOURCE = {"resource_type": "resource_type", "resource_name": "resource_name"}

# v13+ Fetch clients read the top-level code; older ones also need it in every partition.
_FETCH_PARTITIONS = entries(
    "partitions",
    {"partition_index": "partition"},
    {
        "error_code": CODE,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "records": _core.FileRecords.empty,
    },
)
_FETCH = Part(
    SESSION,
    ERROR_ONLY.fill,
    {
        "responses": entries(
            "topics",
            {"topic": lambda t: t.get("topic") or "", **TOPIC_ID},
            partitions=_FETCH_PARTITIONS,
        )
    },
)

# OffsetFetch has no top-level error code before v2: every requested partition carries it.
_OFFSET_FETCH_V1 = top(
    {"error_code": CODE},
    topics=named(
        entries(
            "partition_indexes",
            {"partition_index": ITEM},
            {
                "committed_offset": -1,
                "committed_leader_epoch": -1,
                "metadata": "",
                "error_code": CODE,
            },
        )
    ),
)
_OFFSET_FETCH_V2 = top({**CODE_ONLY, "topics": []})
_OFFSET_FETCH_V8 = top(
    groups=entries("groups", {"group_id": "group_id"}, {"topics": [], "error_code": CODE})
)

# A partition's error in the lists keyed by partition index.
_PARTITION_INDEX_ERROR = entries("partitions", {"partition_index": "partition_index"}, CODE_ONLY)


def _offset_fetch(version: int) -> Part:
    if version >= 8:
        return _OFFSET_FETCH_V8
    return _OFFSET_FETCH_V2 if version >= 2 else _OFFSET_FETCH_V1


SHAPES: dict[ApiKey, Part | Callable[[int], Part]] = {
    ApiKey.PRODUCE: top(
        responses=named(
            entries(
                "partition_data",
                {"index": "index"},
                {
                    **ERROR,
                    "base_offset": -1,
                    "log_append_time_ms": -1,
                    "log_start_offset": -1,
                    "record_errors": [],
                },
            ),
            source="topic_data",
            into="partition_responses",
        )
    ),
    ApiKey.FETCH: since(13, _FETCH, Part(SESSION, {**ERROR_ONLY.fill, "responses": []})),
    ApiKey.LIST_OFFSETS: top(
        topics=named(
            entries(
                "partitions",
                {"partition_index": "partition_index"},
                {"error_code": CODE, **NO_OFFSET},
            )
        )
    ),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: top(
        topics=named(
            entries(
                "partitions",
                {"partition": "partition"},
                {"error_code": CODE, "leader_epoch": -1, "end_offset": -1},
            ),
            name="topic",
        )
    ),
    ApiKey.METADATA: top(
        {"brokers": [], "error_code": CODE},  # the top-level code is v13+
        topics=entries(
            "topics",
            # The name is not nullable in the response.
            {"name": lambda t: t.get("name") or "", **TOPIC_ID},
            {"error_code": CODE, "is_internal": False, "partitions": []},
        ),
    ),
    ApiKey.OFFSET_COMMIT: top(topics=named(_PARTITION_INDEX_ERROR)),
    ApiKey.TXN_OFFSET_COMMIT: top(topics=named(_PARTITION_INDEX_ERROR)),
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: since(
        4,
        top({**ERROR, **NO_COORDINATOR}),
        top(
            coordinators=entries(
                "coordinator_keys",
                {"key": ITEM},
                # Kafka leaves the per-key message at its empty default.
                {**NO_COORDINATOR, "error_code": CODE, "error_message": ""},
            )
        ),
    ),
    ApiKey.JOIN_GROUP: lambda version: top(
        {
            "error_code": CODE,
            "generation_id": -1,
            "protocol_type": None,
            "protocol_name": None if version >= 7 else "",
            "leader": "",
            "member_id": "",
            "members": [],
        }
    ),
    ApiKey.HEARTBEAT: ERROR_ONLY,
    ApiKey.LEAVE_GROUP: ERROR_ONLY,
    ApiKey.SYNC_GROUP: top({"error_code": CODE, "assignment": b""}),
    ApiKey.DESCRIBE_GROUPS: top(
        groups=entries(
            "groups",
            {"group_id": ITEM},
            {
                **ERROR,
                "group_state": "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
                "authorized_operations": -(2**31),
            },
        )
    ),
    ApiKey.LIST_GROUPS: top({"error_code": CODE, "groups": []}),
    ApiKey.API_VERSIONS: top({"error_code": CODE, "api_keys": []}),
    ApiKey.CREATE_TOPICS: top(
        topics=entries(
            "topics", {"name": "name"}, {**ERROR, "num_partitions": -1, "replication_factor": -1}
        )
    ),
    ApiKey.DELETE_TOPICS: lambda version: top(
        # A request names its topics (v0-5) or gives their ids (v6+).
        responses=entries(
            ("topic_names", "topics"),
            {"name": lambda t: t if isinstance(t, str) else t.get("name"), **TOPIC_ID},
            ERROR if version >= 5 else CODE_ONLY,
        )
    ),
    ApiKey.DELETE_RECORDS: top(
        topics=named(
            entries(
                "partitions",
                {"partition_index": "partition_index"},
                {"low_watermark": -1, "error_code": CODE},
            )
        )
    ),
    ApiKey.INIT_PRODUCER_ID: NO_PRODUCER,
    ApiKey.ADD_PARTITIONS_TO_TXN: since(
        4,
        top(
            results_by_topic_v3_and_below=entries(
                "v3_and_below_topics",
                {"name": "name"},
                results_by_partition=entries(
                    "partitions", {"partition_index": ITEM}, {"partition_error_code": CODE}
                ),
            )
        ),
        top({"error_code": CODE, "results_by_transaction": []}),
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: ERROR_ONLY,
    ApiKey.END_TXN: NO_PRODUCER,
    ApiKey.WRITE_TXN_MARKERS: Part(
        lists={
            "markers": entries(
                "markers",
                {"producer_id": "producer_id"},
                topics=named(entries("partition_indexes", {"partition_index": ITEM}, CODE_ONLY)),
            )
        }
    ),
    ApiKey.LEADER_AND_ISR: Part(fill={"error_code": CODE, "topics": []}),
    ApiKey.STOP_REPLICA: Part(fill={"error_code": CODE, "partition_errors": []}),
    ApiKey.UPDATE_METADATA: Part(fill={"error_code": CODE}),
    ApiKey.CONTROLLED_SHUTDOWN: Part(fill={"error_code": CODE, "remaining_partitions": []}),
    # Asked of the controller by Apache Kafka's brokers in a mixed cluster.
    ApiKey.ALTER_PARTITION: top({"error_code": CODE, "topics": []}),
    ApiKey.ALLOCATE_PRODUCER_IDS: ERROR_ONLY,
    # ElectLeaders v0 has no top-level error: each named partition carries it.
    ApiKey.ELECT_LEADERS: top(
        {"error_code": CODE},
        replica_election_results=entries(
            "topic_partitions",
            {"topic": "topic"},
            partition_result=entries("partitions", {"partition_id": ITEM}, ERROR),
        ),
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: top(ERROR, responses=named(_PARTITION_INDEX_ERROR)),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: top({**ERROR, "topics": []}),
    ApiKey.DESCRIBE_PRODUCERS: top(
        topics=named(entries("partition_indexes", {"partition_index": ITEM}, ERROR))
    ),
    ApiKey.DESCRIBE_TRANSACTIONS: top(
        transaction_states=entries("transactional_ids", {"transactional_id": ITEM}, CODE_ONLY)
    ),
    ApiKey.LIST_TRANSACTIONS: ERROR_ONLY,
    ApiKey.DESCRIBE_CONFIGS: top(results=entries("resources", RESOURCE, {**ERROR, "configs": []})),
    # AlterConfigs and IncrementalAlterConfigs: one result per resource.
    ApiKey.ALTER_CONFIGS: top(responses=entries("resources", RESOURCE, ERROR)),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: top(responses=entries("resources", RESOURCE, ERROR)),
    ApiKey.DESCRIBE_LOG_DIRS: ERROR_ONLY,
    ApiKey.CREATE_PARTITIONS: top(results=entries("topics", {"name": "name"}, ERROR)),
    ApiKey.DELETE_GROUPS: top(results=entries("groups_names", {"group_id": ITEM}, CODE_ONLY)),
    ApiKey.OFFSET_DELETE: ERROR_ONLY,
    ApiKey.DESCRIBE_CLUSTER: Part(
        {"endpoint_type": lambda body: body.get("endpoint_type", 1)},
        {**ERROR_AND_MESSAGE.fill, "cluster_id": "", "controller_id": -1, "brokers": []},
    ),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: top(
        topics=entries("topics", {"name": "name"}, {"error_code": CODE, "partitions": []})
    ),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ERROR_AND_MESSAGE,
    ApiKey.CONSUMER_GROUP_DESCRIBE: top(groups=entries("group_ids", {"group_id": ITEM}, ERROR)),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: top({**ERROR, "entries": None}),
    ApiKey.ALTER_CLIENT_QUOTAS: top(entries=entries("entries", {"entity": "entity"}, ERROR)),
    ApiKey.CREATE_ACLS: top(results=entries("creations", fill=ERROR)),
    ApiKey.DESCRIBE_ACLS: top({**ERROR, "resources": []}),
    ApiKey.DELETE_ACLS: top(filter_results=entries("filters", fill={**ERROR, "matching_acls": []})),
    ApiKey.SASL_HANDSHAKE: Part(fill={"error_code": CODE, "mechanisms": []}),
    ApiKey.SASL_AUTHENTICATE: Part(fill={**ERROR, "auth_bytes": b""}),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: top({**ERROR, "results": []}),
}


def _alter_replica_log_dirs(body: Body, code: int, message: str | None) -> dict[str, Any]:
    """One result per topic, its partitions gathered from every dir the request names."""
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


def _alter_user_scram_credentials(body: Body, code: int, message: str | None) -> dict[str, Any]:
    """One result per user, whether the request deletes or upserts its credentials."""
    users = dict.fromkeys(e["name"] for e in [*body["deletions"], *body["upsertions"]])
    return {
        "throttle_time_ms": 0,
        "results": [{"user": u, "error_code": code, "error_message": message} for u in users],
    }


# The two responses that regroup the request's entries rather than mirror them.
REGROUPED: dict[ApiKey, Callable[[Body, int, str | None], dict[str, Any]]] = {
    ApiKey.ALTER_REPLICA_LOG_DIRS: _alter_replica_log_dirs,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
}
# Every API with an error response.
ERROR_RESPONSES = SHAPES.keys() | REGROUPED.keys()


def error_response(
    api_key: int, version: int, body: Body, error: Errors, message: str | None = None
) -> dict[str, Any] | None:
    """The API's response answering the whole request with `error`; None when the request
    expects no response (Produce with acks=0)."""
    key = ApiKey(api_key)
    if key is ApiKey.PRODUCE and body.get("acks") == 0:
        return None  # no response expected: Kafka closes the connection instead
    if key in REGROUPED:
        return REGROUPED[key](body, int(error), message)
    shape = SHAPES[key]
    part = shape if isinstance(shape, Part) else shape(version)
    return part.build(body, int(error), message)


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
