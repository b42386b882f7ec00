"""GroupMetadata and MemberMetadata: one classic group's members, generation and state.

States and the transitions Kafka allows (seed 003):

    Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
    CompletingRebalance ──leader's SyncGroup──▶ Stable
    CompletingRebalance ──join / leave / member expiry──▶ PreparingRebalance (generation bumps)
    Stable ──new member / leader rejoin / changed protocols / leave / expiry──▶ PreparingRebalance
    PreparingRebalance ──every member gone──▶ Empty
    any ──group deleted / offsets expired──▶ Dead
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kafkars.coordinator.clock import SYSTEM_TIME, Time


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

ResponseCallback = Callable[[dict[str, Any]], None]


@dataclass
class OffsetAndMetadata:
    """A committed offset as `__consumer_offsets` stores it."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int | None = None  # only from v1 commits with a retention time


@dataclass
class MemberMetadata:
    """One member of a classic group."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: ResponseCallback | None = None
    awaiting_sync: ResponseCallback | None = None
    is_new: bool = False
    # Monotonic time of the last sign of life; the session timeout counts from here.
    last_heartbeat: float = field(default_factory=SYSTEM_TIME.monotonic)

    def protocols_match(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.supported_protocols == protocols

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name, _ in self.supported_protocols if name in candidates)


class GroupMetadata:
    """A group's state. Every read and change happens under `lock`."""

    def __init__(
        self, group_id: str, state: GroupState = GroupState.EMPTY, time: Time = SYSTEM_TIME
    ) -> None:
        self.group_id = group_id
        self.time = time
        self.state = state
        self.lock = threading.RLock()
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        # Insertion order matters: when the leader leaves, the next oldest member leads.
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, float] = {}  # member id -> monotonic deadline
        self.new_member_added = False
        self.current_state_timestamp: int | None = time.milliseconds()
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        # Commits written, in log order, and the last one applied per partition: commits
        # complete in any order, the log's last one is the committed offset (Kafka keeps
        # the append offset with each commit for the same reason).
        self.commits_written = 0
        self.commit_applied: dict[tuple[str, int], int] = {}
        # The pending rebalance operation (DelayedJoin / InitialDelayedJoin), if any.
        self.join_op: Any = None

    # -- state ------------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def transition_to(self, target: GroupState) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise IllegalStateError(
                f"Group {self.group_id} should be in one of "
                f"{sorted(s.value for s in _VALID_PREVIOUS[target])} before moving to "
                f"{target.value}, but is {self.state.value}"
            )
        self.state = target
        self.current_state_timestamp = self.time.milliseconds()

    # -- members ----------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata, callback: ResponseCallback | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id  # the first joiner leads
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        member.awaiting_join = callback
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """Gives a static member's slot (and assignment) to its new incarnation."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count() and not self.pending_members

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [{name for name, _ in m.supported_protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.is_(GroupState.EMPTY) or not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Ties go to the protocol that reached the count first (the oldest members' choice).
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY)
        self.new_member_added = False

    def current_member_metadata(self) -> list[dict[str, Any]]:
        """What the leader receives in its JoinGroup response."""
        assert self.protocol_name is not None
        return [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata(self.protocol_name),
            }
            for m in self.members.values()
        ]

    def clear_assignments(self) -> None:
        for m in self.members.values():
            m.assignment = b""

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None if unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        from kafkars.assignors import decode_subscription

        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(decode_subscription(m.metadata(self.protocol_name)).topics)
        except Exception:
            return None
        return topics

    def __repr__(self) -> str:
        return (
            f"GroupMetadata(group_id={self.group_id!r}, generation={self.generation_id}, "
            f"state={self.state.value}, members={list(self.members)})"
        )


class IllegalStateError(RuntimeError):
    """A transition the state machine forbids (a coordinator bug if ever raised)."""
