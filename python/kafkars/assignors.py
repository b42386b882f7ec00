"""The classic consumer partition assignors as pure functions, and the consumer
protocol's subscription and assignment formats.

Each assignor maps `subscriptions` (member id -> subscribed topics) and
`partitions_per_topic` (topic -> partition count) to member id -> sorted list of
(topic, partition). Members are ordered by id, as Kafka's assignors order them, so a
result depends only on its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkars import _core

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]


# -- range / roundrobin -------------------------------------------------------------------
def range_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions_per_topic: Mapping[str, int]
) -> Assignment:
    """Per topic: its subscribers in id order take consecutive ranges, the first
    `partitions % subscribers` one partition more than the rest (Kafka's RangeAssignor)."""
    out: Assignment = {m: [] for m in subscriptions}
    for topic in sorted(partitions_per_topic):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        count = partitions_per_topic[topic]
        per_member, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            n = per_member + (1 if i < extra else 0)
            out[member].extend((topic, p) for p in range(start, start + n))
            start += n
    return {m: sorted(tps) for m, tps in out.items()}


def roundrobin_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions_per_topic: Mapping[str, int]
) -> Assignment:
    """All partitions in (topic, partition) order dealt one by one to the members in a
    circle, skipping members not subscribed to the partition's topic."""
    members = sorted(subscriptions)
    out: Assignment = {m: [] for m in members}
    if not members:
        return out
    cursor = 0
    for topic in sorted(partitions_per_topic):
        if not any(topic in subscriptions[m] for m in members):
            continue
        for p in range(partitions_per_topic[topic]):
            while topic not in subscriptions[members[cursor % len(members)]]:
                cursor += 1
            out[members[cursor % len(members)]].append((topic, p))
            cursor += 1
    return out


# -- sticky / cooperative-sticky ----------------------------------------------------------
def sticky_assign(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
) -> Assignment:
    """As balanced as possible (member counts differ by at most one when subscriptions
    are equal), and otherwise keeping each member's `owned` partitions."""
    members = sorted(subscriptions)
    out: Assignment = {m: [] for m in members}
    if not members:
        return out
    all_partitions = [
        (t, p)
        for t in sorted(partitions_per_topic)
        if any(t in subscriptions[m] for m in members)
        for p in range(partitions_per_topic[t])
    ]
    floor, remainder = divmod(len(all_partitions), len(members))
    taken: set[TopicPartition] = set()
    owned = owned or {}
    valid_owned = {
        m: [
            tp
            for tp in sorted(owned.get(m, ()))
            if tp[0] in subscriptions[m] and tp[1] < partitions_per_topic.get(tp[0], 0)
        ]
        for m in members
    }
    # Keep up to the floor first, then let the owners with most history keep one more
    # while slots above the floor remain.
    for m in members:
        for tp in valid_owned[m]:
            if len(out[m]) >= floor:
                break
            if tp not in taken:
                out[m].append(tp)
                taken.add(tp)
    for m in sorted(members, key=lambda m: -len(valid_owned[m])):
        if remainder == 0:
            break
        for tp in valid_owned[m]:
            if tp not in taken:
                out[m].append(tp)
                taken.add(tp)
                remainder -= 1
                break
    for tp in all_partitions:
        if tp in taken:
            continue
        candidates = [m for m in members if tp[0] in subscriptions[m]]
        target = min(candidates, key=lambda m: (len(out[m]), m))
        out[target].append(tp)
        taken.add(tp)
    return {m: sorted(tps) for m, tps in out.items()}


def cooperative_sticky_assign(
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
) -> Assignment:
    """The sticky assignment, minus partitions that would change owner: their current
    owner revokes them first and they are handed out in the follow-up rebalance
    (KIP-429), so no partition is ever owned by two members at once."""
    target = sticky_assign(subscriptions, partitions_per_topic, owned)
    owner = {tp: m for m, tps in (owned or {}).items() for tp in tps}
    return {
        m: [tp for tp in tps if owner.get(tp, m) == m or owner.get(tp) not in subscriptions]
        for m, tps in target.items()
    }


ASSIGNORS = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}


# -- the consumer protocol's wire formats -------------------------------------------------
@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None


def _partitions(entries: list[dict[str, Any]]) -> list[TopicPartition]:
    return [(e["topic"], p) for e in entries for p in e["partitions"]]


def decode_subscription(data: bytes) -> Subscription:
    """ConsumerProtocolSubscription (what a JoinGroup's protocol metadata holds), read by
    the broker's codec; versions newer than it knows are read as the newest it knows."""
    _, sub = _core.protocol.decode_subscription(data)
    return Subscription(
        list(sub["topics"]),
        sub["user_data"],
        _partitions(sub["owned_partitions"]),
        sub["generation_id"],
        sub["rack_id"],
    )


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """The partitions of a ConsumerProtocolAssignment (empty for an empty buffer)."""
    if len(data) < 2:
        return []
    _, assignment = _core.protocol.decode_assignment(data)
    return _partitions(assignment["assigned_partitions"])


def encode_assignment(partitions: Sequence[TopicPartition], version: int = 0) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        by_topic.setdefault(t, []).append(p)
    assigned = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
    return _core.protocol.encode_assignment(
        version, {"assigned_partitions": assigned, "user_data": None}
    )
