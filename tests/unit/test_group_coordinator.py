"""The classic group state machine (seed 003's transitions). The coordinator runs on a
MockTime: session, sync and rebalance deadlines fire exactly when a test advances the
clock past them, with no sleeping."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkars.coordinator.clock import MockTime
from kafkars.coordinator.group import GroupCoordinator, GroupState
from kafkars.coordinator.group.group_coordinator import GroupConfig
from kafkars.coordinator.group.group_metadata import GroupMetadata, OffsetAndMetadata
from kafkars.coordinator.group.group_metadata_manager import GroupStore
from kafkars.coordinator.group.records import (
    group_metadata_key,
    offset_commit_key,
    partition_for,
    read_group_metadata_value,
    read_key,
    read_offset_commit_value,
)
from kafkars.protocol import Errors

G = "group"
PROTOCOLS = [("range", b"sub-range"), ("roundrobin", b"sub-rr")]


def answered(call: Callable[..., None], *args: Any) -> Any:
    """Calls a coordinator method that answers through a callback (its last argument)
    and returns the answer, which these stores give at once."""
    answers: list[Any] = []
    call(*args, answers.append)
    assert len(answers) == 1
    return answers[0]


class Reply:
    """A response callback a test can wait on."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: dict[str, Any] = {}

    def __call__(self, response: dict[str, Any]) -> None:
        assert not self.event.is_set(), "answered twice"
        self.value = response
        self.event.set()

    def get(self, timeout: float = 5.0) -> dict[str, Any]:
        assert self.event.wait(timeout), "no response"
        return self.value

    @property
    def done(self) -> bool:
        return self.event.is_set()


class RecordingStore(GroupStore):
    def __init__(self) -> None:
        self.batches: list[list[tuple[bytes, bytes | None]]] = []

    def append(
        self,
        group_id: str,
        batch: list[tuple[bytes, bytes | None]],
        done: Callable[[Errors], None] | None = None,
    ) -> None:
        self.batches.append(batch)
        if done is not None:
            done(Errors.NONE)


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


@pytest.fixture
def clock() -> MockTime:
    return MockTime()


@pytest.fixture
def coordinator(store: RecordingStore, clock: MockTime) -> Iterator[GroupCoordinator]:
    c = GroupCoordinator(
        GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0, max_size=3),
        store,
        time=clock,
    )
    c.startup(expire_offsets=False)
    yield c
    c.shutdown()


def join(
    c: GroupCoordinator,
    member_id: str = "",
    *,
    session: int = 5000,
    rebalance: int = 5000,
    instance: str | None = None,
    protocols: list[tuple[str, bytes]] = PROTOCOLS,
    require_known: bool = False,
) -> Reply:
    reply = Reply()
    c.handle_join_group(
        G, member_id, instance, require_known, "client", "/127.0.0.1", rebalance, session,
        "consumer", protocols, reply,
    )  # fmt: skip
    return reply


def sync(
    c: GroupCoordinator, member_id: str, generation: int, assignment: dict[str, bytes] | None = None
) -> Reply:
    reply = Reply()
    c.handle_sync_group(G, generation, member_id, None, None, None, assignment or {}, reply)
    return reply


def group(c: GroupCoordinator) -> GroupMetadata:
    g = c.get_group(G)
    assert g is not None
    return g


def stable_group_of_two(c: GroupCoordinator, **kw: Any) -> tuple[str, str]:
    a = join(c, **kw).get()
    leader = a["member_id"]
    assert a["leader"] == leader and a["generation_id"] == 1
    sync(c, leader, 1, {leader: b"A"}).get()
    b = join(c, **kw)  # a new member: Stable -> PreparingRebalance, waits for the leader
    assert group(c).state is GroupState.PREPARING_REBALANCE and not b.done
    a2 = join(c, leader, **kw).get()
    follower = b.get()["member_id"]
    assert a2["generation_id"] == 2 and len(a2["members"]) == 2
    assert b.value["members"] == [] and b.value["leader"] == leader
    f_sync = sync(c, follower, 2)
    assert not f_sync.done  # a follower's SyncGroup waits for the leader's
    sync(c, leader, 2, {leader: b"A", follower: b"B"}).get()
    assert f_sync.get()["assignment"] == b"B"
    assert group(c).state is GroupState.STABLE
    return leader, follower


def test_first_joiner_leads_and_empty_to_stable(coordinator: GroupCoordinator) -> None:
    r = join(coordinator).get()
    assert r["error_code"] == 0 and r["leader"] == r["member_id"]
    assert r["member_id"].startswith("client-")
    assert r["protocol_name"] == "range"
    assert [m["metadata"] for m in r["members"]] == [b"sub-range"]
    assert group(coordinator).state is GroupState.COMPLETING_REBALANCE
    s = sync(coordinator, r["member_id"], 1, {r["member_id"]: b"x"}).get()
    assert s["error_code"] == 0 and s["assignment"] == b"x"
    assert group(coordinator).state is GroupState.STABLE


def test_two_members_and_generations(coordinator: GroupCoordinator) -> None:
    leader, follower = stable_group_of_two(coordinator)
    assert coordinator.handle_heartbeat(G, follower, None, 2) is Errors.NONE
    assert coordinator.handle_heartbeat(G, follower, None, 1) is Errors.ILLEGAL_GENERATION
    assert coordinator.handle_heartbeat(G, "nobody", None, 2) is Errors.UNKNOWN_MEMBER_ID


def test_member_id_required_then_join(coordinator: GroupCoordinator) -> None:
    r = join(coordinator, require_known=True).get()
    assert r["error_code"] == Errors.MEMBER_ID_REQUIRED and r["member_id"]
    assert group(coordinator).state is GroupState.EMPTY
    r2 = join(coordinator, r["member_id"], require_known=True).get()
    assert r2["error_code"] == 0 and r2["member_id"] == r["member_id"]


def test_late_join_during_completing_rebalance_bumps_generation(
    coordinator: GroupCoordinator,
) -> None:
    a = join(coordinator).get()
    leader = a["member_id"]
    assert group(coordinator).state is GroupState.COMPLETING_REBALANCE
    # Before the leader syncs, a new member arrives: the rebalance restarts.
    b = join(coordinator)
    assert group(coordinator).state is GroupState.PREPARING_REBALANCE
    stale = sync(coordinator, leader, 1, {leader: b"old"}).get()
    assert stale["error_code"] == Errors.REBALANCE_IN_PROGRESS
    a2 = join(coordinator, leader).get()
    assert a2["generation_id"] == 2 and b.get()["generation_id"] == 2
    assert group(coordinator).state is GroupState.COMPLETING_REBALANCE


def test_pending_follower_sync_fails_when_rebalance_restarts(coordinator: GroupCoordinator) -> None:
    a = join(coordinator).get()
    b = join(coordinator)
    join(coordinator, a["member_id"]).get()
    follower = b.get()["member_id"]
    waiting = sync(coordinator, follower, 2)
    join(coordinator)  # a third member while the follower waits for the leader
    assert waiting.get()["error_code"] == Errors.REBALANCE_IN_PROGRESS


def test_leader_never_syncs(coordinator: GroupCoordinator, clock: MockTime) -> None:
    a = join(coordinator, session=300, rebalance=300).get()
    b = join(coordinator, session=5000, rebalance=300)
    join(coordinator, a["member_id"], session=300, rebalance=300).get()
    follower = b.get()["member_id"]
    waiting = sync(coordinator, follower, 2)
    # The leader neither syncs nor heartbeats: when the sync deadline (the rebalance
    # timeout) passes it is removed, and the follower told to rejoin.
    clock.sleep(299)
    assert not waiting.done and group(coordinator).has(a["member_id"])
    clock.sleep(1)
    assert waiting.get()["error_code"] == Errors.REBALANCE_IN_PROGRESS
    assert not group(coordinator).has(a["member_id"])
    r = join(coordinator, follower, session=5000, rebalance=300).get()
    assert r["leader"] == follower and r["generation_id"] == 3


def test_member_stops_heartbeating(coordinator: GroupCoordinator, clock: MockTime) -> None:
    leader, follower = stable_group_of_two(coordinator, session=300, rebalance=2000)
    for _ in range(2):
        clock.sleep(149)
        assert coordinator.handle_heartbeat(G, leader, None, 2) is Errors.NONE
    assert group(coordinator).state is GroupState.STABLE  # the follower: 298 ms silent
    clock.sleep(2)
    # Only the leader heartbeated: the follower's session expired and a rebalance began.
    assert coordinator.handle_heartbeat(G, leader, None, 2) is Errors.REBALANCE_IN_PROGRESS
    assert not group(coordinator).has(follower)
    r = join(coordinator, leader, session=300, rebalance=2000).get()
    assert r["generation_id"] == 3 and [m["member_id"] for m in r["members"]] == [leader]


def test_rebalance_timeout_drops_members_that_do_not_rejoin(
    coordinator: GroupCoordinator, clock: MockTime
) -> None:
    leader, follower = stable_group_of_two(coordinator, session=5000, rebalance=300)
    r = join(coordinator, leader, session=5000, rebalance=300)  # the leader rejoins alone
    clock.sleep(299)
    assert not r.done
    clock.sleep(1)
    assert r.get()["generation_id"] == 3
    assert list(group(coordinator).members) == [leader]


def test_leave_group_rebalances_and_last_leave_empties(coordinator: GroupCoordinator) -> None:
    leader, follower = stable_group_of_two(coordinator)
    assert coordinator.handle_leave_group(G, [(follower, None)]) == (Errors.NONE, [Errors.NONE])
    assert group(coordinator).state is GroupState.PREPARING_REBALANCE
    join(coordinator, leader).get()
    sync(coordinator, leader, 3, {leader: b"all"}).get()
    coordinator.handle_leave_group(G, [(leader, None)])
    assert group(coordinator).state is GroupState.EMPTY
    assert group(coordinator).generation_id == 4
    assert coordinator.handle_leave_group(G, [("ghost", None)])[1] == [Errors.UNKNOWN_MEMBER_ID]


def test_static_member_replacement_keeps_assignment(coordinator: GroupCoordinator) -> None:
    a = join(coordinator, instance="i-1").get()
    a_id = a["member_id"]
    assert a_id.startswith("i-1-")
    b = join(coordinator, instance="i-2")
    join(coordinator, a_id, instance="i-1").get()
    b_id = b.get()["member_id"]
    sync(coordinator, a_id, 2, {a_id: b"A", b_id: b"B"}).get()
    # i-2 restarts with a fresh process: same instance id, no member id.
    r = join(coordinator, instance="i-2").get()
    new_id = r["member_id"]
    assert new_id != b_id and r["generation_id"] == 2  # no rebalance
    assert group(coordinator).state is GroupState.STABLE
    assert sync(coordinator, new_id, 2).get()["assignment"] == b"B"
    # The old incarnation is fenced.
    reply = Reply()
    coordinator.handle_sync_group(G, 2, b_id, "i-2", None, None, {}, reply)
    assert reply.get()["error_code"] == Errors.FENCED_INSTANCE_ID
    assert coordinator.handle_heartbeat(G, b_id, "i-2", 2) is Errors.FENCED_INSTANCE_ID


def test_static_leader_restart_skips_assignment_without_rebalance(
    coordinator: GroupCoordinator,
) -> None:
    a = join(coordinator, instance="i-1").get()
    a_id = a["member_id"]
    b = join(coordinator, instance="i-2")
    assert join(coordinator, a_id, instance="i-1").get()["leader"] == a_id
    b_id = b.get()["member_id"]
    sync(coordinator, a_id, 2, {a_id: b"A", b_id: b"B"}).get()
    # The leader restarts: the group stays Stable at generation 2 (Kafka's KIP-814).
    r = join(coordinator, instance="i-1").get()
    new_id = r["member_id"]
    assert (r["error_code"], r["generation_id"], r["leader"]) == (0, 2, new_id)
    assert r["skip_assignment"] is True
    assert sorted(m["member_id"] for m in r["members"]) == sorted([new_id, b_id])
    assert group(coordinator).state is GroupState.STABLE
    # An older client computes an assignment anyway; Stable keeps the current one.
    assert sync(coordinator, new_id, 2, {new_id: b"X", b_id: b"Y"}).get()["assignment"] == b"A"
    assert sync(coordinator, b_id, 2).get()["assignment"] == b"B"


def test_protocol_selection_and_inconsistent_protocol(coordinator: GroupCoordinator) -> None:
    a = join(coordinator, protocols=[("roundrobin", b"1"), ("range", b"2")]).get()
    b = join(coordinator, protocols=[("range", b"3")])
    join(coordinator, a["member_id"], protocols=[("roundrobin", b"1"), ("range", b"2")]).get()
    assert b.get()["protocol_name"] == "range"  # the only protocol both support
    bad = join(coordinator, protocols=[("sticky", b"")]).get()
    assert bad["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_session_timeout_bounds_and_group_max_size(coordinator: GroupCoordinator) -> None:
    assert join(coordinator, session=5).get()["error_code"] == Errors.INVALID_SESSION_TIMEOUT
    for _ in range(3):
        join(coordinator)
    assert join(coordinator).get()["error_code"] == Errors.GROUP_MAX_SIZE_REACHED


def test_initial_rebalance_delay_gathers_members(clock: MockTime) -> None:
    c = GroupCoordinator(
        GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=300), time=clock
    )
    c.startup(expire_offsets=False)
    try:
        replies = [join(c, rebalance=3000) for _ in range(3)]
        clock.sleep(299)
        assert not any(r.done for r in replies)
        clock.sleep(3000)
        assert {r.get()["generation_id"] for r in replies} == {1}
        assert len(group(c).members) == 3
    finally:
        c.shutdown()


def test_offset_commit_rules(coordinator: GroupCoordinator, store: RecordingStore) -> None:
    tp = ("topic", 0)
    simple = answered(
        coordinator.handle_commit_offsets, G, "", None, -1, {tp: OffsetAndMetadata(5, -1, "m", 1)}
    )
    assert simple == {tp: Errors.NONE}
    assert coordinator.handle_fetch_offsets(G, [tp, ("topic", 1)]) == {
        tp: OffsetAndMetadata(5, -1, "m", 1),
        ("topic", 1): None,
    }
    assert coordinator.handle_fetch_offsets("unknown", [tp]) == {tp: None}
    leader, follower = stable_group_of_two(coordinator)
    o = {tp: OffsetAndMetadata(9)}
    assert answered(coordinator.handle_commit_offsets, G, follower, None, 2, o)[tp] is Errors.NONE
    assert (
        answered(coordinator.handle_commit_offsets, G, follower, None, 1, o)[tp]
        is Errors.ILLEGAL_GENERATION
    )
    assert (
        answered(coordinator.handle_commit_offsets, G, "x", None, 2, o)[tp]
        is Errors.UNKNOWN_MEMBER_ID
    )
    assert (
        answered(coordinator.handle_commit_offsets, G, "", None, -1, o)[tp]
        is Errors.UNKNOWN_MEMBER_ID
    )
    big = {tp: OffsetAndMetadata(1, metadata="x" * 5000)}
    assert (
        answered(coordinator.handle_commit_offsets, G, follower, None, 2, big)[tp]
        is Errors.OFFSET_METADATA_TOO_LARGE
    )
    assert coordinator.handle_delete_groups([G]) == {G: Errors.NON_EMPTY_GROUP}
    # Every commit reached the store as an OffsetCommit record.
    keys = [read_key(k) for batch in store.batches for k, _ in batch]
    assert sum(1 for k in keys if k is not None and hasattr(k, "topic")) == 2


def test_offsets_expire_when_group_is_empty(coordinator: GroupCoordinator) -> None:
    tp = ("topic", 0)
    answered(
        coordinator.handle_commit_offsets,
        G,
        "",
        None,
        -1,
        {tp: OffsetAndMetadata(5, commit_timestamp=1000)},
    )
    retention = coordinator.config.offsets_retention_ms
    assert coordinator.expire_offsets(now=1000 + retention - 1) == 0
    assert coordinator.expire_offsets(now=1000 + retention) == 1
    assert coordinator.get_group(G) is None  # empty and without offsets: Dead


def test_describe_list_delete(coordinator: GroupCoordinator) -> None:
    leader, follower = stable_group_of_two(coordinator)
    d = coordinator.describe_group(G)
    assert d["group_state"] == "Stable" and d["protocol_data"] == "range"
    assert {m["member_id"] for m in d["members"]} == {leader, follower}
    assert coordinator.list_groups({"stable"}) == [(G, "consumer", "Stable")]
    assert coordinator.list_groups({"Empty"}) == []
    coordinator.handle_leave_group(G, [(leader, None), (follower, None)])
    assert group(coordinator).state is GroupState.EMPTY
    assert coordinator.handle_delete_groups([G, "nope"]) == {
        G: Errors.NONE,
        "nope": Errors.GROUP_ID_NOT_FOUND,
    }
    assert coordinator.describe_group(G)["group_state"] == "Dead"


def test_records_round_trip_and_partition_for() -> None:
    # Java: "group".hashCode() == 98629247; abs % 50 == 47.
    assert partition_for("group", 50) == 98629247 % 50
    assert partition_for("", 50) == 0
    # A negative hash: "group-kafkars-leader-0".hashCode() == -1122382560, and Kafka's
    # Utils.abs gives 1122382560 (% 5 == 0), where clearing the sign bit would give 3.
    assert partition_for("group-kafkars-leader-0", 5) == 1122382560 % 5 == 0
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0.
    assert partition_for("polygenelubricants", 7) == 0
    g = GroupMetadata("g")
    from kafkars.coordinator.group.group_metadata import MemberMetadata

    m = MemberMetadata("m-1", "i", "c", "/h", 100, 200, "consumer", [("range", b"sub")])
    g.add(m, None)
    g.protocol_name, g.generation_id = "range", 4
    from kafkars.coordinator.group.records import group_metadata_value, offset_commit_value

    loaded = read_group_metadata_value("g", group_metadata_value(g, {"m-1": b"asg"}))
    assert loaded.state is GroupState.STABLE and loaded.generation_id == 4
    assert loaded.members["m-1"].assignment == b"asg"
    assert loaded.members["m-1"].group_instance_id == "i" and loaded.leader_id == "m-1"
    o = OffsetAndMetadata(42, 3, "meta", 1234)
    assert read_offset_commit_value(offset_commit_value(o)) == o
    assert offset_commit_key("g", "t", 1)[:2] == b"\x00\x01"
    assert group_metadata_key("g")[:2] == b"\x00\x02"


def test_a_failing_rebalance_answers_the_waiting_members(
    coordinator: GroupCoordinator, clock: MockTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception while completing a rebalance answers every pending JoinGroup with
    UNKNOWN_SERVER_ERROR instead of leaving the members waiting for ever."""
    leader, follower = stable_group_of_two(coordinator, session=5000, rebalance=300)

    def broken(*args: Any) -> None:
        raise RuntimeError("rebalance failed on purpose")

    monkeypatch.setattr(coordinator, "_complete_join", broken)
    r = join(coordinator, leader, session=5000, rebalance=300)  # the follower never rejoins
    assert not r.done
    clock.sleep(300)
    assert r.get()["error_code"] == Errors.UNKNOWN_SERVER_ERROR


class HeldStore(GroupStore):
    """Keeps each write's completion for the test to run, with the error it chooses:
    the ISR's answer, in whatever order it comes."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[Errors], None]] = []

    def append(
        self,
        group_id: str,
        batch: list[tuple[bytes, bytes | None]],
        done: Callable[[Errors], None] | None = None,
    ) -> None:
        if done is not None:
            self.waiting.append(done)


def held_coordinator(clock: MockTime) -> tuple[GroupCoordinator, HeldStore]:
    store = HeldStore()
    c = GroupCoordinator(
        GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0), store, time=clock
    )
    c.startup(expire_offsets=False)
    return c, store


def test_commits_are_answered_when_written_and_applied_in_log_order(clock: MockTime) -> None:
    c, store = held_coordinator(clock)
    tp = ("topic", 0)
    first: list[Any] = []
    second: list[Any] = []
    c.handle_commit_offsets(G, "", None, -1, {tp: OffsetAndMetadata(1)}, first.append)
    c.handle_commit_offsets(G, "", None, -1, {tp: OffsetAndMetadata(2)}, second.append)
    assert first == second == []  # nothing answers before the ISR has the commit
    assert c.handle_fetch_offsets(G, [tp]) == {tp: None}
    later, earlier = store.waiting.pop(), store.waiting.pop()
    later(Errors.NONE)
    earlier(Errors.NONE)  # completes last, but was written first
    assert first == second == [{tp: Errors.NONE}]
    assert c.handle_fetch_offsets(G, [tp])[tp] == OffsetAndMetadata(2)
    failed: list[Any] = []
    c.handle_commit_offsets(G, "", None, -1, {tp: OffsetAndMetadata(3)}, failed.append)
    store.waiting.pop()(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert failed == [{tp: Errors.COORDINATOR_NOT_AVAILABLE}]
    assert c.handle_fetch_offsets(G, [tp])[tp] == OffsetAndMetadata(2)
    c.shutdown()


def test_a_failed_assignment_write_fails_syncgroup_and_rebalances(clock: MockTime) -> None:
    c, store = held_coordinator(clock)
    leader = join(c).get()["member_id"]
    reply = sync(c, leader, 1, {leader: b"A"})
    assert not reply.done and group(c).state is GroupState.COMPLETING_REBALANCE
    store.waiting.pop()(Errors.REQUEST_TIMED_OUT)
    # Kafka's storeGroup mapping: a timed-out write makes the members rejoin.
    assert reply.get()["error_code"] == Errors.REBALANCE_IN_PROGRESS
    assert group(c).state is GroupState.PREPARING_REBALANCE
    assert group(c).members[leader].assignment == b""
    c.shutdown()
