"""KIP-848's consumer group protocol: ConsumerGroupHeartbeat with server-side assignment.

Each heartbeat carries the member's epoch, its subscription and, when they changed, the
partitions it owns. The coordinator keeps a group epoch (bumped when members,
subscriptions or the subscribed topics' partitions change), a target assignment
computed at that epoch by a server-side assignor, and for each member the assignment it
has been told to own. Reconciliation follows KIP-848's rules:

- a member first loses what its target no longer holds, keeping its epoch, and the
  partitions stay its own until a heartbeat reports them released;
- a partition goes to its new owner only once no other member holds it;
- once nothing is left to revoke the member moves to the target's epoch, and gets the
  missing partitions as they are released.

Offsets stay with the classic coordinator's group of the same id (as a group without
classic members), so they persist in `__consumer_offsets` the same way.

Online migration (`group.consumer.migration.policy`, as Apache Kafka 4): a consumer-protocol
member joining a classic group of consumer-protocol ("consumer" type) members turns it into
a consumer group whose classic members keep using JoinGroup, SyncGroup and Heartbeat; their
rebalances follow the group's epochs (a classic member's generation is its member epoch,
and Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin to reconcile). When the last
consumer-protocol member leaves a group of classic members, it becomes a classic group again
and rebalances.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kafkars.assignors import decode_assignment, decode_subscription, encode_assignment
from kafkars.coordinator.clock import SYSTEM_TIME, Time
from kafkars.coordinator.group import consumer_group_records as records
from kafkars.coordinator.group.classic_responses import join_error, sync_error
from kafkars.coordinator.group.delayed import DelayedTimeout
from kafkars.coordinator.group.server_assignors import TopicPartition, range_assign, uniform_assign
from kafkars.protocol import Errors

if TYPE_CHECKING:
    from kafkars.coordinator.group.group_coordinator import GroupCoordinator

log = logging.getLogger("kafkars.coordinator.group.GroupCoordinator")

Record = tuple[bytes, bytes | None]
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
ASSIGNORS = ("uniform", "range")
CONSUMER_PROTOCOL_TYPE = "consumer"
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class TopicMetadataView(Protocol):
    """What the coordinator needs of the broker's topics."""

    def partition_count(self, topic: str) -> int | None: ...
    def topic_id(self, topic: str) -> uuid.UUID | None: ...
    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...
    def topic_names(self) -> list[str]: ...


@dataclass
class ConsumerGroupConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ASSIGNORS
    # group.consumer.migration.policy, and group.max.size (the most a classic group holds).
    migration_policy: str = "bidirectional"
    classic_max_size: int = 2**31 - 1

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")

    @classmethod
    def from_broker(cls, config: Any) -> ConsumerGroupConfig:
        # Kafka names the assignors by class; the short name is the class's name().
        names = [
            a.rsplit(".", 1)[-1].removesuffix("Assignor").lower()
            for a in config.get("group.consumer.assignors")
        ]
        return cls(
            session_timeout_ms=int(config.get("group.consumer.session.timeout.ms")),
            heartbeat_interval_ms=int(config.get("group.consumer.heartbeat.interval.ms")),
            max_size=int(config.get("group.consumer.max.size")),
            assignors=tuple(n for n in names if n in ASSIGNORS) or ASSIGNORS,
            migration_policy=str(config.get("group.consumer.migration.policy")).lower(),
            classic_max_size=int(config.get("group.max.size")),
        )


@dataclass
class ClassicMembership:
    """What a member using the classic protocol (JoinGroup) inside a consumer group keeps:
    its session timeout and the protocols (assignor name, subscription) it joined with."""

    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0]

    @property
    def version(self) -> int:
        """The consumer protocol version of its subscription: its assignment's version."""
        data = self.protocols[0][1]
        return int.from_bytes(data[:2], "big", signed=True) if len(data) >= 2 else 0


@dataclass
class ClassicMemberSnapshot:
    """A classic member as it moves between a classic and a consumer group."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    # Its subscription (the metadata of the group's protocol) and its assignment.
    subscription: bytes
    assignment: bytes


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topics: list[str] = field(default_factory=list)
    subscribed_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300_000
    member_epoch: int = 0
    previous_epoch: int = -1
    # What the member has been told to own, and what it must still give up.
    assigned: set[TopicPartition] = field(default_factory=set)
    revoking: set[TopicPartition] = field(default_factory=set)
    last_sent: frozenset[TopicPartition] | None = None
    # The epoch a static member had when it left with epoch -2 (its successor's epoch).
    left_epoch: int = 0
    last_heartbeat: float = field(default_factory=SYSTEM_TIME.monotonic)
    # Set for a member that uses the classic protocol (JoinGroup/SyncGroup/Heartbeat).
    classic: ClassicMembership | None = None
    # A classic member told to rejoin, or that joined and must sync: what it owes, and the
    # deadline's token (its rebalance timeout, then it is removed, as in Kafka).
    classic_pending: str | None = None
    classic_pending_token: int = 0

    def subscribes(self, topic: str) -> bool:
        if topic in self.subscribed_topics:
            return True
        return self.subscribed_regex is not None and _fullmatch(self.subscribed_regex, topic)


def _static_member_refusal(
    static: ConsumerMember | None, instance_id: str, member_id: str
) -> tuple[Errors, str] | None:
    """Why a static member's heartbeat is refused, if it is (Kafka's
    throwIfStaticMemberIsUnknown and throwIfInstanceIdIsFenced)."""
    if static is None:
        return Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
    if static.member_id != member_id:
        return (
            Errors.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{static.member_id}.",
        )
    return None


def _fullmatch(pattern: str, topic: str) -> bool:
    try:
        return re.fullmatch(pattern, topic) is not None
    except re.error:
        return False


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, set[TopicPartition]] = field(default_factory=dict)
    # Partition counts of the subscribed topics when the target was computed.
    subscribed_partitions: dict[str, int] = field(default_factory=dict)
    assignor: str = "uniform"
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The records last written for this group, key -> value: only changes are appended.
    persisted: dict[bytes, bytes] = field(default_factory=dict)

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        if any(
            m.member_epoch not in (self.assignment_epoch, LEAVE_GROUP_STATIC_MEMBER_EPOCH)
            or m.revoking
            for m in self.members.values()
        ):
            return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def held_by_others(self, member_id: str) -> set[TopicPartition]:
        out: set[TopicPartition] = set()
        for m in self.members.values():
            if m.member_id != member_id:
                out |= m.assigned | m.revoking
        return out


class ConsumerGroupCoordinator:
    """ConsumerGroupHeartbeat and ConsumerGroupDescribe, and the checks OffsetCommit makes
    for consumer-protocol members. `schedule(op)` runs a session deadline on the broker's
    timer (the Rust purgatory, or `time.purgatory(...)` of a MockTime in tests)."""

    def __init__(
        self,
        config: ConsumerGroupConfig,
        topics: TopicMetadataView,
        schedule: Callable[[DelayedTimeout], object],
        classic_group_in_use: Callable[[str], bool] = lambda _g: False,
        store: Callable[[str, list[Record], Callable[[Errors], None]], object] | None = None,
        time: Time = SYSTEM_TIME,
    ) -> None:
        self.config = config
        self.time = time  # session deadlines compare heartbeats on this clock
        # Appends records to the group's `__consumer_offsets` partition (None: unit tests).
        self.store = store
        self.topics = topics
        self.schedule = schedule
        self.classic_group_in_use = classic_group_in_use
        self._groups: dict[str, ConsumerGroup] = {}
        self._lock = threading.Lock()
        self._active = True
        # The classic coordinator, for online upgrades and downgrades (None: neither).
        self.classic: GroupCoordinator | None = None

    def shutdown(self) -> None:
        self._active = False

    def get(self, group_id: str) -> ConsumerGroup | None:
        with self._lock:
            return self._groups.get(group_id)

    def delete_if_empty(self, group_id: str) -> bool:
        """DeleteGroups: False while the group has members."""
        group = self.get(group_id)
        if group is None:
            return True
        with group.lock:
            if group.members:
                return False
            self._forget_group(group)
            return True

    def _forget_group(self, group: ConsumerGroup) -> None:
        """Drops the group and tombstones its records (under the group's lock)."""
        with self._lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]
        self._write(group, [(k, None) for k in list(group.persisted)])

    def _current(self, group_id: str, create: bool = False) -> ConsumerGroup | None:
        """The group, locked; None (not locked) when there is none. A group replaced or
        dropped while waiting for its lock (a migration) is looked up again."""
        while True:
            with self._lock:
                group = self._groups.get(group_id)
                if group is None:
                    if not create:
                        return None
                    group = self._groups[group_id] = ConsumerGroup(group_id)
            group.lock.acquire()
            with self._lock:
                if self._groups.get(group_id) is group:
                    return group
            group.lock.release()

    def in_use(self, group_id: str) -> bool:
        """A consumer group with members: classic requests for it are answered here."""
        group = self.get(group_id)
        return group is not None and bool(group.members)

    def group_ids(self) -> list[str]:
        with self._lock:
            return list(self._groups)

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------
    def heartbeat(self, req: dict[str, Any], client_id: str, client_host: str) -> dict[str, Any]:
        group_id = req.get("group_id") or ""
        member_id = req.get("member_id") or ""
        epoch = int(req.get("member_epoch", 0))
        if not group_id:
            return self._error(Errors.INVALID_REQUEST, "GroupId can't be empty.", member_id)
        invalid = self._invalid(req)
        if invalid is not None:
            return self._error(Errors.INVALID_REQUEST, invalid, member_id)
        assignor = req.get("server_assignor")
        if assignor is not None and assignor not in self.config.assignors:
            return self._error(
                Errors.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {assignor} is not supported. Supported assignors: "
                f"{', '.join(self.config.assignors)}.",
                member_id,
            )
        if self.classic_group_in_use(group_id) and (epoch != 0 or not self._upgrade(group_id)):
            return self._error(
                Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.", member_id
            )
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group_id, member_id, req.get("instance_id"), epoch)

        group = self._current(group_id, create=epoch == 0)
        if group is None:
            return self._error(
                Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.", member_id
            )
        scheduled: list[DelayedTimeout] = []
        try:
            epoch_before = group.group_epoch
            member = group.members.get(member_id)
            instance_id = req.get("instance_id")
            if len(group.members) >= self.config.max_size and member is None:
                return self._error(
                    Errors.GROUP_MAX_SIZE_REACHED,
                    "The consumer group has reached its maximum capacity of "
                    f"{self.config.max_size} members.",
                    member_id,
                )
            if not member_id:
                member_id = str(uuid.uuid4())
            if instance_id is not None:
                static = group.static_member(instance_id)
                if epoch != 0:
                    refused = _static_member_refusal(static, instance_id, member_id)
                    if refused is not None:
                        return self._error(*refused, member_id)
                elif member is None and static is not None:
                    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        return self._error(
                            Errors.UNRELEASED_INSTANCE_ID,
                            f"Static member {member_id} with instance id {instance_id} cannot "
                            "join the group because the instance id is owned by "
                            f"{static.member_id} member.",
                            member_id,
                        )
                    member = self._replace_static(group, static, member_id)
                    epoch = member.member_epoch
            if epoch == 0:
                if member is None:
                    member = self._join(group, member_id)
                else:
                    # The member lost its state (a restart): it starts over.
                    log.info("Member %s rejoined consumer group %s", member.member_id, group_id)
                    member.assigned, member.revoking, member.member_epoch = set(), set(), 0
                    member.last_sent = None
            else:
                if member is None:
                    return self._error(
                        Errors.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of group {group_id}.",
                        member_id,
                    )
                fenced = self._fenced_epoch(member, epoch, req.get("topic_partitions"))
                if fenced is not None:
                    return self._error(Errors.FENCED_MEMBER_EPOCH, fenced, member_id)
            member.client_id, member.client_host = client_id, client_host
            full = epoch == 0 or req.get("topic_partitions") is not None
            self._update_subscription(group, member, req)
            owned = self._owned(req.get("topic_partitions"))
            self._maybe_refresh_target(group, epoch_before)
            revoking_before = bool(member.revoking)
            self._reconcile(group, member, owned)
            if member.revoking and not revoking_before:
                scheduled.append(self._revocation_deadline(group, member))
            member.last_heartbeat = self.time.monotonic()
            scheduled.append(self._session_deadline(group, member))
            self._persist(group, member, target_changed=group.assignment_epoch > epoch_before)
            current = frozenset(member.assigned)
            send = full or current != member.last_sent
            member.last_sent = current
            response = self._response(
                member.member_id, member.member_epoch, current if send else None
            )
        finally:
            group.lock.release()
        for op in scheduled:
            self.schedule(op)
        return response

    def _fenced_epoch(
        self, member: ConsumerMember, epoch: int, owned: list[dict[str, Any]] | None
    ) -> str | None:
        """Why a heartbeat's epoch is fenced: ahead of the member's, or behind it other than
        its previous epoch with partitions it still has (a lost response)."""
        if epoch == member.member_epoch:
            return None
        if epoch < member.member_epoch:
            owned_set = self._owned(owned)
            if (
                epoch == member.previous_epoch
                and owned_set is not None
                and owned_set <= member.assigned
            ):
                return None
        word = "greater" if epoch > member.member_epoch else "smaller"
        return (
            f"The consumer group member has a {word} member epoch ({epoch}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )

    @staticmethod
    def _invalid(req: dict[str, Any]) -> str | None:
        """Why a ConsumerGroupHeartbeat is malformed (INVALID_REQUEST), as Kafka words it."""
        epoch = int(req.get("member_epoch", 0))
        for key, name in (("instance_id", "InstanceId"), ("rack_id", "RackId")):
            value = req.get(key)
            if value is not None and not value.strip():
                return f"{name} can't be empty."
        member_id = req.get("member_id") or ""
        if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not member_id.strip():
                return "MemberId can't be empty."
        elif epoch == 0:
            if req.get("rebalance_timeout_ms", -1) == -1:
                return "RebalanceTimeoutMs must be provided in first request."
            if req.get("topic_partitions") is None or req["topic_partitions"]:
                return "TopicPartitions must be empty when (re-)joining."
            names, regex = req.get("subscribed_topic_names"), req.get("subscribed_topic_regex")
            if names is None and regex is None:
                return (
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                    "(re-)joining."
                )
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not member_id.strip():
                return "MemberId can't be empty."
            if req.get("instance_id") is None:
                return "InstanceId can't be null."
        else:
            return "MemberEpoch is invalid."
        return None

    def _leave(
        self, group_id: str, member_id: str, instance_id: str | None, epoch: int
    ) -> dict[str, Any]:
        """A heartbeat with epoch -1 (leaving) or -2 (a static member leaving for a while)."""
        group = self._current(group_id)
        if group is None:
            return self._error(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", member_id)
        try:
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    return self._error(
                        Errors.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of group {group_id}.",
                        member_id,
                    )
            else:
                member = group.static_member(instance_id)
                refused = _static_member_refusal(member, instance_id, member_id)
                if refused is not None:
                    return self._error(*refused, member_id)
                assert member is not None
                if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    # A static member going away for a while (a restart): it keeps its
                    # partitions, and no rebalance, until its session times out or a
                    # member with the same group.instance.id takes its place.
                    log.info("Static member %s of %s left temporarily", member_id, group_id)
                    if member.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        member.left_epoch = member.member_epoch
                    member.member_epoch = epoch
                    member.revoking = set()
                    return self._left(member_id, epoch)
            log.info("Member %s left consumer group %s", member_id, group_id)
            self._fence(group, member)
            return self._left(member_id, epoch)
        finally:
            group.lock.release()

    def _left(self, member_id: str, epoch: int) -> dict[str, Any]:
        """The answer to a leave: the leave epoch, and no heartbeat interval (Kafka's)."""
        response = self._response(member_id, epoch, None)
        response["heartbeat_interval_ms"] = 0
        return response

    def _join(self, group: ConsumerGroup, member_id: str) -> ConsumerMember:
        member = ConsumerMember(member_id=member_id, last_heartbeat=self.time.monotonic())
        group.members[member_id] = member
        log.info("Member %s joined consumer group %s", member_id, group.group_id)
        self._bump(group)
        return member

    def _replace_static(
        self, group: ConsumerGroup, previous: ConsumerMember, member_id: str
    ) -> ConsumerMember:
        """The new incarnation of a static member inherits its partitions, target and
        epoch, so the group does not rebalance (KIP-848's static membership)."""
        del group.members[previous.member_id]
        self._forget_member(group, previous.member_id)
        member = ConsumerMember(
            member_id=member_id,
            last_heartbeat=self.time.monotonic(),
            instance_id=previous.instance_id,
            subscribed_topics=previous.subscribed_topics,
            subscribed_regex=previous.subscribed_regex,
            server_assignor=previous.server_assignor,
            rebalance_timeout_ms=previous.rebalance_timeout_ms,
            member_epoch=previous.left_epoch,
            previous_epoch=previous.left_epoch,
            assigned=previous.assigned,
            revoking=previous.revoking,
        )
        group.members[member_id] = member
        if previous.member_id in group.target:
            group.target[member_id] = group.target.pop(previous.member_id)
        log.info(
            "Static member %s of %s replaced %s", member_id, group.group_id, previous.member_id
        )
        return member

    def _update_subscription(
        self, group: ConsumerGroup, member: ConsumerMember, req: dict[str, Any]
    ) -> None:
        changed = False
        names = req.get("subscribed_topic_names")
        if names is not None and sorted(names) != sorted(member.subscribed_topics):
            member.subscribed_topics = list(names)
            changed = True
        regex = req.get("subscribed_topic_regex")
        if regex is not None and (regex or None) != member.subscribed_regex:
            member.subscribed_regex = regex or None
            changed = True
        if req.get("server_assignor") is not None:
            member.server_assignor = req["server_assignor"]
            group.assignor = member.server_assignor or group.assignor
        for key, attr in (("instance_id", "instance_id"), ("rack_id", "rack_id")):
            if req.get(key) is not None:
                setattr(member, attr, req[key])
        if req.get("rebalance_timeout_ms", -1) >= 0:
            member.rebalance_timeout_ms = req["rebalance_timeout_ms"]
        if changed:
            self._bump(group)

    def _owned(self, topic_partitions: list[dict[str, Any]] | None) -> set[TopicPartition] | None:
        if topic_partitions is None:
            return None
        out: set[TopicPartition] = set()
        for tp in topic_partitions:
            name = self.topics.topic_name(_uuid(tp["topic_id"]))
            if name is not None:
                out.update((name, p) for p in tp["partitions"])
        return out

    def _bump(self, group: ConsumerGroup) -> None:
        group.group_epoch += 1

    def _subscribed_partitions(self, group: ConsumerGroup) -> dict[str, int]:
        topics: set[str] = set()
        all_names = self.topics.topic_names()
        for m in group.members.values():
            topics.update(t for t in m.subscribed_topics)
            if m.subscribed_regex is not None:
                topics.update(t for t in all_names if _fullmatch(m.subscribed_regex, t))
        out = {}
        for t in sorted(topics):
            n = self.topics.partition_count(t)
            if n:
                out[t] = n
        return out

    def _maybe_refresh_target(self, group: ConsumerGroup, epoch_before: int | None = None) -> None:
        partitions = self._subscribed_partitions(group)
        if partitions != group.subscribed_partitions:
            group.subscribed_partitions = partitions
            self._bump(group)
        if epoch_before is not None and group.group_epoch > epoch_before + 1:
            # A join that also brings a subscription and new topics is one change: one
            # epoch (a group's first member gets epoch 1, as in Kafka).
            group.group_epoch = epoch_before + 1
        if group.assignment_epoch == group.group_epoch:
            return
        subscriptions = {
            mid: {t for t in partitions if m.subscribes(t)} for mid, m in group.members.items()
        }
        assign = range_assign if group.assignor == "range" else uniform_assign
        group.target = assign(subscriptions, partitions, group.target)
        group.assignment_epoch = group.group_epoch
        log.info(
            "Computed target assignment of consumer group %s at epoch %d (%s, %d members)",
            group.group_id,
            group.group_epoch,
            group.assignor,
            len(group.members),
        )

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerMember, owned: set[TopicPartition] | None
    ) -> None:
        target = group.target.get(member.member_id, set())
        to_revoke = member.assigned - target
        if to_revoke:
            # Told to drop them now; they stay this member's until it reports them gone.
            member.revoking |= to_revoke
            member.assigned &= target
        elif member.revoking and owned is not None and owned.isdisjoint(member.revoking):
            member.revoking = set()
        if member.revoking:
            return
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
        member.assigned |= (target - member.assigned) - group.held_by_others(member.member_id)

    def _session_deadline(self, group: ConsumerGroup, member: ConsumerMember) -> DelayedTimeout:
        timeout_ms = (
            member.classic.session_timeout_ms
            if member.classic is not None
            else self.config.session_timeout_ms
        )

        def expire() -> None:
            if not self._active:
                return
            with group.lock:
                if group.members.get(member.member_id) is not member:
                    return
                idle_ms = (self.time.monotonic() - member.last_heartbeat) * 1000
                if idle_ms < timeout_ms:
                    return  # a later heartbeat scheduled its own deadline
                log.info(
                    "Member %s in consumer group %s has failed (no heartbeat for %d ms)",
                    member.member_id,
                    group.group_id,
                    idle_ms,
                )
                self._fence(group, member)

        return DelayedTimeout(timeout_ms, expire)

    def _revocation_deadline(self, group: ConsumerGroup, member: ConsumerMember) -> DelayedTimeout:
        """A member must give up what it is told to revoke within its rebalance timeout,
        or it is removed (its next heartbeat gets UNKNOWN_MEMBER_ID and it rejoins)."""
        epoch = member.member_epoch

        def expire() -> None:
            if not self._active:
                return
            with group.lock:
                if group.members.get(member.member_id) is not member:
                    return
                if not member.revoking or member.member_epoch != epoch:
                    return
                log.info(
                    "Member %s of consumer group %s did not revoke %s within %d ms; removed",
                    member.member_id,
                    group.group_id,
                    sorted(member.revoking),
                    member.rebalance_timeout_ms,
                )
                self._fence(group, member)

        return DelayedTimeout(member.rebalance_timeout_ms, expire)

    def _remove(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        self._bump(group)
        self._forget_member(group, member.member_id)
        self._write(
            group, [(records.key(records.GROUP_METADATA, group.group_id), self._group_value(group))]
        )

    # -- persistence --------------------------------------------------------------------------
    def _write(self, group: ConsumerGroup, batch: list[Record]) -> None:
        """Appends the records whose value changed since last written. They count as
        written at once; if the write fails they are forgotten again, so the next
        heartbeat's records write them again."""
        changed = [(k, v) for k, v in batch if group.persisted.get(k) != v]
        if not changed or self.store is None:
            return
        for k, v in changed:
            if v is None:
                group.persisted.pop(k, None)
            else:
                group.persisted[k] = v

        def done(error: Errors) -> None:
            # May run on this thread under the caller's locks, or on another: plain
            # dict updates only.
            if error is Errors.NONE:
                return
            log.warning(
                "Writing consumer group %s to the offsets topic failed: %s",
                group.group_id,
                error.name,
            )
            for k, v in changed:
                if group.persisted.get(k) == v:
                    group.persisted.pop(k, None)

        self.store(group.group_id, changed, done)

    def _forget_member(self, group: ConsumerGroup, member_id: str) -> None:
        gid = group.group_id
        self._write(
            group,
            [
                (records.key(t, gid, member_id), None)
                for t in (
                    records.CURRENT_MEMBER_ASSIGNMENT,
                    records.TARGET_ASSIGNMENT_MEMBER,
                    records.MEMBER_METADATA,
                )
                if records.key(t, gid, member_id) in group.persisted
            ],
        )

    def _group_value(self, group: ConsumerGroup) -> bytes:
        return records.group_metadata_value(group.group_epoch)

    def _ids(self, partitions: Iterable[TopicPartition]) -> records.TopicIdPartitions:
        out: records.TopicIdPartitions = {}
        for t, p in partitions:
            topic_id = self.topics.topic_id(t)
            if topic_id is not None:
                out.setdefault(topic_id, []).append(p)
        return out

    def _persist(
        self, group: ConsumerGroup, member: ConsumerMember, *, target_changed: bool
    ) -> None:
        """Kafka's records for what this heartbeat changed: the group epoch, the member's
        subscription and current assignment, and the target assignment when recomputed."""
        gid, mid = group.group_id, member.member_id
        batch: list[Record] = [
            (records.key(records.GROUP_METADATA, gid), self._group_value(group)),
            (
                records.key(records.MEMBER_METADATA, gid, mid),
                records.member_metadata_value(
                    records.MemberMetadata(
                        instance_id=member.instance_id,
                        rack_id=member.rack_id,
                        client_id=member.client_id,
                        client_host=member.client_host,
                        subscribed_topic_names=sorted(member.subscribed_topics),
                        subscribed_topic_regex=member.subscribed_regex,
                        rebalance_timeout_ms=member.rebalance_timeout_ms,
                        server_assignor=member.server_assignor,
                        classic_session_timeout_ms=(
                            member.classic.session_timeout_ms if member.classic else None
                        ),
                        classic_protocols=member.classic.protocols if member.classic else None,
                    )
                ),
            ),
        ]
        if (
            target_changed
            or records.key(records.TARGET_ASSIGNMENT_MEMBER, gid, mid) not in group.persisted
        ):
            for m in group.members:
                batch.append(
                    (
                        records.key(records.TARGET_ASSIGNMENT_MEMBER, gid, m),
                        records.target_assignment_member_value(self._ids(group.target.get(m, ()))),
                    )
                )
            batch.append(
                (
                    records.key(records.TARGET_ASSIGNMENT_METADATA, gid),
                    records.target_assignment_metadata_value(group.assignment_epoch),
                )
            )
        if member.revoking:
            state = records.STATE_UNREVOKED
        elif group.target.get(mid, set()) - member.assigned:
            state = records.STATE_UNRELEASED
        else:
            state = records.STATE_STABLE
        current = records.CurrentAssignment(
            member_epoch=member.member_epoch,
            previous_member_epoch=member.previous_epoch,
            state=state,
            assigned=self._ids(member.assigned),
            pending_revocation=self._ids(member.revoking),
        )
        batch.append(
            (
                records.key(records.CURRENT_MEMBER_ASSIGNMENT, gid, mid),
                records.current_assignment_value(current),
            )
        )
        self._write(group, batch)

    def load(self, stored: dict[bytes, bytes]) -> int:
        """Rebuilds the groups from their records (the last value of each key); members
        get one session timeout to heartbeat again. Returns the number of groups."""
        by_group: dict[str, list[tuple[records.Key, bytes, bytes]]] = {}
        for k, v in stored.items():
            try:
                parsed = records.read_key(k)
            except (ValueError, IndexError, UnicodeDecodeError):
                continue
            by_group.setdefault(parsed.group_id, []).append((parsed, k, v))
        scheduled = []
        for gid, entries in by_group.items():
            group = ConsumerGroup(gid)
            try:
                for parsed, _k, v in entries:
                    self._load_record(group, parsed, v)
            except (ValueError, IndexError, UnicodeDecodeError) as e:
                log.warning("Skipping unreadable consumer group %s: %s", gid, e)
                continue
            group.persisted = {k: v for _, k, v in entries}
            group.target = {m: t for m, t in group.target.items() if m in group.members}
            group.subscribed_partitions = self._subscribed_partitions(group)
            self._groups[gid] = group
            for member in group.members.values():
                scheduled.append(self._session_deadline(group, member))
        for op in scheduled:
            self.schedule(op)
        if by_group:
            log.info("Loaded %d consumer group(s)", len(self._groups))
        return len(self._groups)

    def _names(self, tps: records.TopicIdPartitions) -> set[TopicPartition]:
        out: set[TopicPartition] = set()
        for topic_id, partitions in tps.items():
            name = self.topics.topic_name(topic_id)
            if name is not None:
                out.update((name, p) for p in partitions)
        return out

    def _load_record(self, group: ConsumerGroup, key: records.Key, value: bytes) -> None:
        def member() -> ConsumerMember:
            mid = key.member_id or ""
            return group.members.setdefault(
                mid, ConsumerMember(member_id=mid, last_heartbeat=self.time.monotonic())
            )

        if key.record_type == records.GROUP_METADATA:
            group.group_epoch = records.read_epoch(value)
        elif key.record_type == records.TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = records.read_epoch(value)
        elif key.record_type == records.TARGET_ASSIGNMENT_MEMBER:
            group.target[key.member_id or ""] = self._names(
                records.read_target_assignment_member(value)
            )
        elif key.record_type == records.MEMBER_METADATA:
            meta = records.read_member_metadata(value)
            m = member()
            m.instance_id, m.rack_id = meta.instance_id, meta.rack_id
            m.client_id, m.client_host = meta.client_id, meta.client_host
            m.subscribed_topics = meta.subscribed_topic_names
            m.subscribed_regex = meta.subscribed_topic_regex
            m.rebalance_timeout_ms = meta.rebalance_timeout_ms
            m.server_assignor = meta.server_assignor
            if meta.classic_session_timeout_ms is not None and meta.classic_protocols:
                m.classic = ClassicMembership(
                    meta.classic_session_timeout_ms, list(meta.classic_protocols)
                )
            else:
                m.classic = None
            if meta.server_assignor:
                group.assignor = meta.server_assignor
        elif key.record_type == records.CURRENT_MEMBER_ASSIGNMENT:
            current = records.read_current_assignment(value)
            m = member()
            m.member_epoch, m.previous_epoch = current.member_epoch, current.previous_member_epoch
            m.assigned = self._names(current.assigned)
            m.revoking = self._names(current.pending_revocation)

    def _response(
        self, member_id: str, epoch: int, assignment: Iterable[TopicPartition] | None
    ) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "member_id": member_id,
            "member_epoch": epoch,
            "heartbeat_interval_ms": self.config.heartbeat_interval_ms,
            "assignment": None if assignment is None else self._assignment(assignment),
        }

    def _assignment(
        self, partitions: Iterable[TopicPartition], *, names: bool = False
    ) -> dict[str, Any]:
        """Partitions by topic id, and by name too for ConsumerGroupDescribe (`names`)."""
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        out = []
        for t, ps in sorted(by_topic.items()):
            topic_id = self.topics.topic_id(t)
            if topic_id is not None:
                entry: dict[str, Any] = {"topic_id": topic_id, "partitions": sorted(ps)}
                if names:
                    entry["topic_name"] = t
                out.append(entry)
        return {"topic_partitions": out}

    def _error(self, error: Errors, message: str | None, member_id: str) -> dict[str, Any]:
        # Kafka's error response leaves every other field at its default (no member id,
        # epoch 0); the client keeps its own id and epoch.
        return {
            "throttle_time_ms": 0,
            "error_code": int(error),
            "error_message": message,
            "member_id": None,
            "member_epoch": 0,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        }

    # -- OffsetCommit, TxnOffsetCommit and OffsetFetch of a consumer group's members ---------
    def validate_commit(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        *,
        transactional: bool = False,
        version: int | None = None,
    ) -> Errors | None:
        """None: not a consumer-protocol group (the classic rules apply). Otherwise the
        error for a commit by `member_id` at `epoch` (NONE when it may commit): an epoch
        other than the member's is STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a classic
        member or in a transaction (as Kafka); a consumer-protocol member's OffsetCommit
        must be v9+ (UNSUPPORTED_VERSION)."""
        group = self.get(group_id)
        if group is None:
            return None
        with group.lock:
            if epoch < 0 and not group.members:
                return Errors.NONE  # the admin client, or a consumer outside the group
            if transactional and epoch < 0 and not member_id:
                return Errors.NONE  # a producer that does not name the consumer (Kafka 4.1)
            member = group.members.get(member_id)
            if member is None:
                return Errors.UNKNOWN_MEMBER_ID
            if not transactional and member.classic is None and version is not None and version < 9:
                return Errors.UNSUPPORTED_VERSION
            if epoch != member.member_epoch:
                if transactional or member.classic is not None:
                    return Errors.ILLEGAL_GENERATION
                return Errors.STALE_MEMBER_EPOCH
            return Errors.NONE

    def validate_fetch(self, group_id: str, member_id: str | None, epoch: int) -> Errors | None:
        """OffsetFetch v9+ names the member and its epoch; None: not a consumer group."""
        group = self.get(group_id)
        if group is None:
            return None
        if member_id is None and epoch < 0:
            return Errors.NONE
        with group.lock:
            member = group.members.get(member_id or "")
            if member is None:
                return Errors.UNKNOWN_MEMBER_ID
            if epoch != member.member_epoch:
                if member.classic is not None:
                    return Errors.ILLEGAL_GENERATION
                return Errors.STALE_MEMBER_EPOCH
            return Errors.NONE

    # -- online migration ---------------------------------------------------------------------
    def _upgrade(self, group_id: str) -> bool:
        """A consumer-protocol member joins a classic group with members: the group becomes
        a consumer group, its classic members staying in it. False when it cannot."""
        if self.classic is None or not self.config.upgrade_enabled:
            log.info("Cannot upgrade classic group %s: the online upgrade is disabled", group_id)
            return False
        scheduled: list[DelayedTimeout] = []

        def adopt(generation: int, members: list[ClassicMemberSnapshot]) -> None:
            # Under the classic group's lock: no classic request sees the group between.
            group = ConsumerGroup(group_id, group_epoch=generation, assignment_epoch=generation)
            with group.lock:
                for snap in members:
                    member = self._from_classic(snap, generation)
                    group.members[member.member_id] = member
                    group.target[member.member_id] = set(member.assigned)
                group.subscribed_partitions = self._subscribed_partitions(group)
                with self._lock:
                    self._groups[group_id] = group
                for member in group.members.values():
                    self._persist(group, member, target_changed=True)
                    scheduled.append(self._session_deadline(group, member))
            log.info(
                "Upgraded classic group %s to a consumer group (generation %d, %d members)",
                group_id,
                generation,
                len(members),
            )

        if not self.classic.hand_over(group_id, self.config.max_size, adopt):
            return False
        for op in scheduled:
            self.schedule(op)
        return True

    def _from_classic(self, snap: ClassicMemberSnapshot, generation: int) -> ConsumerMember:
        try:
            sub = decode_subscription(snap.subscription)
            assigned = set(decode_assignment(snap.assignment))
        except Exception:
            log.warning("Member %s has a malformed subscription or assignment", snap.member_id)
            sub, assigned = None, set()
        return ConsumerMember(
            member_id=snap.member_id,
            instance_id=snap.instance_id,
            rack_id=sub.rack_id if sub is not None else None,
            client_id=snap.client_id,
            client_host=snap.client_host,
            subscribed_topics=list(sub.topics) if sub is not None else [],
            rebalance_timeout_ms=snap.rebalance_timeout_ms,
            member_epoch=generation,
            previous_epoch=generation,
            assigned={tp for tp in assigned if self.topics.topic_id(tp[0]) is not None},
            last_heartbeat=self.time.monotonic(),
            classic=ClassicMembership(snap.session_timeout_ms, snap.protocols),
        )

    def _fence(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Removes `member`; when it was the last consumer-protocol member of a group of
        classic members, the group becomes a classic group again (if allowed)."""
        others = [m for m in group.members.values() if m is not member]
        if (
            member.classic is None
            and others
            and all(m.classic is not None for m in others)
            and self.classic is not None
        ):
            if not self.config.downgrade_enabled:
                log.info("Cannot downgrade consumer group %s: disabled", group.group_id)
            elif len(others) > self.config.classic_max_size:
                log.info("Cannot downgrade consumer group %s: too many members", group.group_id)
            else:
                self._downgrade(group, others)
                return
        self._remove(group, member)

    def _downgrade(self, group: ConsumerGroup, remaining: list[ConsumerMember]) -> None:
        assert self.classic is not None
        snapshots = []
        for m in remaining:
            assert m.classic is not None
            snapshots.append(
                ClassicMemberSnapshot(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.classic.session_timeout_ms,
                    protocols=list(m.classic.protocols),
                    subscription=b"",
                    assignment=encode_assignment(
                        sorted(group.target.get(m.member_id, ())), m.classic.version
                    ),
                )
            )
        epoch = group.group_epoch
        self._forget_group(group)
        group.members.clear()  # its pending deadlines find nobody
        log.info(
            "Downgrading consumer group %s to a classic group (epoch %d, %d members)",
            group.group_id,
            epoch,
            len(snapshots),
        )
        self.classic.take_over(group.group_id, epoch, snapshots)

    # -- classic members (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) -------------------------
    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerMember | Errors:
        if instance_id is not None:
            member = group.static_member(instance_id)
            if member is None:
                return Errors.UNKNOWN_MEMBER_ID
            if member_id and member.member_id != member_id:
                return Errors.FENCED_INSTANCE_ID
        else:
            found = group.members.get(member_id)
            if found is None:
                return Errors.UNKNOWN_MEMBER_ID
            member = found
        if member.classic is None:
            return Errors.UNKNOWN_MEMBER_ID  # a consumer-protocol member
        return member

    def classic_join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ) -> dict[str, Any] | None:
        """JoinGroup of a classic member into a consumer group with members; None when
        the group is not one (the classic coordinator answers)."""
        group = self._current(group_id)
        if group is None:
            return None
        scheduled: list[DelayedTimeout] = []
        try:
            if not group.members:
                return None
            unknown = not member_id
            if unknown:
                member_id = str(uuid.uuid4())
            member = group.members.get(member_id)
            if member is None and len(group.members) >= self.config.max_size:
                return join_error(member_id, Errors.GROUP_MAX_SIZE_REACHED)
            if not self._supports(group, protocol_type, protocols):
                return join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL)
            if unknown and require_known_member_id and instance_id is None:
                log.info(
                    "Dynamic member with unknown member id joins consumer group %s: "
                    "it is given %s and asked to rejoin with it",
                    group_id,
                    member_id,
                )
                return join_error(member_id, Errors.MEMBER_ID_REQUIRED)
            try:
                sub = decode_subscription(protocols[0][1])
            except Exception:
                return join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL)
            epoch_before = group.group_epoch
            if instance_id is not None:
                previous = group.static_member(instance_id)
                if previous is not None and previous.member_id != member_id:
                    if not unknown:
                        return join_error(member_id, Errors.FENCED_INSTANCE_ID)
                    previous.left_epoch = previous.member_epoch
                    member = self._replace_static(group, previous, member_id)
                elif previous is None and not unknown and member is None:
                    return join_error(member_id, Errors.UNKNOWN_MEMBER_ID)
            if member is None:
                member = self._join(group, member_id)
            elif member.classic is None:
                return join_error(member_id, Errors.UNKNOWN_MEMBER_ID)
            member.classic = ClassicMembership(session_timeout_ms, list(protocols))
            member.client_id, member.client_host = client_id, client_host
            self._update_subscription(
                group,
                member,
                {
                    "subscribed_topic_names": list(sub.topics),
                    "instance_id": instance_id,
                    "rack_id": sub.rack_id,
                    "rebalance_timeout_ms": rebalance_timeout_ms,
                },
            )
            self._maybe_refresh_target(group, epoch_before)
            revoking_before = bool(member.revoking)
            self._reconcile(group, member, set(sub.owned_partitions))
            if member.revoking and not revoking_before:
                scheduled.append(self._revocation_deadline(group, member))
            member.last_heartbeat = self.time.monotonic()
            scheduled.append(self._session_deadline(group, member))
            scheduled.append(self._classic_deadline(group, member, "sync", rebalance_timeout_ms))
            self._persist(group, member, target_changed=group.assignment_epoch > epoch_before)
            member.last_sent = frozenset(member.assigned)
            response = {
                "error_code": 0,
                "generation_id": member.member_epoch,
                "protocol_type": CONSUMER_PROTOCOL_TYPE,
                "protocol_name": member.classic.protocol_name,
                "leader": "",
                "skip_assignment": False,
                "member_id": member.member_id,
                "members": [],
            }
        finally:
            group.lock.release()
        for op in scheduled:
            self.schedule(op)
        return response

    def _classic_deadline(
        self, group: ConsumerGroup, member: ConsumerMember, owed: str, timeout_ms: int
    ) -> DelayedTimeout:
        """A classic member must rejoin (told so) or sync (after joining) within its
        rebalance timeout, or it is removed from the group."""
        member.classic_pending = owed
        member.classic_pending_token += 1
        token = member.classic_pending_token

        def expire() -> None:
            if not self._active:
                return
            with group.lock:
                if group.members.get(member.member_id) is not member:
                    return
                if member.classic_pending != owed or member.classic_pending_token != token:
                    return
                log.info(
                    "Classic member %s of consumer group %s did not %s within %d ms; removed",
                    member.member_id,
                    group.group_id,
                    owed,
                    timeout_ms,
                )
                self._remove(group, member)

        return DelayedTimeout(timeout_ms, expire)

    @staticmethod
    def _supports(
        group: ConsumerGroup, protocol_type: str, protocols: list[tuple[str, bytes]]
    ) -> bool:
        """A classic member may join when it speaks the consumer protocol with an assignor
        every classic member of the group supports."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
            return False
        classic = group.classic_members()
        return any(
            all(name in {n for n, _ in m.classic.protocols} for m in classic if m.classic)
            for name, _ in protocols
        )

    def classic_sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> dict[str, Any] | None:
        """SyncGroup of a classic member: its current assignment (no leader assigns)."""
        group = self._current(group_id)
        if group is None:
            return None
        scheduled: list[DelayedTimeout] = []
        try:
            if not group.members:
                return None
            found = self._classic_member(group, member_id, instance_id)
            if isinstance(found, Errors):
                return sync_error(found)
            member = found
            assert member.classic is not None
            if generation_id != member.member_epoch:
                return sync_error(Errors.ILLEGAL_GENERATION)
            if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != member.classic.protocol_name
            ):
                return sync_error(Errors.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > member.member_epoch and not member.revoking:
                scheduled.append(
                    self._classic_deadline(group, member, "join", member.rebalance_timeout_ms)
                )
                return sync_error(Errors.REBALANCE_IN_PROGRESS)
            if member.classic_pending == "sync":
                member.classic_pending = None
            member.last_heartbeat = self.time.monotonic()
            scheduled.append(self._session_deadline(group, member))
            response = {
                "error_code": 0,
                "protocol_type": protocol_type,
                "protocol_name": protocol_name,
                "assignment": encode_assignment(sorted(member.assigned), member.classic.version),
            }
        finally:
            group.lock.release()
        for op in scheduled:
            self.schedule(op)
        return response

    def classic_heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> Errors | None:
        """Heartbeat of a classic member: REBALANCE_IN_PROGRESS when it must rejoin (the
        group moved on, it has partitions to give up, or partitions it waits for are free)."""
        group = self._current(group_id)
        if group is None:
            return None
        scheduled: list[DelayedTimeout] = []
        try:
            if not group.members:
                return None
            found = self._classic_member(group, member_id, instance_id)
            if isinstance(found, Errors):
                return found
            member = found
            if generation_id != member.member_epoch:
                return Errors.ILLEGAL_GENERATION
            member.last_heartbeat = self.time.monotonic()
            scheduled.append(self._session_deadline(group, member))
            waiting = group.target.get(member.member_id, set()) - member.assigned
            rejoin = (
                member.member_epoch < group.group_epoch
                or bool(member.revoking)
                or bool(waiting - group.held_by_others(member.member_id))
            )
            if rejoin and member.classic_pending != "join":
                scheduled.append(
                    self._classic_deadline(group, member, "join", member.rebalance_timeout_ms)
                )
        finally:
            group.lock.release()
        for op in scheduled:
            self.schedule(op)
        return Errors.REBALANCE_IN_PROGRESS if rejoin else Errors.NONE

    def classic_leave(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> list[Errors] | None:
        """LeaveGroup of classic members of a consumer group (member id, instance id)."""
        group = self._current(group_id)
        if group is None:
            return None
        try:
            if not group.members:
                return None
            results = []
            for member_id, instance_id in leaving:
                found = self._classic_member(group, member_id, instance_id)
                if isinstance(found, Errors):
                    results.append(found)
                    continue
                log.info("Classic member %s left consumer group %s", found.member_id, group_id)
                self._remove(group, found)
                results.append(Errors.NONE)
            return results
        finally:
            group.lock.release()

    # -- ConsumerGroupDescribe ---------------------------------------------------------------
    def describe(self, group_id: str) -> dict[str, Any]:
        group = self.get(group_id)
        if group is None:
            return {
                "error_code": int(Errors.GROUP_ID_NOT_FOUND),
                "error_message": f"Group {group_id} not found.",
                "group_id": group_id,
                "group_state": "",
                # Kafka's defaults for the rest of an unknown group's entry.
                "group_epoch": 0,
                "assignment_epoch": 0,
                "assignor_name": "",
                "members": [],
                "authorized_operations": -2147483648,
            }
        with group.lock:
            members = [
                {
                    "member_id": m.member_id,
                    "instance_id": m.instance_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    # As Kafka prints the address (InetAddress.toString), and as
                    # DescribeGroups answers it.
                    "client_host": m.client_host
                    if m.client_host.startswith("/")
                    else f"/{m.client_host}",
                    "subscribed_topic_names": list(m.subscribed_topics),
                    "subscribed_topic_regex": m.subscribed_regex or "",
                    "assignment": self._assignment(m.assigned, names=True),
                    "target_assignment": self._assignment(
                        group.target.get(m.member_id, ()), names=True
                    ),
                    # v1: 0 for a classic member, 1 for a consumer-protocol member.
                    "member_type": 0 if m.classic is not None else 1,
                }
                for m in group.members.values()
            ]
            return {
                "error_code": 0,
                "error_message": None,
                "group_id": group_id,
                "group_state": group.state,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": group.assignor,
                "members": members,
                "authorized_operations": -2147483648,
            }


def _uuid(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, bytes | bytearray):
        return uuid.UUID(bytes=bytes(value))
    return uuid.UUID(str(value))
