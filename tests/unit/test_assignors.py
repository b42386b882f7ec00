"""The classic assignors on seed 003's worked examples, and their invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkars.assignors import (
    cooperative_sticky_assign,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)


def test_range_three_partitions_two_consumers() -> None:
    assert range_assign({"C0": ["T"], "C1": ["T"]}, {"T": 3}) == {
        "C0": [("T", 0), ("T", 1)],
        "C1": [("T", 2)],
    }


def test_range_fourteen_partitions_three_consumers() -> None:
    out = range_assign({c: ["T"] for c in ("C0", "C1", "C2")}, {"T": 14})
    assert [len(out[c]) for c in ("C0", "C1", "C2")] == [5, 5, 4]


def test_range_three_topics_skews_to_the_first_consumer() -> None:
    # Seed 003: 3 topics x 3 partitions over 2 consumers.
    subs = {"C1": ["T1", "T2", "T3"], "C2": ["T1", "T2", "T3"]}
    out = range_assign(subs, {"T1": 3, "T2": 3, "T3": 3})
    assert out["C1"] == [(t, p) for t in ("T1", "T2", "T3") for p in (0, 1)]
    assert out["C2"] == [("T1", 2), ("T2", 2), ("T3", 2)]


def test_roundrobin_even() -> None:
    subs = {"C1": ["T1", "T2"], "C2": ["T1", "T2"]}
    out = roundrobin_assign(subs, {"T1": 3, "T2": 3})
    assert out == {
        "C1": [("T1", 0), ("T1", 2), ("T2", 1)],
        "C2": [("T1", 1), ("T2", 0), ("T2", 2)],
    }


def test_roundrobin_uneven_subscriptions() -> None:
    # Seed 003's uneven case (the seed drops T2P1 from consumer 3 by a typo; Kafka's
    # RoundRobinAssignor gives it to consumer 3, the only other subscriber of T2).
    subs = {"C1": ["T1"], "C2": ["T1", "T2"], "C3": ["T1", "T2", "T3"]}
    out = roundrobin_assign(subs, {"T1": 1, "T2": 2, "T3": 3})
    assert out == {
        "C1": [("T1", 0)],
        "C2": [("T2", 0)],
        "C3": [("T2", 1), ("T3", 0), ("T3", 1), ("T3", 2)],
    }


def test_sticky_keeps_owned_partitions_when_a_member_joins() -> None:
    before = {"A": [("T", p) for p in range(3)], "B": [("T", p) for p in range(3, 6)]}
    subs = {"A": ["T"], "B": ["T"], "C": ["T"]}
    out = sticky_assign(subs, {"T": 6}, before)
    assert sorted(len(v) for v in out.values()) == [2, 2, 2]
    assert set(out["A"]) <= set(before["A"]) and set(out["B"]) <= set(before["B"])


def test_sticky_after_a_member_leaves() -> None:
    before = {"A": [("T", 0), ("T", 1)], "B": [("T", 2), ("T", 3)], "C": [("T", 4), ("T", 5)]}
    out = sticky_assign({"A": ["T"], "B": ["T"]}, {"T": 6}, before)
    assert set(before["A"]) <= set(out["A"]) and set(before["B"]) <= set(out["B"])
    assert sorted(len(v) for v in out.values()) == [3, 3]


def test_cooperative_sticky_withholds_moving_partitions() -> None:
    before = {"A": [("T", p) for p in range(6)]}
    subs = {"A": ["T"], "B": ["T"]}
    first = cooperative_sticky_assign(subs, {"T": 6}, before)
    assert len(first["A"]) == 3 and first["B"] == []  # A revokes 3 first
    second = cooperative_sticky_assign(subs, {"T": 6}, first)
    assert len(second["A"]) == 3 and len(second["B"]) == 3
    assert second["A"] == first["A"]


@given(
    members=st.integers(1, 8),
    partitions=st.dictionaries(st.sampled_from("abcd"), st.integers(0, 12), min_size=1),
)
def test_every_partition_once_and_balanced(members: int, partitions: dict[str, int]) -> None:
    subs = {f"m{i}": sorted(partitions) for i in range(members)}
    everything = sorted((t, p) for t, n in partitions.items() for p in range(n))
    for assign in (roundrobin_assign, sticky_assign):
        out = assign(subs, partitions)
        assert sorted(tp for tps in out.values() for tp in tps) == everything
        counts = [len(v) for v in out.values()]
        assert max(counts) - min(counts) <= 1
    out = range_assign(subs, partitions)
    assert sorted(tp for tps in out.values() for tp in tps) == everything


def test_consumer_protocol_formats() -> None:
    data = encode_assignment([("b", 1), ("a", 0), ("a", 2)])
    assert decode_assignment(data) == [("a", 0), ("a", 2), ("b", 1)]
    assert decode_assignment(b"") == []
    # ConsumerProtocolSubscription v1: topics, null user data, owned partitions.
    sub = (
        b"\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
        + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x03"
    )  # fmt: skip
    s = decode_subscription(sub)
    assert s.topics == ["t"] and s.user_data is None and s.owned_partitions == [("t", 3)]


def test_consumer_protocol_versions_and_bad_input() -> None:
    v3 = (
        b"\x00\x03" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02ud"
        + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x07" + b"\x00\x04rack"
    )  # fmt: skip
    s = decode_subscription(v3)
    assert (s.user_data, s.generation_id, s.rack_id) == (b"ud", 7, "rack")
    # A newer client's version is read as the newest known; what it appended is ignored.
    future = b"\x00\x09" + v3[2:] + b"new fields"
    assert decode_subscription(future).rack_id == "rack"
    # A hostile topic count is refused, not allocated.
    with pytest.raises(ValueError):
        decode_subscription(b"\x00\x00\x7f\xff\xff\xff")
    with pytest.raises(ValueError):
        decode_subscription(b"\x00")
