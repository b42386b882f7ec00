"""KIP-848 reconciliation, driven through ConsumerGroupCoordinator.heartbeat with the
requests a client sends: epochs, revocation before reassignment, leaves, static members,
session and revocation deadlines, and the server-side assignors."""

from __future__ import annotations

import uuid
from typing import Any

from kafkars.coordinator.clock import MockTime
from kafkars.coordinator.group.consumer_group import ConsumerGroupConfig, ConsumerGroupCoordinator
from kafkars.coordinator.group.delayed import DelayedTimeout
from kafkars.coordinator.group.server_assignors import range_assign, uniform_assign
from kafkars.protocol import Errors


class Topics:
    """The broker's topic metadata, as plain data."""

    def __init__(self, **partitions: int) -> None:
        self.partitions = dict(partitions)
        self.ids = {t: uuid.uuid4() for t in partitions}

    def add(self, name: str, count: int) -> None:
        self.partitions[name] = count
        self.ids.setdefault(name, uuid.uuid4())

    def partition_count(self, topic: str) -> int | None:
        return self.partitions.get(topic)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((t for t, i in self.ids.items() if i == topic_id), None)

    def topic_names(self) -> list[str]:
        return list(self.partitions)


class Harness:
    def __init__(self, **partitions: int) -> None:
        self.topics = Topics(**partitions)
        self.timers: list[DelayedTimeout] = []
        self.clock = MockTime()
        purgatory = self.clock.purgatory("ConsumerGroupHeartbeat")

        def schedule(op: DelayedTimeout) -> None:
            self.timers.append(op)
            purgatory.try_complete_else_watch(op, ["session"])

        self.coordinator = ConsumerGroupCoordinator(
            ConsumerGroupConfig(session_timeout_ms=1000, heartbeat_interval_ms=100),
            self.topics,
            schedule,
            time=self.clock,
        )

    def owned(self, parts: set[tuple[str, int]]) -> list[dict[str, Any]]:
        by: dict[str, list[int]] = {}
        for t, p in parts:
            by.setdefault(t, []).append(p)
        return [{"topic_id": self.topics.ids[t], "partitions": ps} for t, ps in by.items()]

    def beat(
        self,
        member_id: str,
        epoch: int,
        owned: set[tuple[str, int]] | None = None,
        topics: list[str] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        req = {
            "group_id": "g",
            "member_id": member_id,
            "member_epoch": epoch,
            "rebalance_timeout_ms": 5000 if epoch == 0 else -1,
            "subscribed_topic_names": topics
            if topics is not None
            else (["t"] if epoch == 0 else None),
            "topic_partitions": None if owned is None else self.owned(owned),
            **extra,
        }
        return self.coordinator.heartbeat(req, "client", "/127.0.0.1")

    def parts(self, response: dict[str, Any]) -> set[tuple[str, int]] | None:
        if response["assignment"] is None:
            return None
        return {
            (self.topics.topic_name(tp["topic_id"]) or "?", p)
            for tp in response["assignment"]["topic_partitions"]
            for p in tp["partitions"]
        }


def tp(*ps: int) -> set[tuple[str, int]]:
    return {("t", p) for p in ps}


def test_first_member_gets_everything() -> None:
    h = Harness(t=4)
    r = h.beat("a", 0, set())
    assert r["error_code"] == 0 and r["member_epoch"] == 1
    assert h.parts(r) == tp(0, 1, 2, 3)
    assert r["heartbeat_interval_ms"] == 100
    # An unchanged assignment is not repeated.
    r = h.beat("a", 1)
    assert r["member_epoch"] == 1 and r["assignment"] is None


def test_partition_moves_only_after_the_previous_owner_revokes_it() -> None:
    h = Harness(t=4)
    h.beat("a", 0, set())
    # b joins: the group epoch bumps; b is at epoch 2 but gets nothing a still holds.
    r = h.beat("b", 0, set())
    assert r["member_epoch"] == 2 and h.parts(r) == set()
    group = h.coordinator.get("g")
    assert group is not None and group.state == "Reconciling"
    target_b = group.target["b"]
    assert len(target_b) == 2
    # a is told to keep only its half, and stays at epoch 1 while revoking.
    r = h.beat("a", 1)
    kept = h.parts(r)
    assert r["member_epoch"] == 1 and kept == tp(0, 1, 2, 3) - target_b
    # b still waits: a has not reported the revocation.
    assert h.parts(h.beat("b", 2)) is None
    # a reports it owns only its half: it moves to epoch 2, and b gets the rest.
    r = h.beat("a", 1, owned=kept)
    assert r["member_epoch"] == 2
    r = h.beat("b", 2)
    assert h.parts(r) == target_b
    assert group.state == "Stable"


def test_fencing_and_unknown_members() -> None:
    h = Harness(t=2)
    h.beat("a", 0, set())
    assert h.beat("a", 7)["error_code"] == Errors.FENCED_MEMBER_EPOCH
    assert h.beat("zz", 1)["error_code"] == Errors.UNKNOWN_MEMBER_ID
    # The epoch before the last one is accepted (the response may have been lost).
    h.beat("b", 0, set())
    h.beat("a", 1, owned=tp(0, 1))
    assert h.beat("a", 1)["error_code"] == 0
    # A join must say what it subscribes to (an empty list is a subscription, as in Kafka).
    assert h.beat("", 0, set(), subscribed_topic_names=None)["error_code"] == Errors.INVALID_REQUEST
    assert h.beat("", 0, set(), topics=[])["error_code"] == 0


def test_leave_hands_partitions_to_the_rest() -> None:
    h = Harness(t=4)
    h.beat("a", 0, set())
    h.beat("b", 0, set())
    r = h.beat("a", 1)
    h.beat("a", 1, owned=h.parts(r))
    h.beat("b", 2)
    r = h.beat("b", 2, epoch_leave := None) if False else h.beat("b", -1)  # noqa: F841
    assert r["member_epoch"] == -1
    r = h.beat("a", 2)
    assert h.parts(r) == tp(0, 1, 2, 3) and r["member_epoch"] == 3


def test_static_member_keeps_its_partitions_across_a_restart() -> None:
    h = Harness(t=2)
    h.beat("a", 0, set(), instance_id="i1")
    r = h.beat("a", -2, instance_id="i1")
    assert r["member_epoch"] == -2
    group = h.coordinator.get("g")
    assert group is not None and "a" in group.members
    epoch = group.group_epoch
    # A second live member with the same instance id is refused until a left.
    r = h.beat("b", 0, set(), instance_id="i1")
    assert r["error_code"] == 0 and h.parts(r) == tp(0, 1) and r["member_epoch"] == 1
    assert "a" not in group.members and group.group_epoch == epoch
    assert h.beat("c", 0, set(), instance_id="i1")["error_code"] == Errors.UNRELEASED_INSTANCE_ID


def test_session_timeout_removes_a_silent_member() -> None:
    h = Harness(t=2)
    h.beat("a", 0, set())
    h.beat("b", 0, set())
    group = h.coordinator.get("g")
    assert group is not None
    h.clock.sleep(600)
    h.beat("a", group.members["a"].member_epoch)  # only "a" stays alive
    h.clock.sleep(399)
    assert set(group.members) == {"a", "b"}  # b's session has 1 ms left
    h.clock.sleep(1)
    assert set(group.members) == {"a"}
    h.clock.sleep(599)
    assert set(group.members) == {"a"}  # a heartbeat 999 ms ago
    h.clock.sleep(1)
    assert set(group.members) == set()


def test_a_member_that_does_not_revoke_is_removed_after_its_rebalance_timeout() -> None:
    h = Harness(t=2)
    h.beat("a", 0, set())
    h.beat("b", 0, set())
    h.timers.clear()
    h.beat("a", 1)  # told to revoke one partition
    revocation = [op for op in h.timers if op.delay_ms == 5000]
    assert len(revocation) == 1
    revocation[0].on_complete()
    group = h.coordinator.get("g")
    assert group is not None and set(group.members) == {"b"}
    assert h.beat("a", 1)["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_new_partitions_and_regex_subscriptions() -> None:
    h = Harness(t=2)
    r = h.beat("a", 0, set(), topics=[], subscribed_topic_regex="t.*")
    assert h.parts(r) == tp(0, 1)
    h.topics.add("t2", 1)
    h.topics.add("other", 1)
    r = h.beat("a", 1)
    assert h.parts(r) == tp(0, 1) | {("t2", 0)} and r["member_epoch"] == 2


def test_commit_validation_uses_the_member_epoch() -> None:
    h = Harness(t=2)
    h.beat("a", 0, set())
    c = h.coordinator
    assert c.validate_commit("other", "a", 1) is None  # not a consumer group
    assert c.validate_commit("g", "a", 1) is Errors.NONE
    assert c.validate_commit("g", "a", 0) is Errors.STALE_MEMBER_EPOCH
    assert c.validate_commit("g", "x", 1) is Errors.UNKNOWN_MEMBER_ID


def test_uniform_is_balanced_and_sticky() -> None:
    subs = {m: {"t"} for m in "abc"}
    first = uniform_assign(subs, {"t": 6}, {})
    assert sorted(len(v) for v in first.values()) == [2, 2, 2]
    del subs["c"]
    second = uniform_assign(subs, {"t": 6}, first)
    assert sorted(len(v) for v in second.values()) == [3, 3]
    for m in "ab":
        assert first[m] <= second[m]  # nothing moved between the members that stayed


def test_uniform_with_different_subscriptions() -> None:
    out = uniform_assign({"a": {"x"}, "b": {"x", "y"}}, {"x": 2, "y": 2}, {})
    assert out["a"] <= {("x", 0), ("x", 1)}
    assert {("y", 0), ("y", 1)} <= out["b"]
    assert len(out["a"] | out["b"]) == 4


def test_range_gives_contiguous_blocks() -> None:
    out = range_assign({"b": {"t"}, "a": {"t"}}, {"t": 5}, {})
    assert out == {"a": tp(0, 1, 2), "b": tp(3, 4)}


def test_records_survive_a_reload() -> None:
    h = Harness(t=4)
    log: dict[bytes, bytes | None] = {}
    written: list[int] = []

    def store(group_id: str, batch: list[tuple[bytes, bytes | None]], done: object) -> None:
        written.append(len(batch))
        log.update(batch)

    h.coordinator.store = store
    h.beat("a", 0, set(), instance_id="i1")
    h.beat("b", 0, set(), subscribed_topic_regex="t")
    r = h.beat("a", 1)
    h.beat("a", 1, owned=h.parts(r))
    h.beat("b", 2)
    h.beat("c", 0, set())
    h.beat("c", -1)  # leaves tombstones behind
    before = written[:]
    h.beat("b", 3)  # nothing changed for b: nothing written
    assert written == before
    live = {k: v for k, v in log.items() if v is not None}
    assert not any(k[-1:] == b"c" for k in live)

    again = ConsumerGroupCoordinator(ConsumerGroupConfig(), h.topics, lambda op: None)
    assert again.load(live) == 1
    old, new = h.coordinator.get("g"), again.get("g")
    assert old is not None and new is not None
    assert new.group_epoch == old.group_epoch and new.assignment_epoch == old.assignment_epoch
    assert new.target == {m: t for m, t in old.target.items()}
    for mid, m in old.members.items():
        n = new.members[mid]
        assert (n.member_epoch, n.previous_epoch, n.assigned, n.revoking) == (
            m.member_epoch,
            m.previous_epoch,
            m.assigned,
            m.revoking,
        )
        assert (n.subscribed_topics, n.subscribed_regex, n.instance_id) == (
            m.subscribed_topics,
            m.subscribed_regex,
            m.instance_id,
        )
    # The reloaded member carries on from its epoch, without rejoining.
    r = again.heartbeat(
        {"group_id": "g", "member_id": "a", "member_epoch": old.members["a"].member_epoch},
        "client",
        "/127.0.0.1",
    )
    assert r["error_code"] == 0 and r["member_epoch"] == new.assignment_epoch
