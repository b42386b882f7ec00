"""The controller's reassignment plan (KIP-455) as pure functions over replica lists."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkars.controller.reassignment import (
    ReplicaAssignment,
    complete,
    invalid_target,
    leader_after,
    plan,
)
from kafkars.zk.zk_data import TopicAssignment

replica_lists = st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True)


@given(replica_lists, replica_lists)
def test_plan_is_the_union_with_the_target_first(original: list[int], target: list[int]) -> None:
    moving = plan(ReplicaAssignment(original, [], []), target)
    assert moving.replicas[: len(target)] == target
    assert set(moving.replicas) == set(original) | set(target)
    assert moving.target == target
    assert moving.original == [b for b in moving.replicas if b in original]
    assert set(moving.adding) == set(target) - set(original)
    assert set(moving.removing) == set(original) - set(target)


@given(replica_lists, replica_lists, replica_lists)
def test_a_second_move_starts_from_the_first_ones_original(
    original: list[int], first: list[int], second: list[int]
) -> None:
    moving = plan(plan(ReplicaAssignment(original, [], []), first), second)
    assert set(moving.original) == set(original)
    assert moving.target == second


def test_cancel_is_a_move_back_to_the_original() -> None:
    moving = plan(ReplicaAssignment([1, 2], [], []), [2, 3])
    assert moving == ReplicaAssignment([2, 3, 1], [3], [1])
    # As in Kafka, the original order is not kept (the union lists the target first):
    # the cancelled partition gets [2, 1] back, so its preferred leader may change.
    assert plan(moving, moving.original) == ReplicaAssignment([2, 1], [], [])


def test_complete_and_the_leader_afterwards() -> None:
    moving = ReplicaAssignment([2, 3, 1], [3], [1])
    assert not complete(moving, [1, 2])
    assert complete(moving, [1, 2, 3])
    # The leader leaves: the first live target replica in the ISR takes over.
    assert leader_after(moving, 1, [1, 2, 3], {1, 2, 3}) == 2
    assert leader_after(moving, 1, [1, 3], {1, 3}) == 3
    assert leader_after(moving, 2, [1, 2, 3], {1, 2, 3}) == 2
    assert leader_after(moving, 1, [1], {1}) is None


def test_invalid_targets() -> None:
    assert invalid_target([], {1}) is not None
    assert invalid_target([1, 1], {1}) is not None
    assert "[9]" in (invalid_target([1, 9], {1, 2}) or "")
    assert invalid_target([2, 1], {1, 2}) is None


def test_the_topic_znode_keeps_adding_and_removing_replicas() -> None:
    import uuid

    a = TopicAssignment(uuid.uuid4(), {0: [2, 3, 1], 1: [1, 2]}, {0: [3]}, {0: [1]})
    back = TopicAssignment.decode(a.encode())
    assert back == a
    assert back.is_reassigning(0) and not back.is_reassigning(1)
    assert back.target_replicas(0) == [2, 3] and back.original_replicas(0) == [2, 1]
