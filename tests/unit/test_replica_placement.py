"""Replica placement (Kafka's AdminUtils.assignReplicasToBrokers): distinct replicas,
leaders spread evenly, each partition over as many racks as it can, added partitions
continuing the leaders' round, and the refusals."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkars.controller.replica_placement import assign_replicas, rack_alternated_brokers
from kafkars.protocol import Errors, KafkaError


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict[int, str | None], int, int, int]:
    """Brokers (all racked or none), a partition count, a replication factor, a seed."""
    size = draw(st.integers(1, 12))
    ids = draw(st.lists(st.integers(0, 100), min_size=size, max_size=size, unique=True))
    if draw(st.booleans()):
        names = st.sampled_from(["r1", "r2", "r3", "r4"])
        brokers: dict[int, str | None] = {b: draw(names) for b in ids}
    else:
        brokers = dict.fromkeys(ids)
    return brokers, draw(st.integers(1, 40)), draw(st.integers(1, size)), draw(st.integers())


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_replicas_are_distinct_spread_over_racks_and_leaders_balanced(
    case: tuple[dict[int, str | None], int, int, int],
) -> None:
    brokers, partitions, factor, seed = case
    out = assign_replicas(brokers, partitions, factor, rng=random.Random(seed))
    assert sorted(out) == list(range(partitions))
    racks = {b: r for b, r in brokers.items() if r is not None}
    rack_count = len(set(racks.values()))
    for replicas in out.values():
        assert len(replicas) == factor and len(set(replicas)) == factor
        assert set(replicas) <= set(brokers)
        if racks:
            # Every rack before any rack twice.
            assert len({racks[b] for b in replicas}) == min(factor, rack_count)
    # Leaders go round-robin: no broker leads two more partitions than another.
    leaders = Counter(r[0] for r in out.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=200, deadline=None)
@given(clusters(), st.integers(1, 20), st.data())
def test_added_partitions_continue_the_leaders_round_robin(
    case: tuple[dict[int, str | None], int, int, int], more: int, data: st.DataObject
) -> None:
    brokers, partitions, factor, _ = case
    start = data.draw(st.integers(0, len(brokers) - 1))
    whole = assign_replicas(brokers, partitions + more, factor, fixed_start_index=start)
    first = assign_replicas(brokers, partitions, factor, fixed_start_index=start)
    added = assign_replicas(
        brokers, more, factor, start_partition=partitions, fixed_start_index=start
    )
    # Leaders go on where the first partitions left them. (Followers need not match: as in
    # Kafka, the follower shift restarts from the fixed start rather than replaying the
    # rounds before `start_partition`.)
    assert {p: r[0] for p, r in {**first, **added}.items()} == {p: r[0] for p, r in whole.items()}
    assert all(len(set(r)) == factor for r in added.values())


def test_without_racks_the_round_robin_shifts_followers_after_each_round() -> None:
    out = assign_replicas(dict.fromkeys(range(5)), 10, 3, fixed_start_index=0)
    assert out[0] == [0, 1, 2] and out[4] == [4, 0, 1]
    # The second round: followers one further away, so pairs are not repeated.
    assert out[5] == [0, 2, 3] and out[9] == [4, 1, 2]


def test_racks_alternate_and_each_partition_spans_them() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assert rack_alternated_brokers(racks) == [1, 3, 5, 2, 4, 6]
    assert rack_alternated_brokers({7: "z", 1: "y", 2: "y", 3: "y"}) == [1, 7, 2, 3]
    out = assign_replicas(racks, 6, 3, fixed_start_index=0)
    assert out[0] == [1, 3, 5] and out[1] == [3, 5, 2]
    for replicas in out.values():
        assert sorted(racks[b] for b in replicas) == ["a", "b", "c"]
    # Every broker holds the same number of replicas: 6 partitions x 3 over 6 brokers.
    assert set(Counter(b for r in out.values() for b in r).values()) == {3}


def test_a_rack_short_of_brokers_still_gets_replicas_on_distinct_brokers() -> None:
    racks = {1: "a", 2: "a", 3: "a", 4: "b"}
    for replicas in assign_replicas(racks, 8, 3, rng=random.Random(3)).values():
        assert len(set(replicas)) == 3 and 4 in replicas


def test_refusals() -> None:
    with pytest.raises(KafkaError) as e:
        assign_replicas({1: "a", 2: None, 3: "b"}, 3, 2)
    assert e.value.code == Errors.UNKNOWN_SERVER_ERROR and "[2]" in (e.value.message or "")
    with pytest.raises(KafkaError) as e:
        assign_replicas({1: None, 2: None}, 3, 3)
    assert e.value.code == Errors.INVALID_REPLICATION_FACTOR
    with pytest.raises(KafkaError) as e:
        assign_replicas({1: None}, 0, 1)
    assert e.value.code == Errors.INVALID_PARTITIONS
