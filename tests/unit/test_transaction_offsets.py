"""TxnOffsetCommit in the group coordinator: offsets committed in a transaction become
the group's only when its commit marker arrives, and are dropped on abort."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkars.coordinator.clock import MockTime
from kafkars.coordinator.group import GroupCoordinator
from kafkars.coordinator.group.group_coordinator import GroupConfig
from kafkars.coordinator.group.group_metadata import OffsetAndMetadata
from kafkars.coordinator.group.group_metadata_manager import GroupStore
from kafkars.protocol import Errors


def answered(call: Callable[..., None], *args: Any) -> Any:
    """Calls a coordinator method that answers through a callback (its last argument)
    and returns the answer, which these stores give at once."""
    answers: list[Any] = []
    call(*args, answers.append)
    assert len(answers) == 1
    return answers[0]


class RecordingStore(GroupStore):
    def __init__(self) -> None:
        self.transactional: list[tuple[str, int, int, int]] = []

    def append_transactional(
        self,
        group_id: str,
        batch: list[tuple[bytes, bytes | None]],
        pid: int,
        epoch: int,
        done: Callable[[Errors], None] | None = None,
    ) -> None:
        self.transactional.append((group_id, pid, epoch, len(batch)))
        if done is not None:
            done(Errors.NONE)


def coordinator() -> tuple[GroupCoordinator, RecordingStore]:
    store = RecordingStore()
    c = GroupCoordinator(GroupConfig(), store, MockTime())
    c.startup(load=False, expire_offsets=False)
    return c, store


def commit(c: GroupCoordinator, pid: int, offset: int) -> dict[tuple[str, int], Errors]:
    offsets = {("t", 0): OffsetAndMetadata(offset), ("t", 1): OffsetAndMetadata(offset + 1)}
    return answered(c.handle_txn_commit_offsets, "g", "", None, -1, pid, 0, offsets)


def test_offsets_are_committed_by_the_commit_marker() -> None:
    c, store = coordinator()
    assert set(commit(c, 7, 10).values()) == {Errors.NONE}
    assert store.transactional == [("g", 7, 0, 2)]
    assert c.handle_fetch_offsets("g", [("t", 0)]) == {("t", 0): None}
    assert c.pending_txn_partitions("g") == {("t", 0), ("t", 1)}
    c.complete_txn_offsets(7, commit=True)
    assert c.handle_fetch_offsets("g", [("t", 0)])[("t", 0)].offset == 10  # type: ignore[union-attr]
    assert c.pending_txn_partitions("g") == set()


def test_offsets_are_dropped_by_the_abort_marker() -> None:
    c, _ = coordinator()
    commit(c, 7, 10)
    c.complete_txn_offsets(7, commit=True)
    commit(c, 7, 20)
    c.complete_txn_offsets(7, commit=False)
    assert c.handle_fetch_offsets("g", [("t", 0)])[("t", 0)].offset == 10  # type: ignore[union-attr]
    # Another producer's marker leaves them alone.
    commit(c, 8, 30)
    c.complete_txn_offsets(7, commit=True)
    assert c.pending_txn_partitions("g") == {("t", 0), ("t", 1)}


def test_a_stale_member_generation_is_refused() -> None:
    c, store = coordinator()
    offsets = {("t", 0): OffsetAndMetadata(1)}
    result = answered(c.handle_txn_commit_offsets, "g", "gone-member", None, 3, 7, 0, offsets)
    assert result[("t", 0)] is not Errors.NONE
    assert store.transactional == []
