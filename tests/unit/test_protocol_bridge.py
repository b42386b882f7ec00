"""The kafka-protocol <-> Python bridge (`kafkars._core.protocol`, `RecordSet`).

Requests are built with kafka-python's protocol classes (an independent encoder),
decoded by the bridge; responses are encoded by the bridge from dicts and decoded
back with kafka-python.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import struct
import types
import uuid
from collections.abc import Iterator

import kafka.protocol
import pytest
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import (
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafkars._core import RecordSet
from kafkars._core import protocol as bridge

API_KEYS = bridge.api_keys()
PRODUCE, FETCH, METADATA, HEARTBEAT, API_VERSIONS = 0, 1, 3, 12, 18
RECORDS = b"\x00" * 61 + b"pretend-record-batch"  # the bridge never looks inside


def test_api_keys_lists_every_api_with_decodable_versions() -> None:
    assert API_KEYS["Produce"] == (0, 3, 13)
    assert API_KEYS["ApiVersions"] == (18, 0, 4)
    # kafka-protocol's ApiKey says OffsetCommit goes to v10, its request struct to v9.
    assert API_KEYS["OffsetCommit"] == (8, 2, 9)
    assert len({key for key, _, _ in API_KEYS.values()}) == len(API_KEYS)


@pytest.mark.parametrize("version", [0, 1, 4, 9, 12, 13])
def test_metadata_request(version: int) -> None:
    topic_id = uuid.uuid4()
    topic = MetadataRequest.MetadataRequestTopic(name="orders", topic_id=topic_id)
    body = MetadataRequest(topics=[topic], allow_auto_topic_creation=False).encode(version=version)
    req = bridge.decode_request(METADATA, version, bytes(body))
    assert req["topics"][0]["name"] == "orders"
    assert isinstance(req["topics"][0]["topic_id"], uuid.UUID)
    if version >= 10:
        assert req["topics"][0]["topic_id"] == topic_id
    # v0-v3 have no flag on the wire; kafka-protocol's default (true) stands.
    assert req["allow_auto_topic_creation"] is (version < 4)
    assert "unknown_tagged_fields" not in req


def test_metadata_request_all_topics_is_none() -> None:
    body = MetadataRequest(topics=None).encode(version=12)
    assert bridge.decode_request(METADATA, 12, bytes(body))["topics"] is None


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_produce_request_records_arrive_as_record_set(version: int) -> None:
    partition = ProduceRequest.TopicProduceData.PartitionProduceData(index=2, records=RECORDS)
    topic = ProduceRequest.TopicProduceData(name="orders", partition_data=[partition])
    body = ProduceRequest(
        transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[topic]
    ).encode(version=version)
    req = bridge.decode_request(PRODUCE, version, bytes(body))
    assert req["acks"] == -1 and req["timeout_ms"] == 30000
    assert req["transactional_id"] is None
    [topic_data] = req["topic_data"]
    assert topic_data["name"] == "orders"
    [part] = topic_data["partition_data"]
    assert part["index"] == 2
    records = part["records"]
    assert isinstance(records, RecordSet)
    assert len(records) == records.size_in_bytes() == len(RECORDS)
    assert records.to_bytes() == RECORDS
    assert repr(records) == f"RecordSet(size_in_bytes={len(RECORDS)})"


def test_record_set_is_opaque() -> None:
    records = RecordSet(RECORDS)
    assert not isinstance(records, bytes | bytearray | memoryview)
    with pytest.raises(TypeError):
        memoryview(records)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        records.bytes = b""  # type: ignore[attr-defined]


@pytest.mark.parametrize("version", [4, 12, 13])
def test_fetch_request(version: int) -> None:
    topic_id = uuid.uuid4()
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=3, fetch_offset=42, partition_max_bytes=1 << 20
    )
    topic = FetchRequest.FetchTopic(topic="orders", topic_id=topic_id, partitions=[partition])
    body = FetchRequest(
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 24, topics=[topic]
    ).encode(version=version)
    req = bridge.decode_request(FETCH, version, bytes(body))
    assert req["max_wait_ms"] == 500
    [fetch_topic] = req["topics"]
    if version >= 13:
        assert fetch_topic["topic_id"] == topic_id
    else:
        assert fetch_topic["topic"] == "orders"
    [part] = fetch_topic["partitions"]
    assert (part["partition"], part["fetch_offset"]) == (3, 42)


def test_hand_packed_heartbeat_v0() -> None:
    def string(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    body = string("group-1") + struct.pack(">i", 7) + string("member-1")
    req = bridge.decode_request(HEARTBEAT, 0, body)
    assert req == {
        "group_id": "group-1",
        "generation_id": 7,
        "member_id": "member-1",
        "group_instance_id": None,
    }


def test_decode_request_errors() -> None:
    with pytest.raises(ValueError, match="unknown api key"):
        bridge.decode_request(9999, 0, b"")
    with pytest.raises(ValueError, match="HeartbeatRequest"):
        bridge.decode_request(HEARTBEAT, 0, b"\x00")
    with pytest.raises(ValueError, match="trailing"):
        bridge.decode_request(HEARTBEAT, 0, b"\x00\x00" + b"\x00" * 4 + b"\x00\x00" + b"!")


API_VERSIONS_RESPONSE = {
    "error_code": 0,
    "api_keys": [
        {"api_key": 0, "min_version": 3, "max_version": 11},
        {"api_key": 18, "min_version": 0, "max_version": 4},
    ],
    "throttle_time_ms": 5,
}


@pytest.mark.parametrize("version", [0, 3])
def test_api_versions_response(version: int) -> None:
    body = bridge.encode_response(API_VERSIONS, version, API_VERSIONS_RESPONSE)
    resp = ApiVersionsResponse.decode(body, version=version)
    assert resp.error_code == 0
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [
        (0, 3, 11),
        (18, 0, 4),
    ]
    if version >= 1:
        assert resp.throttle_time_ms == 5


def test_metadata_response_v12() -> None:
    topic_id = uuid.uuid4()
    response = {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
        "cluster_id": "kafkars-cluster",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "orders",
                "topic_id": topic_id,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 1,
                        "leader_epoch": 0,
                        "replica_nodes": [1],
                        "isr_nodes": (1,),  # any sequence
                        "offline_replicas": [],
                    }
                ],
                "topic_authorized_operations": -2147483648,
            }
        ],
    }
    body = bridge.encode_response(METADATA, 12, response)
    resp = MetadataResponse.decode(body, version=12)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "localhost", 9092)]
    assert resp.cluster_id == "kafkars-cluster"
    [topic] = resp.topics
    assert (topic.name, topic.topic_id) == ("orders", topic_id)
    [partition] = topic.partitions
    assert (partition.leader_id, list(partition.isr_nodes)) == (1, [1])


@pytest.mark.parametrize("version", [4, 12, 16])
def test_fetch_response_carries_record_set(version: int) -> None:
    topic_id = uuid.uuid4()
    response = {
        "responses": [
            {
                "topic": "orders",
                "topic_id": topic_id,
                "partitions": [
                    {"partition_index": 0, "high_watermark": 10, "records": RecordSet(RECORDS)},
                    {"partition_index": 1, "error_code": 1, "records": None},
                ],
            }
        ]
    }
    body = bridge.encode_response(FETCH, version, response)
    resp = FetchResponse.decode(body, version=version)
    [topic] = resp.responses
    assert topic.topic_id == topic_id if version >= 13 else topic.topic == "orders"
    p0, p1 = topic.partitions
    assert (p0.high_watermark, bytes(p0.records)) == (10, RECORDS)
    assert p1.error_code == 1 and not p1.records


def test_records_must_be_a_record_set() -> None:
    response = {"responses": [{"partitions": [{"records": RECORDS}]}]}
    with pytest.raises(TypeError, match=r"PartitionData\.records: expected RecordSet"):
        bridge.encode_response(FETCH, 12, response)


def test_unknown_field_names_struct_and_key() -> None:
    with pytest.raises(TypeError, match="ApiVersionsResponse has no field 'error_kode'"):
        bridge.encode_response(API_VERSIONS, 3, {"error_kode": 0})


def test_bad_value_names_its_path() -> None:
    brokers = [{"node_id": 1}, {"node_id": 2, "port": "9092"}]
    with pytest.raises(TypeError) as info:
        bridge.encode_response(METADATA, 12, {"brokers": brokers})
    message = str(info.value)
    assert message.startswith("MetadataResponse.brokers[1]: MetadataResponseBroker.port: ")
    with pytest.raises(OverflowError, match=r"MetadataResponseBroker\.port"):
        bridge.encode_response(METADATA, 12, {"brokers": [{"port": 1 << 40}]})
    with pytest.raises(TypeError, match="expected a list, got str"):
        bridge.encode_response(METADATA, 12, {"brokers": "localhost"})
    with pytest.raises(TypeError, match="expected a dict, got int"):
        bridge.encode_response(METADATA, 12, {"brokers": [1]})


def test_conversions_accept_mappings_enums_and_uuid_bytes() -> None:
    import enum

    class Error(enum.IntEnum):
        NONE = 0
        UNKNOWN_TOPIC_OR_PARTITION = 3

    topic_id = uuid.uuid4()
    topic = types.MappingProxyType(
        {"name": "t", "topic_id": topic_id.bytes, "error_code": Error.UNKNOWN_TOPIC_OR_PARTITION}
    )
    normalized = bridge.normalize_response(METADATA, {"topics": [topic]})
    [out] = normalized["topics"]
    assert out["topic_id"] == topic_id and out["error_code"] == 3
    assert type(out["error_code"]) is int


def test_normalize_response_fills_defaults() -> None:
    normalized = bridge.normalize_response(API_VERSIONS, {})
    assert normalized["error_code"] == 0 and normalized["api_keys"] == []
    assert normalized["finalized_features_epoch"] == -1


@pytest.mark.parametrize("name", sorted(API_KEYS))
def test_every_api_default_response_round_trips(name: str) -> None:
    key, min_version, max_version = API_KEYS[name]
    normalized = bridge.normalize_response(key, {})
    assert bridge.normalize_response(key, normalized) == normalized
    for version in (min_version, max_version):
        assert isinstance(bridge.encode_response(key, version, normalized), bytes)


def _kafka_python_messages(kind: str) -> Iterator[type[ApiMessage]]:
    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" not in module.name and "generate_stubs" not in module.name:
            importlib.import_module(module.name)
    stack = list(ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls._class_version is None and cls.type == kind:
            yield cls


def _common_versions(cls: type[ApiMessage]) -> range:
    _, lo, hi = next(v for v in API_KEYS.values() if v[0] == cls.API_KEY)
    return range(max(lo, cls.valid_versions[0]), min(hi, cls.valid_versions[1]) + 1)


def test_every_kafka_python_request_decodes() -> None:
    """Default requests from an independent encoder, every version both sides know."""
    decoded = 0
    for cls in _kafka_python_messages("request"):
        for version in _common_versions(cls):
            body = bytes(cls(version=version).encode(version=version))
            assert isinstance(bridge.decode_request(cls.API_KEY, version, body), dict)
            decoded += 1
    assert decoded > 200


def test_every_kafka_python_response_decodes_what_we_encode() -> None:
    checked = 0
    for cls in _kafka_python_messages("response"):
        normalized = bridge.normalize_response(cls.API_KEY, {})
        for version in _common_versions(cls):
            body = bridge.encode_response(cls.API_KEY, version, normalized)
            cls.decode(body, version=version)
            checked += 1
    assert checked > 200


# --- Version sanitizing: handlers fill every field, the bridge drops what the version lacks.

_STRUCT_FAILURES = (TypeError, ValueError, OverflowError)


def _non_default(value: object) -> list[object]:
    """Candidate non-default values for a leaf field whose default is `value`."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [8 if value == 7 else 7]  # fits every int width (i8 .. u32)
    if isinstance(value, float):
        return [value + 1.5]
    if isinstance(value, str):
        return [value + "set"]
    if isinstance(value, bytes):
        return [value + b"\x01\x02"]
    if isinstance(value, uuid.UUID):
        return [uuid.UUID(int=value.int ^ 0x1234_5678_9ABC_DEF0_1122_3344_5566_7788)]
    if isinstance(value, RecordSet):
        return [RecordSet(RECORDS)]
    # None (an Option) or [] (a Vec) of an unknown type: try the shapes in turn.
    scalars = ["set", 7, True, uuid.uuid4()]
    if value is None:
        return [[{}], {}, RecordSet(RECORDS), *scalars, b"\x01\x02", [7], ["set"]]
    assert value == [], value
    return [[{}], [7], ["set"], [uuid.uuid4()], [True], [b"\x01"]]


def full_response(key: int) -> dict:
    """A response for `key` with every field, at every depth, set to a non-default
    value of its type (one element in each list), found by asking the bridge which
    candidate it accepts."""
    resp = bridge.normalize_response(key, {})

    def at(root: object, path: list) -> object:
        for step in path:
            root = root[step]  # type: ignore[index]
        return root

    def fill(path: list) -> None:
        struct = at(resp, path)
        assert isinstance(struct, dict)
        for name, default in list(struct.items()):
            if isinstance(default, dict):
                fill([*path, name])
                continue
            for candidate in _non_default(default):
                struct[name] = candidate
                try:
                    normalized = bridge.normalize_response(key, resp)
                except _STRUCT_FAILURES:
                    continue
                value = at(normalized, [*path, name])
                if isinstance(value, dict):  # an Option<struct>, now filled with defaults
                    struct[name] = value
                    fill([*path, name])
                elif isinstance(value, list) and value and isinstance(value[0], dict):
                    struct[name] = value
                    fill([*path, name, 0])
                break
            else:
                pytest.fail(f"no non-default value accepted for {path + [name]} ({default!r})")

    fill([])
    return resp


def _leaves(obj: object, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    if isinstance(obj, dict):
        for name, value in obj.items():
            yield from _leaves(value, (*path, name))
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        for i, value in enumerate(obj):
            yield from _leaves(value, (*path, i))
    else:
        yield path, obj


@pytest.mark.parametrize("name", sorted(API_KEYS))
def test_every_field_set_encodes_at_every_version(name: str) -> None:
    key, min_version, max_version = API_KEYS[name]
    resp = full_response(key)
    default = bridge.normalize_response(key, {})
    assert all(resp[field] != value for field, value in default.items()), name
    for version in range(min_version, max_version + 1):
        body = bridge.encode_response(key, version, resp)
        assert isinstance(body, bytes) and body, (name, version)


def test_sanitize_resets_to_struct_defaults_not_zero() -> None:
    """Dropped fields take the struct's Default (e.g. -1), not the type's zero."""
    resp = {
        "responses": [
            {
                "name": "orders",
                "topic_id": uuid.uuid4(),
                "partition_responses": [
                    {
                        "index": 1,
                        "base_offset": 42,
                        "log_append_time_ms": 1000,
                        "log_start_offset": 7,
                        "error_message": "boom",
                        "record_errors": [{"batch_index": 3, "batch_index_error_message": "x"}],
                        "current_leader": {"leader_id": 2, "leader_epoch": 5},
                    }
                ],
            }
        ],
        "throttle_time_ms": 9,
        "node_endpoints": [{"node_id": 2, "host": "h", "port": 1, "rack": None}],
    }
    v3 = bridge.normalize_response(PRODUCE, resp, 3)
    [topic] = v3["responses"]
    assert topic["name"] == "orders" and topic["topic_id"] == uuid.UUID(int=0)
    [part] = topic["partition_responses"]
    assert (part["index"], part["base_offset"], part["log_append_time_ms"]) == (1, 42, 1000)
    assert part["log_start_offset"] == -1 and part["error_message"] is None
    assert part["record_errors"] == []
    assert part["current_leader"] == {"leader_id": -1, "leader_epoch": -1}
    assert v3["throttle_time_ms"] == 9 and v3["node_endpoints"] == []
    v10 = bridge.normalize_response(PRODUCE, resp, 10)
    assert v10["node_endpoints"] == resp["node_endpoints"]
    [part] = v10["responses"][0]["partition_responses"]
    assert part["current_leader"] == {"leader_id": 2, "leader_epoch": 5}
    assert part["record_errors"] == [{"batch_index": 3, "batch_index_error_message": "x"}]
    # The handler's own dict is untouched.
    assert resp["responses"][0]["partition_responses"][0]["log_start_offset"] == 7


def test_metadata_response_v1_with_topic_id_set() -> None:
    response = {
        "throttle_time_ms": 3,
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": "r1"}],
        "cluster_id": "kafkars-cluster",
        "controller_id": 1,
        "cluster_authorized_operations": 123,
        "error_code": 0,
        "topics": [
            {
                "error_code": 0,
                "name": "orders",
                "topic_id": uuid.uuid4(),
                "is_internal": True,
                "topic_authorized_operations": 456,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": 1,
                        "leader_epoch": 4,
                        "replica_nodes": [1, 2],
                        "isr_nodes": [1],
                        "offline_replicas": [2],
                    },
                    {"partition_index": 1, "leader_id": 2, "replica_nodes": [2], "isr_nodes": [2]},
                ],
            }
        ],
    }
    for version in range(API_KEYS["Metadata"][1], API_KEYS["Metadata"][2] + 1):
        body = bridge.encode_response(METADATA, version, response)
        if version < MetadataResponse.valid_versions[0]:
            continue
        resp = MetadataResponse.decode(body, version=version)
        assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "localhost", 9092)]
        [topic] = resp.topics
        assert topic.name == "orders"
        assert [
            (p.partition_index, p.leader_id, list(p.replica_nodes)) for p in topic.partitions
        ] == [
            (0, 1, [1, 2]),
            (1, 2, [2]),
        ]
        if version >= 1:
            assert resp.controller_id == 1 and topic.is_internal is True
            assert resp.brokers[0].rack == "r1"
        if version >= 7:
            assert topic.partitions[0].leader_epoch == 4
        if version >= 10:
            assert topic.topic_id == response["topics"][0]["topic_id"]
        if 8 <= version <= 10:  # kafka-python: authorized_operations, as a set of bits
            assert resp.authorized_operations == {i for i in range(32) if 123 >> i & 1}
        if version >= 8:
            assert topic.authorized_operations == {i for i in range(32) if 456 >> i & 1}


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_response_keeps_present_fields(version: int) -> None:
    topic_id = uuid.uuid4()
    partition = {
        "index": 2,
        "error_code": 0,
        "base_offset": 1234,
        "log_append_time_ms": 99,
        "log_start_offset": 17,
        "record_errors": [{"batch_index": 0, "batch_index_error_message": "bad"}],
        "error_message": "some dropped",
        "current_leader": {"leader_id": 3, "leader_epoch": 8},
    }
    response = {
        "responses": [{"name": "orders", "topic_id": topic_id, "partition_responses": [partition]}],
        "throttle_time_ms": 5,
    }
    body = bridge.encode_response(PRODUCE, version, response)
    resp = ProduceResponse.decode(body, version=version)
    assert resp.throttle_time_ms == 5
    [topic] = resp.responses
    if version >= 13:
        assert topic.topic_id == topic_id
    else:
        assert topic.name == "orders"
    [part] = topic.partition_responses
    assert (part.index, part.base_offset, part.log_append_time_ms) == (2, 1234, 99)
    assert part.log_start_offset == (17 if version >= 5 else -1)
    if version >= 8:
        assert part.error_message == "some dropped"
        assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
            (0, "bad")
        ]
    if version >= 10:
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (3, 8)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _schema_versions(spec: str) -> range:
    if spec == "none":
        return range(0)
    lo, _, hi = spec.partition("-")
    if spec.endswith("+"):
        return range(int(spec[:-1]), 1 << 15)
    return range(int(lo), int(hi or lo) + 1)


def _plain(value: object) -> object:
    return value.to_bytes() if isinstance(value, RecordSet) else value


def test_kept_fields_match_kafkas_message_schemas() -> None:
    """What the generator read off kafka-protocol's encoders agrees with the
    `versions` of every field in Kafka's JSON schemas (as shipped by kafka-python)."""
    compared, skipped = 0, set()
    for cls in _kafka_python_messages("response"):
        resp = full_response(cls.API_KEY)
        full = bridge.normalize_response(cls.API_KEY, resp)
        for version in _common_versions(cls):
            kept = bridge.normalize_response(cls.API_KEY, resp, version)

            def check(
                fields: list[dict], ours_full: dict, ours_kept: dict, where: str, version: int
            ) -> None:
                nonlocal compared
                for field in fields:
                    name = _snake(field["name"])
                    if name not in ours_full:  # kafka-protocol spells a few differently
                        skipped.add(f"{where}.{name}")
                        continue
                    present = version in _schema_versions(field["versions"])
                    full_value, kept_value = ours_full[name], ours_kept[name]
                    context = (f"{where}.{name}", version)
                    if not present:
                        assert _plain(kept_value) != _plain(full_value), context
                    elif "fields" in field and isinstance(full_value, list):
                        assert len(kept_value) == len(full_value) == 1, context
                        check(field["fields"], full_value[0], kept_value[0], context[0], version)
                    elif "fields" in field and isinstance(full_value, dict):
                        check(field["fields"], full_value, kept_value, context[0], version)
                    else:
                        assert _plain(kept_value) == _plain(full_value), context
                    compared += 1

            check(cls.json["fields"], full, kept, cls.json["name"], version)
    assert compared > 2000
    assert len(skipped) < 10, sorted(skipped)
