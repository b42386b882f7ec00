"""The group coordinator's delayed operations, run on the Rust purgatory.

Lock order: an operation's callbacks take the group lock; the coordinator never calls
into a purgatory while holding a group lock (it queues the call and makes it after
releasing), so the purgatory's per-operation lock and the group lock cannot cross.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkars.coordinator.group.group_coordinator import GroupCoordinator
    from kafkars.coordinator.group.group_metadata import GroupMetadata

log = logging.getLogger("kafkars.coordinator.group.GroupCoordinator")


class DelayedJoin:
    """Waits for every known member to rejoin, at most the longest rebalance timeout.
    Completes early when the last member's JoinGroup arrives (`check_and_complete`)."""

    def __init__(self, coordinator: GroupCoordinator, group: GroupMetadata, delay_ms: int) -> None:
        self.coordinator = coordinator
        self.group = group
        self.delay_ms = delay_ms

    def try_complete(self) -> bool:
        with self.group.lock:
            return self.group.join_op is not self or self.group.has_all_members_joined()

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        try:
            self.coordinator.on_complete_join(self.group, self)
        except Exception:
            log.exception("Completing the join of %s failed", self.group.group_id)
            self.coordinator.fail_pending(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an empty group waits `group.initial.rebalance.delay.ms`,
    again each time a new member arrives, up to the rebalance timeout: a group whose
    consumers start together then settles in one generation."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        group: GroupMetadata,
        delay_ms: int,
        configured_delay_ms: int,
        remaining_ms: int,
    ) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.configured_delay_ms = configured_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        with self.group.lock:
            return self.group.join_op is not self

    def on_complete(self) -> None:
        try:
            self.coordinator.on_initial_join_expired(self.group, self)
        except Exception:
            log.exception("Completing the initial join of %s failed", self.group.group_id)
            self.coordinator.fail_pending(self.group)


class DelayedTimeout:
    """A timer-only operation (heartbeat and sync deadlines): runs `callback` when
    `delay_ms` passes. The callback re-checks the group, so a stale one does nothing."""

    def __init__(self, delay_ms: int, callback: Callable[[], None]) -> None:
        self.delay_ms = max(0, delay_ms)
        self.callback = callback

    def try_complete(self) -> bool:
        return False

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        try:
            self.callback()
        except Exception:
            log.exception("Group coordinator timeout failed")
