"""The `__consumer_offsets` record formats, as Kafka's group coordinator writes them.

Every key starts with an int16 record type (Kafka calls it the key version): 0 and 1 are
`OffsetCommitKey`, 2 is `GroupMetadataKey`. Values carry their own int16 version. We
write OffsetCommitValue v3 (v1 when the commit asked for an explicit retention) and
GroupMetadataValue v3, the versions Kafka 3.x/4.x write, so `kafka-console-consumer
--formatter ...OffsetsMessageFormatter` and friends read our topic. A null value is a
tombstone: the offset or group is gone once compaction runs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

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
    (UTF-16 code units, 32-bit overflow; Utils.abs maps MIN_VALUE to 0)."""
    h = 0
    data = group_id.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % num_partitions


# -- primitive writers/readers (Kafka's non-flexible encoding) ------------------------------
class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> _Writer:
        self.parts.append(struct.pack(">h", v))
        return self

    def int32(self, v: int) -> _Writer:
        self.parts.append(struct.pack(">i", v))
        return self

    def int64(self, v: int) -> _Writer:
        self.parts.append(struct.pack(">q", v))
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.int16(-1)
        data = v.encode()
        self.int16(len(data))
        self.parts.append(data)
        return self

    def bytes_(self, v: bytes) -> _Writer:
        self.int32(len(v))
        self.parts.append(bytes(v))
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _unpack(self, fmt: str, size: int) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(v)

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        v = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return v

    def bytes_(self) -> bytes:
        n = self.int32()
        v = self.data[self.pos : self.pos + max(n, 0)]
        self.pos += max(n, 0)
        return bytes(v)


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
    w = _Writer().int16(OFFSET_COMMIT_KEY_VERSION).string(group).string(topic)
    return w.int32(partition).done()


def group_metadata_key(group: str) -> bytes:
    return _Writer().int16(GROUP_METADATA_KEY_VERSION).string(group).done()


def read_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key, or None for record types this coordinator does not own (KIP-848 etc.)."""
    r = _Reader(data)
    version = r.int16()
    if version in (0, 1):
        return OffsetKey(r.string() or "", r.string() or "", r.int32())
    if version == 2:
        return GroupKey(r.string() or "")
    return None


# -- values ----------------------------------------------------------------------------------
def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    if o.expire_timestamp is not None:
        w = _Writer().int16(1).int64(o.offset).string(o.metadata)
        return w.int64(o.commit_timestamp).int64(o.expire_timestamp).done()
    w = _Writer().int16(OFFSET_COMMIT_VALUE_VERSION).int64(o.offset).int32(o.leader_epoch)
    return w.string(o.metadata).int64(o.commit_timestamp).done()


def read_offset_commit_value(data: bytes) -> OffsetAndMetadata:
    r = _Reader(data)
    version = r.int16()
    if version > 3:
        raise ValueError(f"OffsetCommitValue v{version} is not supported")
    offset = r.int64()
    epoch = r.int32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_ts = r.int64()
    expire = r.int64() if version == 1 else None
    return OffsetAndMetadata(offset, epoch, metadata, commit_ts, expire)


def group_metadata_value(group: GroupMetadata, assignment: dict[str, bytes]) -> bytes:
    w = _Writer().int16(GROUP_METADATA_VALUE_VERSION)
    w.string(group.protocol_type or "").int32(group.generation_id)
    w.string(group.protocol_name).string(group.leader_id)
    w.int64(group.current_state_timestamp if group.current_state_timestamp is not None else -1)
    members = list(group.members.values()) if group.protocol_name else []
    w.int32(len(members))
    for m in members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id)
        w.string(m.client_host).int32(m.rebalance_timeout_ms).int32(m.session_timeout_ms)
        w.bytes_(m.metadata(group.protocol_name or ""))
        w.bytes_(assignment.get(m.member_id, b""))
    return w.done()


def read_group_metadata_value(group_id: str, data: bytes) -> GroupMetadata:
    """A loaded group: Empty without members, else Stable with the stored assignment."""
    r = _Reader(data)
    version = r.int16()
    if version > 3:
        raise ValueError(f"GroupMetadataValue v{version} is not supported")
    protocol_type = r.string() or ""
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    state_ts = r.int64() if version >= 2 else -1
    members: list[MemberMetadata] = []
    for _ in range(r.int32()):
        member_id = r.string() or ""
        instance_id = r.string() if version >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        rebalance_timeout = r.int32() if version >= 1 else 0
        session_timeout = r.int32()
        subscription = r.bytes_()
        assignment = r.bytes_()
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
