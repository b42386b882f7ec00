"""KIP-848 consumer group records in `__consumer_offsets`, in Kafka 4.0's formats.

A key is an int16 record type followed by the key's fields in the non-flexible encoding;
a value is an int16 version (0) followed by the fields in the flexible encoding. The
formats are Kafka's schemas generated into kafka-protocol and encoded by
`_core.protocol.encode_record` (see vendor/README.md). Record types:

    3 ConsumerGroupMetadata                  (group)          -> group epoch
    5 ConsumerGroupMemberMetadata            (group, member)  -> subscription, client
    6 ConsumerGroupTargetAssignmentMetadata  (group)          -> assignment epoch
    7 ConsumerGroupTargetAssignmentMember    (group, member)  -> target partitions
    8 ConsumerGroupCurrentMemberAssignment   (group, member)  -> epochs, state, partitions

Type 4 (ConsumerGroupPartitionMetadata, subscribed topics' partition counts) is not
written: the coordinator recomputes it from the broker's metadata after loading.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkars import _core

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_RECORD_TYPES = frozenset({3, 4, 5, 6, 7, 8})
VALUE_VERSION = 0

# The schema name of each record type's key and value (Kafka's record type is the key's
# version in these schemas).
RECORD_NAMES = {
    GROUP_METADATA: "ConsumerGroupMetadata",
    PARTITION_METADATA: "ConsumerGroupPartitionMetadata",
    MEMBER_METADATA: "ConsumerGroupMemberMetadata",
    TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadata",
    TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMember",
    CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignment",
}
_MEMBER_KEYS = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})

# Kafka's MemberState codes.
STATE_UNKNOWN, STATE_STABLE, STATE_UNREVOKED, STATE_UNRELEASED = 0, 1, 2, 3

TopicIdPartitions = dict[uuid.UUID, list[int]]

# ConsumerGroupMemberMetadataValue's tagged field 0, ClassicMemberMetadata, is a nullable
# struct, which kafka-protocol's generator cannot encode as a tagged field: the message
# carries it as raw bytes (a null marker, unsigned varint 0 or 1, then the struct, its own
# generated message). Kafka's default for it is an empty struct, so a consumer-protocol
# member writes null.
_CLASSIC_TAG = 0
_NULL, _PRESENT = b"\x00", b"\x01"


def _encode(name: str, version: int, fields: dict[str, Any]) -> bytes:
    return _core.protocol.encode_record(name, version, fields)


def _decode(name: str, data: bytes) -> dict[str, Any]:
    return _core.protocol.decode_record(name, data)[1]


# -- encoding -------------------------------------------------------------------------------
def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    fields = {"group_id": group_id}
    if member_id is not None:
        fields["member_id"] = member_id
    return _encode(RECORD_NAMES[record_type] + "Key", record_type, fields)


def _topic_partitions(tps: TopicIdPartitions) -> list[dict[str, Any]]:
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(tps.items())]


def group_metadata_value(epoch: int) -> bytes:
    return _encode("ConsumerGroupMetadataValue", VALUE_VERSION, {"epoch": epoch})


@dataclass
class MemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    # Tagged field 0, ClassicMemberMetadata: set for a member using the classic protocol
    # (its session timeout, and its protocols as (name, metadata)).
    classic_session_timeout_ms: int | None = None
    classic_protocols: list[tuple[str, bytes]] | None = None


def member_metadata_value(m: MemberMetadata) -> bytes:
    if m.classic_session_timeout_ms is None or m.classic_protocols is None:
        classic = _NULL
    else:
        protocols = [{"name": n, "metadata": md} for n, md in m.classic_protocols]
        struct = _encode(
            "ClassicMemberMetadata",
            VALUE_VERSION,
            {"session_timeout_ms": m.classic_session_timeout_ms, "supported_protocols": protocols},
        )
        classic = _PRESENT + struct[2:]  # the struct without the version prefix
    fields = {
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": m.subscribed_topic_names,
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "server_assignor": m.server_assignor,
        "unknown_tagged_fields": {_CLASSIC_TAG: classic},
    }
    return _encode("ConsumerGroupMemberMetadataValue", VALUE_VERSION, fields)


def target_assignment_metadata_value(assignment_epoch: int) -> bytes:
    fields = {"assignment_epoch": assignment_epoch}
    return _encode("ConsumerGroupTargetAssignmentMetadataValue", VALUE_VERSION, fields)


def target_assignment_member_value(tps: TopicIdPartitions) -> bytes:
    fields = {"topic_partitions": _topic_partitions(tps)}
    return _encode("ConsumerGroupTargetAssignmentMemberValue", VALUE_VERSION, fields)


@dataclass
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicIdPartitions = field(default_factory=dict)
    pending_revocation: TopicIdPartitions = field(default_factory=dict)


def current_assignment_value(c: CurrentAssignment) -> bytes:
    fields = {
        "member_epoch": c.member_epoch,
        "previous_member_epoch": c.previous_member_epoch,
        "state": c.state,
        "assigned_partitions": _topic_partitions(c.assigned),
        "partitions_pending_revocation": _topic_partitions(c.pending_revocation),
    }
    return _encode("ConsumerGroupCurrentMemberAssignmentValue", VALUE_VERSION, fields)


# -- decoding -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Key:
    record_type: int
    group_id: str
    member_id: str | None


def read_key(data: bytes) -> Key:
    if len(data) < 2:
        raise ValueError("key shorter than its record type")
    record_type = int.from_bytes(data[:2], "big", signed=True)
    if record_type not in RECORD_NAMES:
        raise ValueError(f"record type {record_type} is no consumer group record")
    k = _decode(RECORD_NAMES[record_type] + "Key", data)
    member_id = k["member_id"] if record_type in _MEMBER_KEYS else None
    return Key(record_type, k["group_id"], member_id)


def _topic_id_partitions(topics: list[dict[str, Any]]) -> TopicIdPartitions:
    return {t["topic_id"]: list(t["partitions"]) for t in topics}


def read_epoch(data: bytes) -> int:
    """ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue (both a
    single int32, the one layout)."""
    return int(_decode("ConsumerGroupMetadataValue", data)["epoch"])


def read_member_metadata(data: bytes) -> MemberMetadata:
    v = _decode("ConsumerGroupMemberMetadataValue", data)
    out = MemberMetadata(
        instance_id=v["instance_id"],
        rack_id=v["rack_id"],
        client_id=v["client_id"],
        client_host=v["client_host"],
        subscribed_topic_names=list(v["subscribed_topic_names"]),
        subscribed_topic_regex=v["subscribed_topic_regex"],
        rebalance_timeout_ms=v["rebalance_timeout_ms"],
        server_assignor=v["server_assignor"],
    )
    classic = bytes(v["unknown_tagged_fields"].get(_CLASSIC_TAG, b""))
    if classic[:1] == _PRESENT:
        prefix = VALUE_VERSION.to_bytes(2, "big")
        c = _decode("ClassicMemberMetadata", prefix + classic[1:])
        out.classic_session_timeout_ms = c["session_timeout_ms"]
        out.classic_protocols = [
            (p["name"], bytes(p["metadata"])) for p in c["supported_protocols"]
        ]
    return out


def read_target_assignment_member(data: bytes) -> TopicIdPartitions:
    v = _decode("ConsumerGroupTargetAssignmentMemberValue", data)
    return _topic_id_partitions(v["topic_partitions"])


def read_current_assignment(data: bytes) -> CurrentAssignment:
    v = _decode("ConsumerGroupCurrentMemberAssignmentValue", data)
    return CurrentAssignment(
        member_epoch=v["member_epoch"],
        previous_member_epoch=v["previous_member_epoch"],
        state=v["state"],
        assigned=_topic_id_partitions(v["assigned_partitions"]),
        pending_revocation=_topic_id_partitions(v["partitions_pending_revocation"]),
    )
