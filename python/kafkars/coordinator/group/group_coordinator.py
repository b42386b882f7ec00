"""GroupCoordinator: the classic consumer-group protocol and committed offsets.

JoinGroup, SyncGroup, Heartbeat and LeaveGroup drive each group's state machine
(`group_metadata`); rebalances wait in a DelayedJoin, sessions end in heartbeat
timeouts; offsets and group assignments are written to `__consumer_offsets` through a
`GroupStore`. Responses are dicts in the wire's field names, handed to callbacks
because a JoinGroup or SyncGroup may be answered long after it arrived.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkars.assignors import decode_assignment, encode_assignment
from kafkars.coordinator.clock import SYSTEM_TIME, Time
from kafkars.coordinator.group.classic_responses import join_error, sync_error
from kafkars.coordinator.group.consumer_group import ClassicMemberSnapshot, ConsumerGroupCoordinator
from kafkars.coordinator.group.delayed import DelayedJoin, DelayedTimeout, InitialDelayedJoin
from kafkars.coordinator.group.group_metadata import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
    ResponseCallback,
)
from kafkars.coordinator.group.group_metadata_manager import GroupStore
from kafkars.coordinator.log_append import group_store_error, offset_commit_error
from kafkars.protocol import Errors

log = logging.getLogger("kafkars.coordinator.group.GroupCoordinator")

# A brand-new member that never completes its first join is dropped after this long
# (Kafka's NewMemberJoinTimeoutMs), whatever its session timeout.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
CONSUMER_PROTOCOL_TYPE = "consumer"

Action = Callable[[], object]  # run after the group lock is released; result unused
# Answers an OffsetCommit or TxnOffsetCommit: each partition's error.
CommitCallback = Callable[[dict[tuple[str, int], Errors]], None]


@dataclass
class GroupConfig:
    """The broker settings the coordinator obeys."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000

    @classmethod
    def from_broker(cls, config: Any) -> GroupConfig:
        get = config.get
        return cls(
            min_session_timeout_ms=int(get("group.min.session.timeout.ms")),
            max_session_timeout_ms=int(get("group.max.session.timeout.ms")),
            initial_rebalance_delay_ms=int(get("group.initial.rebalance.delay.ms")),
            max_size=int(get("group.max.size")),
            offset_metadata_max_bytes=int(get("offset.metadata.max.bytes")),
            offsets_retention_ms=int(get("offsets.retention.minutes")) * 60 * 1000,
            offsets_retention_check_interval_ms=int(get("offsets.retention.check.interval.ms")),
        )


class GroupCoordinator:
    """Every classic group this broker coordinates (a single broker owns them all)."""

    def __init__(
        self, config: GroupConfig, store: GroupStore | None = None, time: Time = SYSTEM_TIME
    ) -> None:
        self.config = config
        self.store = store or GroupStore()
        # Every deadline (sessions, rebalances, offset retention) reads this clock, so
        # tests drive them with a MockTime instead of sleeping.
        self.time = time
        self._groups: dict[str, GroupMetadata] = {}
        self._groups_lock = threading.Lock()
        # TxnOffsetCommit's offsets by producer id, then group: applied by the commit
        # marker, dropped by the abort marker (`complete_txn_offsets`).
        self._pending_txn_offsets: dict[
            int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]
        ] = {}
        self._join_purgatory = time.purgatory("Rebalance")
        self._heartbeat_purgatory = time.purgatory("Heartbeat")
        self._active = True
        # The __consumer_offsets partitions coordinated here; None: all (one broker).
        self.owned_partitions: set[int] | None = None
        self._expiry_stop = threading.Event()
        self._expiry_thread: threading.Thread | None = None
        # KIP-848's groups of the same ids: classic requests for a consumer group with
        # members go there, and groups move between the two (online migration).
        self.consumer_groups: ConsumerGroupCoordinator | None = None

    def attach_consumer_groups(self, consumer_groups: ConsumerGroupCoordinator) -> None:
        self.consumer_groups = consumer_groups
        consumer_groups.classic = self

    # -- lifecycle --------------------------------------------------------------------------
    def startup(self, *, load: bool = True, expire_offsets: bool = True) -> None:
        """Loads the groups from the store; members of loaded groups get one session
        timeout to show up again before a rebalance. In cluster mode (`load=False`)
        partitions are loaded as this broker becomes their leader (`on_elected`)."""
        if not load:
            self.owned_partitions = set()
        if load:
            self._adopt(self.store.load())
        if expire_offsets:
            self._expiry_thread = threading.Thread(
                target=self._expiry_loop, name="group-metadata-manager", daemon=True
            )
            self._expiry_thread.start()

    # -- cluster mode: coordinating the partitions this broker leads -------------------------
    def is_coordinator(self, group_id: str) -> bool:
        owned = self.owned_partitions
        return owned is None or self.store.partition_for(group_id) in owned

    def on_elected(self, partition: int) -> None:
        """This broker leads `partition` of __consumer_offsets: its groups are loaded and
        coordinated here from now on (Kafka's onElection)."""
        assert self.owned_partitions is not None
        if partition in self.owned_partitions:
            return
        self._adopt(self.store.load([partition]))
        self.owned_partitions.add(partition)

    def on_resigned(self, partition: int) -> None:
        """Another broker leads `partition` now: its groups are dropped here (Kafka's
        onResignation); their members find the new coordinator."""
        if self.owned_partitions is None:
            return
        self.owned_partitions.discard(partition)
        with self._groups_lock:
            for group_id in [g for g in self._groups if self.store.partition_for(g) == partition]:
                del self._groups[group_id]

    def _adopt(self, loaded: dict[str, GroupMetadata]) -> None:
        actions: list[Action] = []
        with self._groups_lock:
            self._groups.update(loaded)
            self._pending_txn_offsets.update(getattr(self.store, "pending_txn_offsets", {}))
        for group in loaded.values():
            group.time = self.time
            with group.lock:
                for member in group.members.values():
                    member.last_heartbeat = self.time.monotonic()
                    self._schedule_heartbeat(group, member, actions)
        self._run(actions)

    def shutdown(self) -> None:
        # Pending operations complete on shutdown; inactive, their callbacks do nothing,
        # so members are not expired and the stored groups survive as they were.
        self._active = False
        self._expiry_stop.set()
        self._join_purgatory.shutdown()
        self._heartbeat_purgatory.shutdown()

    def _run(self, actions: list[Action]) -> None:
        for action in actions:
            action()

    # -- group lookup -----------------------------------------------------------------------
    def get_group(self, group_id: str) -> GroupMetadata | None:
        with self._groups_lock:
            return self._groups.get(group_id)

    def _get_or_create(self, group_id: str) -> GroupMetadata:
        with self._groups_lock:
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = GroupMetadata(group_id, time=self.time)
            return group

    def _remove_group(self, group: GroupMetadata) -> None:
        with self._groups_lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]

    def groups(self) -> list[GroupMetadata]:
        with self._groups_lock:
            return list(self._groups.values())

    # -- JoinGroup --------------------------------------------------------------------------
    def handle_join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: ResponseCallback,
    ) -> None:
        if not group_id:
            return callback(join_error(member_id, Errors.INVALID_GROUP_ID))
        if not (
            self.config.min_session_timeout_ms
            <= session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            return callback(join_error(member_id, Errors.INVALID_SESSION_TIMEOUT))
        consumer_groups = self.consumer_groups
        if consumer_groups is not None:
            answer = consumer_groups.classic_join(
                group_id,
                member_id,
                group_instance_id,
                require_known_member_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
            )
            if answer is not None:
                return callback(answer)
            # An empty consumer group gives way to the classic group of its id.
            consumer_groups.delete_if_empty(group_id)
        actions: list[Action] = []
        while True:
            group = self._get_or_create(group_id) if not member_id else self.get_group(group_id)
            if group is None:
                return callback(join_error(member_id, Errors.UNKNOWN_MEMBER_ID))
            with group.lock:
                if group.is_(GroupState.DEAD):
                    continue  # deleted meanwhile: look it up (or create it) again
                member = MemberMetadata(
                    member_id=member_id,
                    group_instance_id=group_instance_id,
                    client_id=client_id,
                    client_host=client_host,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                    session_timeout_ms=session_timeout_ms,
                    protocol_type=protocol_type,
                    supported_protocols=protocols,
                    last_heartbeat=self.time.monotonic(),
                )
                if not member_id:
                    self._join_unknown_member(
                        group, member, require_known_member_id, callback, actions
                    )
                else:
                    self._join_known_member(group, member, callback, actions)
            break
        self._run(actions)

    def _join_unknown_member(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        require_known_member_id: bool,
        callback: ResponseCallback,
        actions: list[Action],
    ) -> None:
        if not group.supports_protocols(member.protocol_type, member.supported_protocols):
            callback(join_error("", Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        instance_id = member.group_instance_id
        prefix = instance_id if instance_id is not None else member.client_id
        new_id = f"{prefix}-{uuid.uuid4()}"
        old_id = group.static_member_id(instance_id)
        if instance_id is not None and old_id is not None:
            self._replace_static_member(
                group, instance_id, old_id, new_id, member, callback, actions
            )
            return
        if len(group.members) + len(group.pending_members) >= self.config.max_size:
            callback(join_error("", Errors.GROUP_MAX_SIZE_REACHED))
            return
        member.member_id = new_id
        if require_known_member_id and instance_id is None:
            # KIP-394: hand out the id first; the member joins again with it, so a member
            # whose first response is lost never leaves a ghost behind.
            timeout_ms = member.session_timeout_ms
            group.pending_members[new_id] = self.time.monotonic() + timeout_ms / 1000
            actions.append(lambda: self._schedule_pending_expiry(group, new_id, timeout_ms))
            callback(join_error(new_id, Errors.MEMBER_ID_REQUIRED))
            return
        self._add_member_and_rebalance(group, member, callback, actions)

    def _join_known_member(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        callback: ResponseCallback,
        actions: list[Action],
    ) -> None:
        member_id = member.member_id
        if member_id in group.pending_members:
            if not group.supports_protocols(member.protocol_type, member.supported_protocols):
                callback(join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
                return
            self._add_member_and_rebalance(group, member, callback, actions)
            return
        if member.group_instance_id is not None:
            known = group.static_member_id(member.group_instance_id)
            if known is not None and known != member_id:
                callback(join_error(member_id, Errors.FENCED_INSTANCE_ID))
                return
        existing = group.members.get(member_id)
        if existing is None or group.is_(GroupState.EMPTY):
            callback(join_error(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        if not group.supports_protocols(member.protocol_type, member.supported_protocols):
            callback(join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        existing.last_heartbeat = self.time.monotonic()
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, existing, member, callback, actions)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            if existing.protocols_match(member.supported_protocols):
                # The member missed our JoinGroup response: send it again.
                callback(self._join_response(group, existing))
            else:
                self._update_member_and_rebalance(group, existing, member, callback, actions)
        elif group.is_(GroupState.STABLE):
            if group.is_leader(member_id) or not existing.protocols_match(
                member.supported_protocols
            ):
                # The leader rejoins to have metadata changes picked up: rebalance.
                self._update_member_and_rebalance(group, existing, member, callback, actions)
            else:
                callback(self._join_response(group, existing))

    def _join_response(
        self, group: GroupMetadata, member: MemberMetadata, *, skip_assignment: bool = False
    ) -> dict[str, Any]:
        leader = group.is_leader(member.member_id)
        return {
            "error_code": 0,
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": group.leader_id or "",
            "skip_assignment": skip_assignment,
            "member_id": member.member_id,
            "members": group.current_member_metadata() if leader else [],
        }

    def _replace_static_member(
        self,
        group: GroupMetadata,
        instance_id: str,
        old_id: str,
        new_id: str,
        joining: MemberMetadata,
        callback: ResponseCallback,
        actions: list[Action],
    ) -> None:
        """A static member restarted: its new id takes over the old slot (and, in a Stable
        group with unchanged subscriptions, the old assignment, with no rebalance)."""
        existing = group.members[old_id]
        old_join, old_sync = existing.awaiting_join, existing.awaiting_sync
        old_client = (existing.client_id, existing.client_host)
        old_timeouts = (existing.session_timeout_ms, existing.rebalance_timeout_ms)
        if old_join is not None:
            old_join(join_error(old_id, Errors.FENCED_INSTANCE_ID))
        if old_sync is not None:
            old_sync(sync_error(Errors.FENCED_INSTANCE_ID))
        existing.awaiting_join = existing.awaiting_sync = None
        member = group.replace_static_member(instance_id, old_id, new_id)
        member.last_heartbeat = self.time.monotonic()
        member.client_id, member.client_host = joining.client_id, joining.client_host
        member.session_timeout_ms = joining.session_timeout_ms
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        self._schedule_heartbeat(group, member, actions)
        unchanged = member.protocols_match(joining.supported_protocols)
        if group.is_(GroupState.STABLE) and unchanged:
            # No rebalance, even for the leader (KIP-814): a returning leader gets the
            # member list with skip_assignment, so it watches metadata without assigning;
            # an older client's SyncGroup in Stable just gets its current assignment.
            # Answered once the new member id is stored; if that fails the old
            # incarnation keeps the slot and the joiner gets the error (as Kafka).
            assignment = {m.member_id: m.assignment for m in group.members.values()}

            def stored(error: Errors) -> None:
                error = group_store_error(error)
                with group.lock:
                    if error is Errors.NONE:
                        leader = group.is_leader(new_id)
                        callback(self._join_response(group, member, skip_assignment=leader))
                        return
                    log.warning(
                        "Storing the new member id of static member %s of %s failed: %s",
                        instance_id,
                        group.group_id,
                        error.name,
                    )
                    if group.members.get(new_id) is member:
                        group.replace_static_member(instance_id, new_id, old_id)
                        member.client_id, member.client_host = old_client
                        member.session_timeout_ms, member.rebalance_timeout_ms = old_timeouts
                    callback(join_error("", error))

            actions.append(lambda: self.store.store_group(group, assignment, stored))
        else:
            self._update_member_and_rebalance(group, member, joining, callback, actions)

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        callback: ResponseCallback,
        actions: list[Action],
    ) -> None:
        member.is_new = True
        group.add(member, callback)
        # A new member gets Kafka's long first-join timeout, not its session timeout.
        group.new_member_added = True
        self._schedule_heartbeat(group, member, actions)
        self._maybe_prepare_rebalance(group, f"Adding new member {member.member_id}", actions)
        actions.append(lambda: self._check_join(group))

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        existing: MemberMetadata,
        joining: MemberMetadata,
        callback: ResponseCallback,
        actions: list[Action],
    ) -> None:
        existing.supported_protocols = joining.supported_protocols
        existing.rebalance_timeout_ms = joining.rebalance_timeout_ms
        existing.session_timeout_ms = joining.session_timeout_ms
        if existing.awaiting_join is not None and existing.awaiting_join is not callback:
            # Two JoinGroups in flight from one member: only the newest gets the answer.
            existing.awaiting_join(join_error(existing.member_id, Errors.REBALANCE_IN_PROGRESS))
        existing.awaiting_join = callback
        self._maybe_prepare_rebalance(group, f"Updating metadata for {existing.member_id}", actions)
        actions.append(lambda: self._check_join(group))

    def _maybe_prepare_rebalance(
        self, group: GroupMetadata, reason: str, actions: list[Action]
    ) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason, actions)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str, actions: list[Action]) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            # Members waiting in SyncGroup must rejoin: the assignment they wait for is void.
            self._reset_and_propagate_assignment_error(group, Errors.REBALANCE_IN_PROGRESS)
        op: DelayedJoin
        if group.is_(GroupState.EMPTY):
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.max_rebalance_timeout_ms() - delay, 0)
            op = InitialDelayedJoin(self, group, delay, delay, remaining)
        else:
            op = DelayedJoin(self, group, group.max_rebalance_timeout_ms())
        group.transition_to(GroupState.PREPARING_REBALANCE)
        group.join_op = op
        log.info(
            "Preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
            group.group_id,
            group.state.value,
            group.generation_id,
            reason,
        )
        actions.append(lambda: self._join_purgatory.try_complete_else_watch(op, [group.group_id]))

    def _check_join(self, group: GroupMetadata) -> None:
        self._join_purgatory.check_and_complete(group.group_id)

    def on_initial_join_expired(self, group: GroupMetadata, op: InitialDelayedJoin) -> None:
        if not self._active:
            return
        actions: list[Action] = []
        with group.lock:
            if group.join_op is not op:
                return
            if group.new_member_added and op.remaining_ms > 0:
                group.new_member_added = False
                delay = min(op.configured_delay_ms, op.remaining_ms)
                nxt = InitialDelayedJoin(
                    self, group, delay, op.configured_delay_ms, max(op.remaining_ms - delay, 0)
                )
                group.join_op = nxt
                actions.append(
                    lambda: self._join_purgatory.try_complete_else_watch(nxt, [group.group_id])
                )
            else:
                self._complete_join(group, actions)
        self._run(actions)

    def on_complete_join(self, group: GroupMetadata, op: DelayedJoin) -> None:
        if not self._active:
            return
        actions: list[Action] = []
        with group.lock:
            if group.join_op is not op:
                return
            self._complete_join(group, actions)
        self._run(actions)

    def fail_pending(
        self, group: GroupMetadata, error: Errors = Errors.UNKNOWN_SERVER_ERROR
    ) -> None:
        """Answers every JoinGroup and SyncGroup the group holds with `error`: after a
        failure inside a rebalance, members are told (and rejoin) rather than left waiting
        for an answer that will never come."""
        answers: list[tuple[ResponseCallback, dict[str, Any]]] = []
        with group.lock:
            for m in group.members.values():
                if m.awaiting_join is not None:
                    answers.append((m.awaiting_join, join_error(m.member_id, error)))
                if m.awaiting_sync is not None:
                    answers.append((m.awaiting_sync, sync_error(error)))
                m.awaiting_join = m.awaiting_sync = None
        for callback, response in answers:
            try:
                callback(response)
            except Exception:
                log.exception("Answering a pending request of %s failed", group.group_id)

    def _complete_join(self, group: GroupMetadata, actions: list[Action]) -> None:
        group.join_op = None
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        # Members that did not rejoin within the rebalance timeout are out.
        for m in group.not_yet_rejoined():
            log.info("Removing member %s of %s: it did not rejoin", m.member_id, group.group_id)
            group.remove(m.member_id)
        group.init_next_generation()
        if group.is_(GroupState.EMPTY):
            log.info(
                "Group %s with generation %d is now empty", group.group_id, group.generation_id
            )
            self._store_group(group)
            return
        log.info(
            "Stabilized group %s generation %d (%d members, protocol %s)",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.protocol_name,
        )
        for member in group.members.values():
            callback, member.awaiting_join = member.awaiting_join, None
            member.is_new = False
            member.last_heartbeat = self.time.monotonic()
            if callback is not None:
                callback(self._join_response(group, member))
            self._schedule_heartbeat(group, member, actions)
        self._schedule_sync_expiry(group, actions)

    # -- SyncGroup --------------------------------------------------------------------------
    def handle_sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        callback: ResponseCallback,
    ) -> None:
        if self.consumer_groups is not None:
            answer = self.consumer_groups.classic_sync(
                group_id, member_id, group_instance_id, generation_id, protocol_type, protocol_name
            )
            if answer is not None:
                return callback(answer)
        group = self.get_group(group_id)
        if group is None:
            return callback(sync_error(Errors.UNKNOWN_MEMBER_ID))
        actions: list[Action] = []
        with group.lock:
            error = self._validate_member(group, member_id, group_instance_id, generation_id)
            mismatch = (protocol_type is not None and protocol_type != group.protocol_type) or (
                protocol_name is not None and protocol_name != group.protocol_name
            )
            if error is Errors.NONE and mismatch:
                error = Errors.INCONSISTENT_GROUP_PROTOCOL
            if error is not Errors.NONE:
                callback(sync_error(error))
            elif group.is_(GroupState.PREPARING_REBALANCE):
                callback(sync_error(Errors.REBALANCE_IN_PROGRESS))
            elif group.is_(GroupState.COMPLETING_REBALANCE):
                member = group.members[member_id]
                member.awaiting_sync = callback
                member.last_heartbeat = self.time.monotonic()
                if group.is_leader(member_id):
                    full = {m: assignments.get(m, b"") for m in group.members}
                    log.info(
                        "Assignment received from leader %s for group %s generation %d",
                        member_id,
                        group_id,
                        group.generation_id,
                    )
                    generation = group.generation_id
                    actions.append(
                        lambda: self.store.store_group(
                            group,
                            full,
                            lambda error: self._on_assignment_stored(
                                group, generation, member_id, full, error
                            ),
                        )
                    )
            elif group.is_(GroupState.STABLE):
                member = group.members[member_id]
                member.last_heartbeat = self.time.monotonic()
                callback(self._sync_response(group, member.assignment))
        self._run(actions)

    def _on_assignment_stored(
        self,
        group: GroupMetadata,
        generation: int,
        leader_id: str,
        assignment: dict[str, bytes],
        error: Errors,
    ) -> None:
        """Kafka's storeGroup callback in doSyncGroup: the members get their assignment
        once the ISR has it; if the write failed they get the error and the group
        rebalances. A group that moved on meanwhile (another member joined, a new
        generation) is left as it is."""
        error = group_store_error(error)
        actions: list[Action] = []
        with group.lock:
            if not (
                group.is_(GroupState.COMPLETING_REBALANCE) and group.generation_id == generation
            ):
                return
            if error is not Errors.NONE:
                log.info(
                    "Storing the assignment of group %s generation %d failed: %s",
                    group.group_id,
                    generation,
                    error.name,
                )
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(
                    group,
                    f"Error {error.name} when storing group assignment during SyncGroup "
                    f"(member: {leader_id})",
                    actions,
                )
            else:
                for mid, data in assignment.items():
                    member = group.members.get(mid)
                    if member is not None:
                        member.assignment = data
                group.transition_to(GroupState.STABLE)
                self._propagate_assignment(group, Errors.NONE)
        self._run(actions)

    def _sync_response(self, group: GroupMetadata, assignment: bytes) -> dict[str, Any]:
        return {
            "error_code": 0,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "assignment": assignment,
        }

    def _propagate_assignment(self, group: GroupMetadata, error: Errors) -> None:
        for member in group.members.values():
            callback, member.awaiting_sync = member.awaiting_sync, None
            if callback is None:
                continue
            if error is Errors.NONE:
                callback(self._sync_response(group, member.assignment))
            else:
                callback(sync_error(error))

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: Errors) -> None:
        group.clear_assignments()
        self._propagate_assignment(group, error)

    def _schedule_sync_expiry(self, group: GroupMetadata, actions: list[Action]) -> None:
        """Members that never send their SyncGroup within the rebalance timeout are
        removed, so followers are not stuck behind a leader that never syncs."""
        generation = group.generation_id

        def expire() -> None:
            if not self._active:
                return
            inner: list[Action] = []
            with group.lock:
                if group.generation_id != generation or group.is_(GroupState.DEAD):
                    return
                if group.is_(GroupState.COMPLETING_REBALANCE):
                    missing = [m for m in group.members.values() if m.awaiting_sync is None]
                    for m in missing:
                        log.info(
                            "Removing member %s of %s: no SyncGroup", m.member_id, group.group_id
                        )
                        group.remove(m.member_id)
                    if missing:
                        self._member_gone(group, "members did not sync in time", inner)
            self._run(inner)

        op = DelayedTimeout(group.max_rebalance_timeout_ms(), expire)
        actions.append(
            lambda: self._heartbeat_purgatory.try_complete_else_watch(op, [group.group_id])
        )

    # -- Heartbeat and session expiry -------------------------------------------------------
    def handle_heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> Errors:
        if self.consumer_groups is not None:
            answer = self.consumer_groups.classic_heartbeat(
                group_id, member_id, group_instance_id, generation_id
            )
            if answer is not None:
                return answer
        group = self.get_group(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        with group.lock:
            error = self._validate_member(group, member_id, group_instance_id, generation_id)
            if error is not Errors.NONE:
                return error
            group.members[member_id].last_heartbeat = self.time.monotonic()
            if group.is_(GroupState.PREPARING_REBALANCE):
                return Errors.REBALANCE_IN_PROGRESS
            return Errors.NONE

    def _validate_member(
        self, group: GroupMetadata, member_id: str, instance_id: str | None, generation_id: int
    ) -> Errors:
        if group.is_(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if instance_id is not None:
            known = group.static_member_id(instance_id)
            if known is not None and known != member_id:
                return Errors.FENCED_INSTANCE_ID
        if not group.has(member_id) or group.is_(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        return Errors.NONE

    def _schedule_heartbeat(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        actions: list[Action],
        delay_ms: int | None = None,
    ) -> None:
        if delay_ms is None:
            delay_ms = member.session_timeout_ms
        op = DelayedTimeout(delay_ms, lambda: self._on_heartbeat_deadline(group, member))
        actions.append(
            lambda: self._heartbeat_purgatory.try_complete_else_watch(op, [group.group_id])
        )

    def _on_heartbeat_deadline(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if not self._active:
            return
        actions: list[Action] = []
        with group.lock:
            if group.members.get(member.member_id) is not member:
                return  # left, expired or replaced: this deadline is stale
            now = self.time.monotonic()
            if member.awaiting_join is not None and member.is_new:
                timeout_ms = NEW_MEMBER_JOIN_TIMEOUT_MS
            elif member.awaiting_join is not None or member.awaiting_sync is not None:
                timeout_ms = None  # the join or sync deadline governs meanwhile
            else:
                timeout_ms = member.session_timeout_ms
            remaining = (
                member.session_timeout_ms / 1000
                if timeout_ms is None
                else member.last_heartbeat + timeout_ms / 1000 - now
            )
            if remaining > 0:
                self._schedule_heartbeat(group, member, actions, int(remaining * 1000) + 1)
            else:
                log.info(
                    "Member %s in group %s has failed, removing it from the group",
                    member.member_id,
                    group.group_id,
                )
                self._remove_member_and_update_group(group, member, "session timeout", actions)
        self._run(actions)

    def _schedule_pending_expiry(
        self, group: GroupMetadata, member_id: str, timeout_ms: int
    ) -> None:
        def expire() -> None:
            if not self._active:
                return
            actions: list[Action] = []
            with group.lock:
                if group.pending_members.pop(member_id, None) is not None:
                    log.info("Pending member %s of %s expired", member_id, group.group_id)
                    if group.is_(GroupState.PREPARING_REBALANCE):
                        actions.append(lambda: self._check_join(group))
            self._run(actions)

        op = DelayedTimeout(timeout_ms, expire)
        self._heartbeat_purgatory.try_complete_else_watch(op, [group.group_id])

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, reason: str, actions: list[Action]
    ) -> None:
        if member.awaiting_join is not None:
            member.awaiting_join(join_error(member.member_id, Errors.UNKNOWN_MEMBER_ID))
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            member.awaiting_sync(sync_error(Errors.UNKNOWN_MEMBER_ID))
            member.awaiting_sync = None
        group.remove(member.member_id)
        self._member_gone(group, f"removing member {member.member_id} on {reason}", actions)

    def _member_gone(self, group: GroupMetadata, reason: str, actions: list[Action]) -> None:
        if group.is_(GroupState.STABLE) or group.is_(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason, actions)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            actions.append(lambda: self._check_join(group))

    # -- LeaveGroup -------------------------------------------------------------------------
    def handle_leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[Errors, list[Errors]]:
        """Removes members (member id, group.instance.id); errors for the group and each."""
        if self.consumer_groups is not None:
            answer = self.consumer_groups.classic_leave(group_id, leaving)
            if answer is not None:
                return Errors.NONE, answer
        group = self.get_group(group_id)
        if group is None:
            return Errors.NONE, [Errors.UNKNOWN_MEMBER_ID for _ in leaving]
        actions: list[Action] = []
        results: list[Errors] = []
        with group.lock:
            if group.is_(GroupState.DEAD):
                return Errors.COORDINATOR_NOT_AVAILABLE, []
            for member_id, instance_id in leaving:
                if instance_id is not None:
                    known = group.static_member_id(instance_id)
                    if known is None:
                        results.append(Errors.UNKNOWN_MEMBER_ID)
                        continue
                    if member_id and member_id != known:
                        results.append(Errors.FENCED_INSTANCE_ID)
                        continue
                    member_id = known
                if member_id in group.pending_members:
                    del group.pending_members[member_id]
                    actions.append(lambda: self._check_join(group))
                    results.append(Errors.NONE)
                    continue
                member = group.members.get(member_id)
                if member is None:
                    results.append(Errors.UNKNOWN_MEMBER_ID)
                    continue
                log.info("Member %s is leaving group %s", member_id, group_id)
                self._remove_member_and_update_group(group, member, "LeaveGroup", actions)
                results.append(Errors.NONE)
        self._run(actions)
        return Errors.NONE, results

    # -- online migration with consumer groups --------------------------------------------
    def hand_over(
        self,
        group_id: str,
        max_members: int,
        adopt: Callable[[int, list[ClassicMemberSnapshot]], None],
    ) -> bool:
        """Gives the group's members to a consumer group (an upgrade): `adopt` gets its
        generation and members under the group's lock; the group itself stays here, empty,
        with its offsets. False when it cannot move: not of the consumer protocol, or too
        large (True, and nothing adopted, when it has no members any more)."""
        group = self.get_group(group_id)
        if group is None:
            return True
        answers: list[tuple[ResponseCallback, dict[str, Any]]] = []
        with group.lock:
            if not group.members:
                return True
            if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                log.info(
                    "Cannot upgrade classic group %s: it does not use the consumer protocol",
                    group_id,
                )
                return False
            if len(group.members) > max_members:
                log.info("Cannot upgrade classic group %s: too many members", group_id)
                return False
            snapshots = []
            for m in group.members.values():
                if m.awaiting_join is not None:
                    answers.append(
                        (m.awaiting_join, join_error(m.member_id, Errors.REBALANCE_IN_PROGRESS))
                    )
                if m.awaiting_sync is not None:
                    answers.append((m.awaiting_sync, sync_error(Errors.REBALANCE_IN_PROGRESS)))
                m.awaiting_join = m.awaiting_sync = None
                protocol = group.protocol_name
                if protocol is None or protocol not in {n for n, _ in m.supported_protocols}:
                    protocol = m.supported_protocols[0][0]
                snapshots.append(
                    ClassicMemberSnapshot(
                        member_id=m.member_id,
                        instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        rebalance_timeout_ms=m.rebalance_timeout_ms,
                        session_timeout_ms=m.session_timeout_ms,
                        protocols=list(m.supported_protocols),
                        subscription=m.metadata(protocol),
                        assignment=m.assignment,
                    )
                )
            adopt(group.generation_id, snapshots)
            # Its members' deadlines find nobody; a pending rebalance is void.
            group.members.clear()
            group.static_members.clear()
            group.pending_members.clear()
            group.leader_id = group.protocol_name = None
            group.join_op = None
            group.state = GroupState.EMPTY
            group.current_state_timestamp = self.time.milliseconds()
            self._store_group(group)
        for callback, response in answers:
            callback(response)
        return True

    def take_over(
        self, group_id: str, generation: int, members: list[ClassicMemberSnapshot]
    ) -> None:
        """A consumer group of classic members becomes a classic group (a downgrade) at
        `generation`, with their assignments, and rebalances at once."""
        actions: list[Action] = []
        while True:
            group = self._get_or_create(group_id)
            with group.lock:
                if group.is_(GroupState.DEAD):
                    continue
                group.generation_id = generation
                for snap in members:
                    member = MemberMetadata(
                        member_id=snap.member_id,
                        group_instance_id=snap.instance_id,
                        client_id=snap.client_id,
                        client_host=snap.client_host,
                        rebalance_timeout_ms=snap.rebalance_timeout_ms,
                        session_timeout_ms=snap.session_timeout_ms,
                        protocol_type=CONSUMER_PROTOCOL_TYPE,
                        supported_protocols=list(snap.protocols),
                        last_heartbeat=self.time.monotonic(),
                    )
                    group.add(member, None)
                group.protocol_type = CONSUMER_PROTOCOL_TYPE
                group.protocol_name = group.select_protocol()
                for snap in members:
                    member = group.members[snap.member_id]
                    metadata = member.metadata(group.protocol_name)
                    version = int.from_bytes(metadata[:2], "big") if len(metadata) >= 2 else 0
                    member.assignment = encode_assignment(
                        decode_assignment(snap.assignment), version
                    )
                group.state = GroupState.STABLE
                group.current_state_timestamp = self.time.milliseconds()
                self._store_group(group)
                for member in group.members.values():
                    self._schedule_heartbeat(group, member, actions)
                self._prepare_rebalance(
                    group, f"Downgrade group {group_id} from consumer to classic.", actions
                )
            break
        self._run(actions)

    # -- offsets ----------------------------------------------------------------------------
    def handle_commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
        callback: CommitCallback,
    ) -> None:
        """OffsetCommit: `callback(errors by partition)` runs once the offsets are in
        the ISR of `__consumer_offsets` (or their write failed), from whichever thread
        completes the write; the group's lock is not held meanwhile."""

        def all_(error: Errors) -> None:
            callback(dict.fromkeys(offsets, error))

        if not group_id:
            return all_(Errors.INVALID_GROUP_ID)
        group = self.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(Errors.ILLEGAL_GENERATION)
            # A simple consumer (assign() + commit): the group exists only to hold offsets.
            group = self._get_or_create(group_id)
        with group.lock:
            if group.is_(GroupState.DEAD):
                return all_(Errors.COORDINATOR_NOT_AVAILABLE)
            if not (generation_id < 0 and group.is_(GroupState.EMPTY)):
                if group.is_(GroupState.COMPLETING_REBALANCE):
                    return all_(Errors.REBALANCE_IN_PROGRESS)
                error = self._validate_member(group, member_id, group_instance_id, generation_id)
                if error is not Errors.NONE:
                    return all_(error)
                group.members[member_id].last_heartbeat = self.time.monotonic()
            results, accepted = self._filter_offsets(offsets)
            group.commits_written += 1
            order = group.commits_written

            def stored(error: Errors) -> None:
                # Kafka's putCacheCallback: the offsets count once the ISR has them,
                # unless a commit written after them completed first.
                error = offset_commit_error(error)
                with group.lock:
                    if error is Errors.NONE and not group.is_(GroupState.DEAD):
                        for tp, o in accepted.items():
                            if group.commit_applied.get(tp, 0) < order:
                                group.commit_applied[tp] = order
                                group.offsets[tp] = o
                callback({tp: error if tp in accepted else e for tp, e in results.items()})

            # Appended under the group's lock, so the order above is the log's; the wait
            # for the ISR is the produce purgatory's, whose checks take no group lock.
            self.store.store_offsets(group_id, accepted, stored)

    def _filter_offsets(
        self, offsets: dict[tuple[str, int], OffsetAndMetadata]
    ) -> tuple[dict[tuple[str, int], Errors], dict[tuple[str, int], OffsetAndMetadata]]:
        """Each partition's error so far, and the offsets whose metadata fits."""
        results: dict[tuple[str, int], Errors] = {}
        accepted: dict[tuple[str, int], OffsetAndMetadata] = {}
        for tp, o in offsets.items():
            if len(o.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[tp] = Errors.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = o
                results[tp] = Errors.NONE
        return results, accepted

    def handle_txn_commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        producer_id: int,
        producer_epoch: int,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
        callback: CommitCallback,
    ) -> None:
        """TxnOffsetCommit: the offsets are written to `__consumer_offsets` in the
        producer's transaction and become the group's committed offsets only when its
        commit marker arrives (`complete_txn_offsets`). `callback` as for OffsetCommit."""
        if not group_id:
            return callback(dict.fromkeys(offsets, Errors.INVALID_GROUP_ID))
        consumer_check = (
            self.consumer_groups.validate_commit(
                group_id, member_id, generation_id, transactional=True
            )
            if self.consumer_groups is not None
            else None
        )
        if consumer_check is not None and consumer_check is not Errors.NONE:
            return callback(dict.fromkeys(offsets, consumer_check))
        group = self._get_or_create(group_id)
        with group.lock:
            if group.is_(GroupState.DEAD):
                return callback(dict.fromkeys(offsets, Errors.COORDINATOR_NOT_AVAILABLE))
            if consumer_check is None and generation_id >= 0 and member_id:
                # v3+ carries the member's generation: a zombie member is fenced.
                error = self._validate_member(group, member_id, group_instance_id, generation_id)
                if error is not Errors.NONE:
                    return callback(dict.fromkeys(offsets, error))
        results, accepted = self._filter_offsets(offsets)
        if not accepted:
            return callback(results)

        def stored(error: Errors) -> None:
            error = offset_commit_error(error)
            if error is Errors.NONE:
                with self._groups_lock:
                    pending = self._pending_txn_offsets.setdefault(producer_id, {})
                    pending.setdefault(group_id, {}).update(accepted)
            callback({tp: error if tp in accepted else e for tp, e in results.items()})

        self.store.store_txn_offsets(group_id, producer_id, producer_epoch, accepted, stored)

    def pending_txn_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """Partitions with a TxnOffsetCommit awaiting its transaction's outcome (an
        OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them)."""
        with self._groups_lock:
            return {
                tp
                for groups in self._pending_txn_offsets.values()
                for tp in groups.get(group_id, {})
            }

    def complete_txn_offsets(self, producer_id: int, commit: bool) -> None:
        """The transaction marker of `producer_id` reached `__consumer_offsets`: its
        pending offsets become committed (commit) or are dropped (abort)."""
        with self._groups_lock:
            pending = self._pending_txn_offsets.pop(producer_id, {})
        if not commit:
            return
        for group_id, offsets in pending.items():
            group = self._get_or_create(group_id)
            with group.lock:
                group.offsets.update(offsets)

    def handle_fetch_offsets(
        self, group_id: str, partitions: list[tuple[str, int]] | None
    ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        """Committed offsets (all of the group's when `partitions` is None); an unknown
        group or partition has None, which the wire shows as offset -1 without error."""
        group = self.get_group(group_id)
        if group is None:
            return {} if partitions is None else dict.fromkeys(partitions)
        with group.lock:
            if partitions is None:
                return dict(group.offsets)
            return {tp: group.offsets.get(tp) for tp in partitions}

    def handle_delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[Errors, dict[tuple[str, int], Errors]]:
        group = self.get_group(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return Errors.GROUP_ID_NOT_FOUND, {}
        with group.lock:
            subscribed: set[str] = set()
            if not group.is_(GroupState.EMPTY):
                if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                    return Errors.NON_EMPTY_GROUP, {}
                subscribed = group.subscribed_topics() or set()
            results: dict[tuple[str, int], Errors] = {}
            removed = []
            for tp in partitions:
                if tp[0] in subscribed:
                    results[tp] = Errors.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    results[tp] = Errors.NONE
                    if group.offsets.pop(tp, None) is not None:
                        removed.append(tp)
            self.store.delete_offsets(group_id, removed)
            return Errors.NONE, results

    def expire_offsets(self, now: int | None = None) -> int:
        """Kafka's offset retention: an Empty group's offsets go `offsets.retention.minutes`
        after it became empty; a simple group's (no protocol) that long after each commit;
        offsets with an explicit expire time at that time. Empty groups without offsets die."""
        now = self.time.milliseconds() if now is None else now
        retention = self.config.offsets_retention_ms
        expired_total = 0
        for group in self.groups():
            with group.lock:
                if not group.is_(GroupState.EMPTY):
                    continue
                expired = []
                for tp, o in group.offsets.items():
                    if o.expire_timestamp is not None:
                        deadline = o.expire_timestamp
                    elif group.protocol_type and group.current_state_timestamp is not None:
                        deadline = group.current_state_timestamp + retention
                    else:
                        deadline = o.commit_timestamp + retention
                    if deadline <= now:
                        expired.append(tp)
                for tp in expired:
                    del group.offsets[tp]
                self.store.delete_offsets(group.group_id, expired)
                expired_total += len(expired)
                if not group.offsets and not group.members:
                    group.transition_to(GroupState.DEAD)
                    self.store.delete_group(group)
                    self._remove_group(group)
        if expired_total:
            log.info("Removed %d expired offset(s)", expired_total)
        return expired_total

    def _expiry_loop(self) -> None:
        interval = self.config.offsets_retention_check_interval_ms / 1000
        while not self._expiry_stop.wait(interval):
            try:
                self.expire_offsets()
            except Exception:
                log.exception("Offset expiration failed")

    # -- admin ------------------------------------------------------------------------------
    def handle_delete_groups(self, group_ids: list[str]) -> dict[str, Errors]:
        results: dict[str, Errors] = {}
        for group_id in group_ids:
            group = self.get_group(group_id)
            if group is None:
                results[group_id] = Errors.GROUP_ID_NOT_FOUND
                continue
            with group.lock:
                if group.is_(GroupState.DEAD):
                    results[group_id] = Errors.GROUP_ID_NOT_FOUND
                elif not group.is_(GroupState.EMPTY):
                    results[group_id] = Errors.NON_EMPTY_GROUP
                else:
                    group.transition_to(GroupState.DEAD)
                    self.store.delete_group(group)
                    group.offsets.clear()
                    self._remove_group(group)
                    results[group_id] = Errors.NONE
        return results

    def describe_group(self, group_id: str) -> dict[str, Any]:
        group = self.get_group(group_id)
        if group is None:
            return {
                "error_code": 0,
                "group_id": group_id,
                "group_state": GroupState.DEAD.value,
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            }
        with group.lock:
            stable = group.is_(GroupState.STABLE)
            members = []
            for m in group.members.values():
                members.append(
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        # Metadata and assignment only mean something once Stable.
                        "member_metadata": m.metadata(group.protocol_name)
                        if stable and group.protocol_name
                        else b"",
                        "member_assignment": m.assignment if stable else b"",
                    }
                )
            return {
                "error_code": 0,
                "group_id": group_id,
                "group_state": group.state.value,
                "protocol_type": group.protocol_type or "",
                "protocol_data": (group.protocol_name or "") if stable else "",
                "members": members,
            }

    def list_groups(self, states: set[str] | None = None) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group, optionally of some states
        (matched case-insensitively, as Kafka does)."""
        wanted = {s.lower() for s in states} if states else None
        out = []
        for group in self.groups():
            with group.lock:
                if group.is_(GroupState.DEAD):
                    continue
                if wanted is not None and group.state.value.lower() not in wanted:
                    continue
                out.append((group.group_id, group.protocol_type or "", group.state.value))
        return sorted(out)

    # -- persistence ------------------------------------------------------------------------
    def _store_group(
        self, group: GroupMetadata, assignment: dict[str, bytes] | None = None
    ) -> None:
        """Writes the group's metadata without waiting for it (Kafka only warns when
        these writes fail: the previous generation in the log stays valid)."""
        if assignment is None:
            assignment = {m.member_id: m.assignment for m in group.members.values()}
        self.store.store_group(group, assignment)
