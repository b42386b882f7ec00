"""The `__consumer_offsets` record formats, as Kafka's group coordinator writes them.

The formats are Kafka's schemas (`OffsetCommitKey`, `GroupMetadataValue`, ...) generated
into kafka-protocol and encoded by `_core.protocol.encode_record` (see vendor/README.md);
this module maps them to the coordinator's own types.

Every key starts with an int16 record type (Kafka calls it the key version): 0 and 1 are
`OffsetCommitKey`, 2 is `GroupMetadataKey`. Values carry their own int16 version. We
write OffsetCommitValue v3 (v1 when the commit asked for an explicit retention) and
GroupMetadataValue v3, the versions Kafka 3.x/4.x write, so `kafka-console-consumer
--formatter ...OffsetsMessageFormatter` and friends read our topic. A null value is a
tombstone: the offset or group is gone once compaction runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkars import _core
from kafkars.coordinator.group.group_metadata import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
)

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode) % numPartitions` with Java's String.hashCode
    (UTF-16 code units, 32-bit overflow). Utils.abs is the absolute value of the signed
    hash (MIN_VALUE maps to 0), not the hash with its sign bit cleared: the two differ
    for every negative hash, and a broker of each kind must agree on the coordinator."""
    h = 0
    data = group_id.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % num_partitions


# -- keys ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _core.protocol.encode_record(
        "OffsetCommitKey",
        OFFSET_COMMIT_KEY_VERSION,
        {"group": group, "topic": topic, "partition": partition},
    )


def group_metadata_key(group: str) -> bytes:
    return _core.protocol.encode_record(
        "GroupMetadataKey", GROUP_METADATA_KEY_VERSION, {"group": group}
    )


def record_type(data: bytes) -> int:
    """The int16 record type a key starts with (Kafka calls it the key version)."""
    if len(data) < 2:
        raise ValueError("key shorter than its record type")
    return int.from_bytes(data[:2], "big", signed=True)


def read_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key, or None for record types this coordinator does not own (KIP-848 etc.)."""
    kind = record_type(data)
    if kind in (0, 1):
        _, k = _core.protocol.decode_record("OffsetCommitKey", data)
        return OffsetKey(k["group"], k["topic"], k["partition"])
    if kind == 2:
        _, k = _core.protocol.decode_record("GroupMetadataKey", data)
        return GroupKey(k["group"])
    return None


# -- values ----------------------------------------------------------------------------------
def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    if o.expire_timestamp is not None:
        fields = {"offset": o.offset, "metadata": o.metadata}
        fields |= {"commit_timestamp": o.commit_timestamp, "expire_timestamp": o.expire_timestamp}
        return _core.protocol.encode_record("OffsetCommitValue", 1, fields)
    fields = {"offset": o.offset, "leader_epoch": o.leader_epoch, "metadata": o.metadata}
    fields["commit_timestamp"] = o.commit_timestamp
    return _core.protocol.encode_record("OffsetCommitValue", OFFSET_COMMIT_VALUE_VERSION, fields)


def read_offset_commit_value(data: bytes) -> OffsetAndMetadata:
    version, v = _core.protocol.decode_record("OffsetCommitValue", data)
    expire = v["expire_timestamp"] if version == 1 else None
    return OffsetAndMetadata(
        v["offset"], v["leader_epoch"], v["metadata"], v["commit_timestamp"], expire
    )


def group_metadata_value(group: GroupMetadata, assignment: dict[str, bytes]) -> bytes:
    members = list(group.members.values()) if group.protocol_name else []
    state_ts = group.current_state_timestamp
    fields = {
        "protocol_type": group.protocol_type or "",
        "generation": group.generation_id,
        "protocol": group.protocol_name,
        "leader": group.leader_id,
        "current_state_timestamp": -1 if state_ts is None else state_ts,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": m.metadata(group.protocol_name or ""),
                "assignment": assignment.get(m.member_id, b""),
            }
            for m in members
        ],
    }
    return _core.protocol.encode_record("GroupMetadataValue", GROUP_METADATA_VALUE_VERSION, fields)


def read_group_metadata_value(group_id: str, data: bytes) -> GroupMetadata:
    """A loaded group: Empty without members, else Stable with the stored assignment."""
    version, v = _core.protocol.decode_record("GroupMetadataValue", data)
    protocol_type = v["protocol_type"]
    generation = v["generation"]
    protocol = v["protocol"]
    leader = v["leader"]
    state_ts = v["current_state_timestamp"]
    members: list[MemberMetadata] = []
    for m in v["members"]:
        member_id = m["member_id"]
        instance_id = m["group_instance_id"]
        client_id = m["client_id"]
        client_host = m["client_host"]
        # v0 has no rebalance timeout: the session timeout stands in for it.
        rebalance_timeout = m["rebalance_timeout"] if version >= 1 else 0
        session_timeout = m["session_timeout"]
        subscription = bytes(m["subscription"])
        assignment = bytes(m["assignment"])
        members.append(
            MemberMetadata(
                member_id=member_id,
                group_instance_id=instance_id,
                client_id=client_id,
                client_host=client_host,
                rebalance_timeout_ms=rebalance_timeout or session_timeout,
                session_timeout_ms=session_timeout,
                protocol_type=protocol_type,
                supported_protocols=[(protocol or "", subscription)],
                assignment=assignment,
            )
        )
    group = GroupMetadata(group_id, GroupState.STABLE if members else GroupState.EMPTY)
    group.protocol_type = protocol_type or None
    group.generation_id = generation
    group.protocol_name = protocol
    group.current_state_timestamp = None if state_ts < 0 else state_ts
    for m in members:
        group.add(m, None)
    group.leader_id = leader if leader in group.members else group.leader_id
    return group


def describe_record(key: bytes, value: bytes | None) -> dict[str, Any]:
    """A readable form of one record, for tools (dump-log, tests)."""
    k = read_key(key)
    if isinstance(k, OffsetKey):
        out: dict[str, Any] = {"type": "offset", "group": k.group, "topic": k.topic}
        out["partition"] = k.partition
        if value is not None:
            out["value"] = vars(read_offset_commit_value(value))
        return out
    if isinstance(k, GroupKey):
        out = {"type": "group", "group": k.group}
        if value is not None:
            g = read_group_metadata_value(k.group, value)
            out["value"] = {
                "protocol_type": g.protocol_type,
                "generation": g.generation_id,
                "protocol": g.protocol_name,
                "leader": g.leader_id,
                "members": list(g.members),
            }
        return out
    return {"type": "unknown"}
