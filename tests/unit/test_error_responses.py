"""Every handled API's error response (Kafka's `getErrorResponse`) encodes at every
advertised version, and an independent decoder (kafka-python) reads UNKNOWN_SERVER_ERROR
in every error-code field, with the request's topics, partitions, groups and resources
mirrored."""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from collections.abc import Iterator
from typing import Any

import kafka.protocol
import pytest
from kafka.protocol.api_message import ApiMessage

from kafkars import _core
from kafkars.config import ConfigException
from kafkars.protocol import ApiKey, Errors, KafkaError
from kafkars.server.api_keys import advertised_versions
from kafkars.server.error_responses import ERROR_RESPONSES, error_for, error_response
from kafkars.server.kafka_apis import HANDLERS, codec_version_ranges

ADVERTISED = advertised_versions(set(HANDLERS), codec_version_ranges())
TOPIC_ID = uuid.uuid4()

# One request body per API, each list holding entries, shaped as the codec decodes them.
REQUESTS: dict[ApiKey, dict[str, Any]] = {
    ApiKey.PRODUCE: {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "a", "partition_data": [{"index": 0, "records": None}, {"index": 1}]}
        ],
    },
    ApiKey.FETCH: {
        "session_id": 0,
        "topics": [{"topic": "a", "topic_id": TOPIC_ID, "partitions": [{"partition": 2}]}],
    },
    ApiKey.LIST_OFFSETS: {"topics": [{"name": "a", "partitions": [{"partition_index": 3}]}]},
    ApiKey.OFFSET_FOR_LEADER_EPOCH: {"topics": [{"topic": "a", "partitions": [{"partition": 3}]}]},
    ApiKey.METADATA: {"topics": [{"name": "a", "topic_id": TOPIC_ID}, {"name": "b"}]},
    ApiKey.OFFSET_COMMIT: {
        "group_id": "g",
        "topics": [{"name": "a", "partitions": [{"partition_index": 0}]}],
    },
    ApiKey.OFFSET_FETCH: {
        "group_id": "g",
        "topics": [{"name": "a", "partition_indexes": [0, 1]}],
        "groups": [{"group_id": "g", "topics": None}, {"group_id": "h", "topics": None}],
    },
    ApiKey.FIND_COORDINATOR: {"key": "g", "key_type": 0, "coordinator_keys": ["g", "h"]},
    ApiKey.JOIN_GROUP: {"group_id": "g", "member_id": ""},
    ApiKey.HEARTBEAT: {"group_id": "g"},
    ApiKey.LEAVE_GROUP: {"group_id": "g", "members": [{"member_id": "m"}]},
    ApiKey.SYNC_GROUP: {"group_id": "g", "assignments": []},
    ApiKey.DESCRIBE_GROUPS: {"groups": ["g", "h"]},
    ApiKey.LIST_GROUPS: {"states_filter": []},
    ApiKey.API_VERSIONS: {},
    ApiKey.CREATE_TOPICS: {"topics": [{"name": "a"}, {"name": "b"}]},
    ApiKey.DELETE_TOPICS: {
        "topic_names": ["a"],
        "topics": [{"name": None, "topic_id": TOPIC_ID}],
    },
    ApiKey.DELETE_RECORDS: {"topics": [{"name": "a", "partitions": [{"partition_index": 1}]}]},
    ApiKey.INIT_PRODUCER_ID: {"transactional_id": None},
    ApiKey.ADD_PARTITIONS_TO_TXN: {
        "v3_and_below_topics": [{"name": "a", "partitions": [0, 1]}],
        "transactions": [],
    },
    ApiKey.ADD_OFFSETS_TO_TXN: {"transactional_id": "x", "group_id": "g"},
    ApiKey.END_TXN: {"transactional_id": "x"},
    ApiKey.TXN_OFFSET_COMMIT: {
        "transactional_id": "x",
        "group_id": "g",
        "topics": [{"name": "a", "partitions": [{"partition_index": 0}]}],
    },
    ApiKey.WRITE_TXN_MARKERS: {
        "markers": [{"producer_id": 1, "topics": [{"name": "a", "partition_indexes": [0]}]}]
    },
    ApiKey.DESCRIBE_PRODUCERS: {"topics": [{"name": "a", "partition_indexes": [0, 1]}]},
    ApiKey.DESCRIBE_TRANSACTIONS: {"transactional_ids": ["x", "y"]},
    ApiKey.LIST_TRANSACTIONS: {"state_filters": [], "producer_id_filters": []},
    ApiKey.DESCRIBE_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": "a"}]},
    ApiKey.ALTER_CONFIGS: {"resources": [{"resource_type": 4, "resource_name": "1"}]},
    ApiKey.INCREMENTAL_ALTER_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": "a"}]},
    ApiKey.DESCRIBE_LOG_DIRS: {"topics": None},
    ApiKey.ALTER_REPLICA_LOG_DIRS: {
        "dirs": [{"path": "/d", "topics": [{"name": "a", "partitions": [0, 1]}]}]
    },
    ApiKey.CREATE_PARTITIONS: {"topics": [{"name": "a", "count": 3}]},
    ApiKey.DELETE_GROUPS: {"groups_names": ["g", "h"]},
    ApiKey.ELECT_LEADERS: {"topic_partitions": [{"topic": "a", "partitions": [0, 1]}]},
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: {
        "topics": [{"name": "a", "partitions": [{"partition_index": 0, "replicas": [1]}]}]
    },
    ApiKey.LIST_PARTITION_REASSIGNMENTS: {"topics": None},
    ApiKey.OFFSET_DELETE: {"group_id": "g", "topics": []},
    ApiKey.DESCRIBE_CLUSTER: {"endpoint_type": 1},
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: {"topics": [{"name": "a"}, {"name": "b"}]},
    ApiKey.CONSUMER_GROUP_HEARTBEAT: {"group_id": "g"},
    ApiKey.CONSUMER_GROUP_DESCRIBE: {"group_ids": ["g", "h"]},
    ApiKey.DESCRIBE_CLIENT_QUOTAS: {},
    ApiKey.ALTER_CLIENT_QUOTAS: {"entries": [{"entity": [{"entity_type": "user"}]}]},
    ApiKey.CREATE_ACLS: {"creations": [{"resource_name": "t"}, {"resource_name": "u"}]},
    ApiKey.DESCRIBE_ACLS: {},
    ApiKey.DELETE_ACLS: {"filters": [{}, {}]},
    ApiKey.SASL_HANDSHAKE: {"mechanism": "PLAIN"},
    ApiKey.SASL_AUTHENTICATE: {"auth_bytes": b""},
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: {"users": [{"name": "u"}]},
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: {
        "deletions": [{"name": "u", "mechanism": 1}],
        "upsertions": [{"name": "v", "mechanism": 2}],
    },
}


def _kafka_python_responses() -> dict[int, type[ApiMessage]]:
    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" not in module.name and "generate_stubs" not in module.name:
            importlib.import_module(module.name)
    found: dict[int, type[ApiMessage]] = {}
    stack = list(ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls._class_version is None and cls.type == "response":
            found[cls.API_KEY] = cls
    return found


DECODERS = _kafka_python_responses()


def _error_codes(obj: Any) -> Iterator[int]:
    if isinstance(obj, dict):
        for name, value in obj.items():
            if name in ("error_code", "partition_error_code"):
                yield value
            else:
                yield from _error_codes(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _error_codes(value)


def test_every_handled_api_has_an_error_response() -> None:
    assert set(HANDLERS) <= set(ERROR_RESPONSES)
    assert set(HANDLERS) <= set(REQUESTS)


@pytest.mark.parametrize("key", sorted(HANDLERS), ids=lambda k: ApiKey(k).name)
def test_error_response_encodes_at_every_advertised_version(key: ApiKey) -> None:
    low, high = ADVERTISED[key]
    decoder = DECODERS.get(int(key))
    for version in range(low, high + 1):
        resp = error_response(key, version, REQUESTS[key], Errors.UNKNOWN_SERVER_ERROR)
        assert resp is not None
        body = _core.protocol.encode_response(int(key), version, resp)
        if decoder is None or not decoder.min_version <= version <= decoder.max_version:
            continue
        if key == ApiKey.API_VERSIONS and version > 0:
            continue  # kafka-python reads any ApiVersions error as v0 (KIP-511's fallback)
        decoded = decoder.decode(body, version=version).to_dict()
        codes = list(_error_codes(decoded))
        # DescribeLogDirs has no error code to carry before v3 (Kafka sends no results).
        assert codes or (key == ApiKey.DESCRIBE_LOG_DIRS and version < 3), (key.name, version)
        assert set(codes) <= {-1}, (key.name, version, decoded)


def _names(resp: dict[str, Any], field: str, name: str) -> list[Any]:
    return [entry[name] for entry in resp[field]]


def test_entries_mirror_the_request() -> None:
    v = ADVERTISED
    produce = error_response(ApiKey.PRODUCE, 9, REQUESTS[ApiKey.PRODUCE], Errors.NOT_COORDINATOR)
    assert produce is not None
    [topic] = produce["responses"]
    assert [p["index"] for p in topic["partition_responses"]] == [0, 1]
    assert {p["error_code"] for p in topic["partition_responses"]} == {16}
    meta = error_response(ApiKey.METADATA, v[ApiKey.METADATA][1], REQUESTS[ApiKey.METADATA], -1)
    assert meta is not None and _names(meta, "topics", "name") == ["a", "b"]
    assert meta["topics"][0]["topic_id"] == TOPIC_ID
    # Fetch before v13 names every partition; from v13 the top-level code says it all.
    old = error_response(ApiKey.FETCH, 12, REQUESTS[ApiKey.FETCH], -1)
    new = error_response(ApiKey.FETCH, 13, REQUESTS[ApiKey.FETCH], -1)
    assert old is not None and new is not None
    assert old["responses"][0]["partitions"][0]["partition_index"] == 2
    assert new["responses"] == [] and new["error_code"] == -1
    groups = error_response(ApiKey.DESCRIBE_GROUPS, 5, REQUESTS[ApiKey.DESCRIBE_GROUPS], -1)
    assert groups is not None and _names(groups, "groups", "group_id") == ["g", "h"]
    configs = error_response(ApiKey.DESCRIBE_CONFIGS, 4, REQUESTS[ApiKey.DESCRIBE_CONFIGS], -1)
    assert configs is not None
    assert configs["results"][0]["resource_name"] == "a"
    assert configs["results"][0]["resource_type"] == 2
    deleted = error_response(ApiKey.DELETE_TOPICS, 6, REQUESTS[ApiKey.DELETE_TOPICS], -1)
    assert deleted is not None
    assert [r.get("topic_id") for r in deleted["responses"]] == [None, TOPIC_ID]


def test_produce_with_acks_0_has_no_error_response() -> None:
    body = {**REQUESTS[ApiKey.PRODUCE], "acks": 0}
    assert error_response(ApiKey.PRODUCE, 9, body, Errors.UNKNOWN_SERVER_ERROR) is None


def test_exceptions_map_to_kafka_errors() -> None:
    assert error_for(RuntimeError("boom")) == (Errors.UNKNOWN_SERVER_ERROR, None)
    assert error_for(KafkaError(Errors.NOT_COORDINATOR, "moved")) == (
        Errors.NOT_COORDINATOR,
        "moved",
    )
    assert error_for(ConfigException("bad", error_code=42)) == (Errors.INVALID_REQUEST, "bad")
    assert error_for(_core.CorruptRecordError("crc"))[0] is Errors.CORRUPT_MESSAGE
