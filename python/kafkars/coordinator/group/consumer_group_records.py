"""KIP-848 consumer group records in `__consumer_offsets`, in Kafka 4.0's formats.

A key is an int16 record type followed by the key's fields in the non-flexible encoding;
a value is an int16 version (0) followed by the fields in the flexible encoding (compact
strings and arrays, an empty tagged-field section after every struct). Record types:

    3 ConsumerGroupMetadata                  (group)          -> group epoch
    5 ConsumerGroupMemberMetadata            (group, member)  -> subscription, client
    6 ConsumerGroupTargetAssignmentMetadata  (group)          -> assignment epoch
    7 ConsumerGroupTargetAssignmentMember    (group, member)  -> target partitions
    8 ConsumerGroupCurrentMemberAssignment   (group, member)  -> epochs, state, partitions

Type 4 (ConsumerGroupPartitionMetadata, subscribed topics' partition counts) is not
written: the coordinator recomputes it from the broker's metadata after loading.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

GROUP_METADATA = 3
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_RECORD_TYPES = frozenset({3, 4, 5, 6, 7, 8})

# Kafka's MemberState codes.
STATE_UNKNOWN, STATE_STABLE, STATE_UNREVOKED, STATE_UNRELEASED = 0, 1, 2, 3

TopicIdPartitions = dict[uuid.UUID, list[int]]


# -- encoding -------------------------------------------------------------------------------
def _string(v: str) -> bytes:
    data = v.encode()
    return struct.pack(">h", len(data)) + data


def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    out = struct.pack(">h", record_type) + _string(group_id)
    return out + _string(member_id) if member_id is not None else out


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _Flexible:
    def __init__(self) -> None:
        self.parts: list[bytes] = [struct.pack(">h", 0)]  # value version 0

    def int8(self, v: int) -> _Flexible:
        self.parts.append(struct.pack(">b", v))
        return self

    def int32(self, v: int) -> _Flexible:
        self.parts.append(struct.pack(">i", v))
        return self

    def string(self, v: str | None) -> _Flexible:
        if v is None:
            self.parts.append(_uvarint(0))
        else:
            data = v.encode()
            self.parts.append(_uvarint(len(data) + 1) + data)
        return self

    def strings(self, vs: list[str]) -> _Flexible:
        self.parts.append(_uvarint(len(vs) + 1))
        for v in vs:
            self.string(v)
        return self

    def topic_partitions(self, tps: TopicIdPartitions) -> _Flexible:
        self.parts.append(_uvarint(len(tps) + 1))
        for topic_id, partitions in sorted(tps.items()):
            self.parts.append(topic_id.bytes)
            self.parts.append(_uvarint(len(partitions) + 1))
            self.parts.extend(struct.pack(">i", p) for p in sorted(partitions))
            self.parts.append(_uvarint(0))  # the struct's tagged fields
        return self

    def done(self) -> bytes:
        self.parts.append(_uvarint(0))  # the record's tagged fields
        return b"".join(self.parts)


def group_metadata_value(epoch: int) -> bytes:
    return _Flexible().int32(epoch).done()


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


def _classic_member_metadata(session_timeout_ms: int, protocols: list[tuple[str, bytes]]) -> bytes:
    parts = [struct.pack(">i", session_timeout_ms), _uvarint(len(protocols) + 1)]
    for name, metadata in protocols:
        data = name.encode()
        parts += [_uvarint(len(data) + 1), data, _uvarint(len(metadata) + 1), metadata]
        parts.append(_uvarint(0))  # the protocol's tagged fields
    parts.append(_uvarint(0))  # the struct's tagged fields
    return b"".join(parts)


def member_metadata_value(m: MemberMetadata) -> bytes:
    w = _Flexible().string(m.instance_id).string(m.rack_id).string(m.client_id)
    w.string(m.client_host).strings(m.subscribed_topic_names).string(m.subscribed_topic_regex)
    w.int32(m.rebalance_timeout_ms).string(m.server_assignor)
    # One tagged field, tag 0, then its size and the nullable struct (0: null, 1: present).
    # Kafka's default for it is an empty struct, so a consumer-protocol member writes null.
    if m.classic_session_timeout_ms is None or m.classic_protocols is None:
        data = _uvarint(0)
    else:
        data = _uvarint(1) + _classic_member_metadata(
            m.classic_session_timeout_ms, m.classic_protocols
        )
    w.parts += [_uvarint(1), _uvarint(0), _uvarint(len(data)), data]
    return b"".join(w.parts)


def target_assignment_metadata_value(assignment_epoch: int) -> bytes:
    return _Flexible().int32(assignment_epoch).done()


def target_assignment_member_value(tps: TopicIdPartitions) -> bytes:
    return _Flexible().topic_partitions(tps).done()


@dataclass
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicIdPartitions = field(default_factory=dict)
    pending_revocation: TopicIdPartitions = field(default_factory=dict)


def current_assignment_value(c: CurrentAssignment) -> bytes:
    w = _Flexible().int32(c.member_epoch).int32(c.previous_member_epoch).int8(c.state)
    return w.topic_partitions(c.assigned).topic_partitions(c.pending_revocation).done()


# -- decoding -------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _fixed(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def int8(self) -> int:
        return self._fixed(">b")

    def int16(self) -> int:
        return self._fixed(">h")

    def int32(self) -> int:
        return self._fixed(">i")

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7

    def plain_string(self) -> str:
        n = self.int16()
        v = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return v

    def string(self) -> str | None:
        n = self.uvarint()
        if n == 0:
            return None
        v = self.data[self.pos : self.pos + n - 1].decode()
        self.pos += n - 1
        return v

    def strings(self) -> list[str]:
        return [self.string() or "" for _ in range(self.uvarint() - 1)]

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.pos += self.uvarint()  # size, then the data skipped

    def topic_partitions(self) -> TopicIdPartitions:
        out: TopicIdPartitions = {}
        for _ in range(self.uvarint() - 1):
            topic_id = uuid.UUID(bytes=self.data[self.pos : self.pos + 16])
            self.pos += 16
            out[topic_id] = [self.int32() for _ in range(self.uvarint() - 1)]
            self.skip_tags()
        return out


@dataclass(frozen=True)
class Key:
    record_type: int
    group_id: str
    member_id: str | None


def read_key(data: bytes) -> Key:
    r = _Reader(data)
    record_type = r.int16()
    group_id = r.plain_string()
    member_id = r.plain_string() if record_type in (5, 7, 8) else None
    return Key(record_type, group_id, member_id)


def _value(data: bytes) -> _Reader:
    r = _Reader(data)
    r.int16()  # version 0
    return r


def read_epoch(data: bytes) -> int:
    """ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue."""
    return _value(data).int32()


def read_member_metadata(data: bytes) -> MemberMetadata:
    r = _value(data)
    out = MemberMetadata(
        instance_id=r.string(),
        rack_id=r.string(),
        client_id=r.string() or "",
        client_host=r.string() or "",
        subscribed_topic_names=r.strings(),
        subscribed_topic_regex=r.string(),
        rebalance_timeout_ms=r.int32(),
        server_assignor=r.string(),
    )
    if r.pos >= len(r.data):
        return out
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        end = r.pos + size
        if tag == 0 and size > 0 and r.uvarint() == 1:  # ClassicMemberMetadata, not null
            out.classic_session_timeout_ms = r.int32()
            protocols = []
            for _ in range(r.uvarint() - 1):
                name = r.string() or ""
                n = r.uvarint() - 1
                protocols.append((name, r.data[r.pos : r.pos + n]))
                r.pos += n
                r.skip_tags()
            out.classic_protocols = protocols
        r.pos = end
    return out


def read_target_assignment_member(data: bytes) -> TopicIdPartitions:
    return _value(data).topic_partitions()


def read_current_assignment(data: bytes) -> CurrentAssignment:
    r = _value(data)
    return CurrentAssignment(
        member_epoch=r.int32(),
        previous_member_epoch=r.int32(),
        state=r.int8(),
        assigned=r.topic_partitions(),
        pending_revocation=r.topic_partitions(),
    )
