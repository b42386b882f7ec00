"""The coordinator records' bytes, encoded by the messages generated from Kafka's schemas,
are exactly those the hand-written encoders they replaced produced (captured from that
code), and decode back to what was written."""

from __future__ import annotations

import uuid

import pytest

from kafkars.coordinator.group import consumer_group_records as c
from kafkars.coordinator.group import records as r
from kafkars.coordinator.group.group_metadata import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
)
from kafkars.coordinator.transaction import records as t
from kafkars.coordinator.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
)

# Hex of each case below, written by the hand-written `struct` encoders (and the Rust
# TransactionLogValue encoder) before they were replaced.
EXPECTED = {
    "offset_key": "0001000267310008746f7069632dc3a900000007",
    "group_key": "000200026731",
    "offset_v3": "0003000000000000002a0000000500046d6574610000018bcfe56800",
    "offset_v3_empty_meta": "00030000000000000000ffffffff00000000000000000001",
    "offset_v1": "0001000000000000002b00016d0000018bcfe568010000018bcfee8fc0",
    "group_value": (
        "00030008636f6e73756d657200000003000572616e676500026d310000018bcfe568020000000200"
        "026d31ffff0007636c69656e7431000a2f3132372e302e302e31000493e00000afc8000000030001"
        "0100000008000161737369676e00026d320006696e73742d320007636c69656e7432000a2f313237"
        "2e302e302e31000493e00000afc80000000300010200000000"
    ),
    "group_value_empty": "0003000000000000ffffffffffffffffffffffff00000000",
    "cg_key3": "000300026731",
    "cg_key5": "00050002673100056d656d2d31",
    "cg_meta": "00000000000c00",
    "cg_member_plain": (
        "000000057261636b04636964092f312e322e332e340302610262000000afc808756e69666f726d01000100"
    ),
    "cg_member_regex": "000005696e73740004636964092f312e322e332e340106666f6f2e2a000075300001000100",
    "cg_member_classic": (
        "0000000004636964032f68020274000000afc80001001e0100002710030672616e6765030001000b"
        "726f756e64726f62696e010000"
    ),
    "cg_target_meta": "00000000000900",
    "cg_target_member": (
        "0000030123456789abcdef0123456789abcdef020000000000fedcba98765432100123456789abcd"
        "ef0300000001000000030000"
    ),
    "cg_target_member_empty": "00000100",
    "cg_current": (
        "0000000000050000000401020123456789abcdef0123456789abcdef0300000000000000020002fe"
        "dcba98765432100123456789abcdef02000000010000"
    ),
    "txn_key": "0000000574786e2d31",
    "txn_ongoing": (
        "000000000000000003e800030000ea60010000000200016100000002000000000000000100016200"
        "000001000000020000018bcfe568050000018bcfe56800"
    ),
    "txn_empty": "000000000000000003e900000000ea6000ffffffff0000018bcfe56806ffffffffffffffff",
}


def encode_all() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    T1 = uuid.UUID("0123456789abcdef0123456789abcdef")
    T2 = uuid.UUID("fedcba98765432100123456789abcdef")
    out = {}
    out["offset_key"] = r.offset_commit_key("g1", "topic-é", 7)
    out["group_key"] = r.group_metadata_key("g1")
    out["offset_v3"] = r.offset_commit_value(OffsetAndMetadata(42, 5, "meta", 1700000000000))
    out["offset_v3_empty_meta"] = r.offset_commit_value(OffsetAndMetadata(0, -1, "", 1))
    out["offset_v1"] = r.offset_commit_value(
        OffsetAndMetadata(43, 5, "m", 1700000000001, 1700000600000)
    )
    g = GroupMetadata("g1", GroupState.STABLE)
    g.protocol_type = "consumer"
    g.generation_id = 3
    g.protocol_name = "range"
    g.current_state_timestamp = 1700000000002
    for i, inst in ((1, None), (2, "inst-2")):
        g.add(
            MemberMetadata(
                f"m{i}",
                inst,
                f"client{i}",
                "/127.0.0.1",
                300000,
                45000,
                "consumer",
                [("range", bytes([0, 1, i]))],
            ),
            None,
        )
    g.leader_id = "m1"
    out["group_value"] = r.group_metadata_value(g, {"m1": b"\x00\x01assign", "m2": b""})
    e = GroupMetadata("g2", GroupState.EMPTY)
    e.protocol_type = None
    e.generation_id = 0
    e.protocol_name = None
    e.leader_id = None
    e.current_state_timestamp = None
    out["group_value_empty"] = r.group_metadata_value(e, {})
    out["cg_key3"] = c.key(3, "g1")
    out["cg_key5"] = c.key(5, "g1", "mem-1")
    out["cg_meta"] = c.group_metadata_value(12)
    out["cg_member_plain"] = c.member_metadata_value(
        c.MemberMetadata(None, "rack", "cid", "/1.2.3.4", ["a", "b"], None, 45000, "uniform")
    )
    out["cg_member_regex"] = c.member_metadata_value(
        c.MemberMetadata("inst", None, "cid", "/1.2.3.4", [], "foo.*", 30000, None)
    )
    out["cg_member_classic"] = c.member_metadata_value(
        c.MemberMetadata(
            None,
            None,
            "cid",
            "/h",
            ["t"],
            None,
            45000,
            None,
            10000,
            [("range", b"\x00\x01"), ("roundrobin", b"")],
        )
    )
    out["cg_target_meta"] = c.target_assignment_metadata_value(9)
    out["cg_target_member"] = c.target_assignment_member_value({T2: [3, 1], T1: [0]})
    out["cg_target_member_empty"] = c.target_assignment_member_value({})
    out["cg_current"] = c.current_assignment_value(
        c.CurrentAssignment(5, 4, 1, {T1: [0, 2]}, {T2: [1]})
    )
    out["txn_key"] = t.key("txn-1")
    tx = TransactionMetadata(
        "txn-1",
        1000,
        3,
        60000,
        TransactionState.ONGOING,
        {("a", 1), ("a", 0), ("b", 2)},
        1700000000000,
        1700000000005,
    )
    out["txn_ongoing"] = t.value(tx)
    tx2 = TransactionMetadata(
        "txn-2", 1001, 0, 60000, TransactionState.EMPTY, set(), -1, 1700000000006
    )
    out["txn_empty"] = t.value(tx2)
    return out


ENCODED = encode_all()


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_bytes_match_the_replaced_encoders(case: str) -> None:
    assert ENCODED[case].hex() == EXPECTED[case]


def test_classic_group_records_decode_back() -> None:
    assert r.read_key(ENCODED["offset_key"]) == r.OffsetKey("g1", "topic-é", 7)
    assert r.read_key(ENCODED["group_key"]) == r.GroupKey("g1")
    assert r.read_key(ENCODED["cg_key3"]) is None
    assert r.read_offset_commit_value(ENCODED["offset_v3"]) == OffsetAndMetadata(
        42, 5, "meta", 1700000000000
    )
    assert r.read_offset_commit_value(ENCODED["offset_v1"]) == OffsetAndMetadata(
        43, -1, "m", 1700000000001, 1700000600000
    )
    g = r.read_group_metadata_value("g1", ENCODED["group_value"])
    assert (g.protocol_type, g.generation_id, g.protocol_name, g.leader_id) == (
        "consumer",
        3,
        "range",
        "m1",
    )
    assert g.current_state_timestamp == 1700000000002
    assert [(m.member_id, m.group_instance_id, m.assignment) for m in g.members.values()] == [
        ("m1", None, b"\x00\x01assign"),
        ("m2", "inst-2", b""),
    ]
    assert g.members["m2"].supported_protocols == [("range", bytes([0, 1, 2]))]
    empty = r.read_group_metadata_value("g2", ENCODED["group_value_empty"])
    assert empty.state is GroupState.EMPTY and not empty.members


def test_consumer_group_records_decode_back() -> None:
    assert c.read_key(ENCODED["cg_key5"]) == c.Key(5, "g1", "mem-1")
    assert c.read_key(ENCODED["cg_key3"]) == c.Key(3, "g1", None)
    assert c.read_epoch(ENCODED["cg_meta"]) == 12
    assert c.read_epoch(ENCODED["cg_target_meta"]) == 9
    classic = c.read_member_metadata(ENCODED["cg_member_classic"])
    assert classic.classic_session_timeout_ms == 10000
    assert classic.classic_protocols == [("range", b"\x00\x01"), ("roundrobin", b"")]
    plain = c.read_member_metadata(ENCODED["cg_member_plain"])
    assert plain.classic_protocols is None and plain.subscribed_topic_names == ["a", "b"]
    assert (plain.rack_id, plain.server_assignor) == ("rack", "uniform")
    t1 = uuid.UUID("0123456789abcdef0123456789abcdef")
    t2 = uuid.UUID("fedcba98765432100123456789abcdef")
    assert c.read_target_assignment_member(ENCODED["cg_target_member"]) == {t1: [0], t2: [1, 3]}
    assert c.read_current_assignment(ENCODED["cg_current"]) == c.CurrentAssignment(
        5, 4, 1, {t1: [0, 2]}, {t2: [1]}
    )


def test_transaction_records_decode_back() -> None:
    assert t.read_key(ENCODED["txn_key"]) == "txn-1"
    assert t.read_key(ENCODED["group_key"]) is None
    txn = t.read_value("txn-1", ENCODED["txn_ongoing"])
    assert txn.state is TransactionState.ONGOING
    assert txn.partitions == {("a", 0), ("a", 1), ("b", 2)}
    assert (txn.producer_id, txn.producer_epoch, txn.txn_timeout_ms) == (1000, 3, 60000)
    empty = t.read_value("txn-2", ENCODED["txn_empty"])
    assert empty.state is TransactionState.EMPTY and not empty.partitions


def test_undecodable_bytes_raise_value_error() -> None:
    with pytest.raises(ValueError):
        r.read_offset_commit_value(ENCODED["offset_v3"][:-3])
    with pytest.raises(ValueError):
        r.read_offset_commit_value(b"\x00\x09" + ENCODED["offset_v3"][2:])  # no such version
    with pytest.raises(ValueError):
        t.read_value("x", b"\x00")
