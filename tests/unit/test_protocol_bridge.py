"""The kafka-protocol <-> Python bridge (`kafkars._core.protocol`, `RecordSet`).

Requests are built with kafka-python's protocol classes (an independent encoder),
decoded by the bridge; responses are encoded by the bridge from dicts and decoded
back with kafka-python.
"""

from __future__ import annotations

import importlib
import pkgutil
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
from kafka.protocol.producer import ProduceRequest
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
    with pytest.raises(TypeError, match=r"PartitionData\.records: expected RecordSet or None"):
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
