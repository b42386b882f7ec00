"""KIP-848 reconciliation and the server-side assignors, without sockets."""

from __future__ import annotations

import uuid
from typing import Any

from kafkars.coordinator.group.consumer_group import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    range_assign,
    uniform_assign,
)
from kafkars.protocol import Errors


class Topics:
    def __init__(self, **counts: int) -> None:
        self.counts = dict(counts)
        self.ids = {t: uuid.uuid4() for t in counts}

    def add(self, name: str, count: int) -> None:
        self.counts[name] = count
        self.ids[name] = uuid.uuid4()

    def partition_count(self, topic: str) -> int | None:
        return self.counts.get(topic)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((t for t, i in self.ids.items() if i == topic_id), None)

    def topic_names(self) -> list[str]:
        return list(self.counts)


def coordinator(topics: Topics) -> tuple[ConsumerGroupCoordinator, list[Any]]:
    ops: list[Any] = []
    c = ConsumerGroupCoordinator(ConsumerGroupConfig(heartbeat_interval_ms=100), topics, ops.append)
    return c, ops


def join(c: ConsumerGroupCoordinator, member: str, topics: list[str], **extra: Any) -> dict:
    req = {
        "group_id": "g",
        "member_id": member,
        "member_epoch": 0,
        "rebalance_timeout_ms": 1000,
        "subscribed_topic_names": topics,
        "topic_partitions": [],
        **extra,
    }
    return c.heartbeat(req, "client", "127.0.0.1")


def beat(
    c: ConsumerGroupCoordinator, r: dict, owned: set | None = None, topics: Topics | None = None
) -> dict:
    req: dict[str, Any] = {
        "group_id": "g",
        "member_id": r["member_id"],
        "member_epoch": r["member_epoch"],
    }
    if owned is not None:
        assert topics is not None
        by_topic: dict[str, list[int]] = {}
        for t, p in owned:
            by_topic.setdefault(t, []).append(p)
        req["topic_partitions"] = [
            {"topic_id": topics.ids[t], "partitions": ps} for t, ps in by_topic.items()
        ]
    return c.heartbeat(req, "client", "127.0.0.1")


def owned(r: dict, topics: Topics) -> set[tuple[str, int]]:
    return {
        (topics.topic_name(tp["topic_id"]), p)
        for tp in r["assignment"]["topic_partitions"]
        for p in tp["partitions"]
    }


def test_first_member_gets_everything_at_the_group_epoch() -> None:
    topics = Topics(t=4)
    c, ops = coordinator(topics)
    a = join(c, "a", ["t"])
    assert a["error_code"] == 0 and a["heartbeat_interval_ms"] == 100
    assert owned(a, topics) == {("t", p) for p in range(4)}
    assert a["member_epoch"] == c.get("g").group_epoch  # type: ignore[union-attr]
    assert c.get("g").state == "Stable"  # type: ignore[union-attr]
    assert len(ops) == 1  # the session deadline went to the timer


def test_partitions_move_only_after_the_old_owner_releases_them() -> None:
    topics = Topics(t=4)
    c, _ = coordinator(topics)
    a = join(c, "a", ["t"])
    a_parts = owned(a, topics)
    b = join(c, "b", ["t"])
    # b's share is still a's: b gets nothing yet, and keeps epoch 0... until a revokes.
    assert owned(b, topics) == set()
    a2 = beat(c, a)
    kept = owned(a2, topics)
    assert len(kept) == 2 and kept < a_parts
    assert a2["member_epoch"] == a["member_epoch"]  # revoking: no new epoch yet
    assert c.get("g").state == "Reconciling"  # type: ignore[union-attr]
    # b asks again: the revoked partitions are not released yet, so nothing changes.
    assert beat(c, b)["assignment"] is None
    # a reports it gave them up: it moves to the new epoch, b then gets them.
    a3 = beat(c, a2, owned=kept, topics=topics)
    assert a3["member_epoch"] == c.get("g").assignment_epoch  # type: ignore[union-attr]
    b2 = beat(c, b)
    assert owned(b2, topics) == a_parts - kept
    assert c.get("g").state == "Stable"  # type: ignore[union-attr]


def test_leave_frees_partitions_and_fencing() -> None:
    topics = Topics(t=2)
    c, _ = coordinator(topics)
    a = join(c, "a", ["t"])
    b = join(c, "b", ["t"])
    a2 = beat(c, a)
    beat(c, a2, owned=owned(a2, topics), topics=topics)
    b2 = beat(c, b)
    assert len(owned(b2, topics)) == 1
    left = c.heartbeat({"group_id": "g", "member_id": "a", "member_epoch": -1}, "c", "h")
    assert (left["error_code"], left["member_epoch"]) == (0, -1)
    b3 = beat(c, b2)
    assert owned(b3, topics) == {("t", 0), ("t", 1)}
    stale = dict(b3, member_epoch=b3["member_epoch"] + 5)
    assert beat(c, stale)["error_code"] == Errors.FENCED_MEMBER_EPOCH
    gone = {"member_id": "zz", "member_epoch": 3}
    assert beat(c, gone)["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_request_errors() -> None:
    topics = Topics(t=2)
    c, _ = coordinator(topics)
    # Kafka 4 takes an empty subscription; a missing one is invalid.
    assert join(c, "a", None)["error_code"] == Errors.INVALID_REQUEST  # type: ignore[arg-type]
    assert join(c, "a", [])["error_code"] == Errors.NONE
    assert (
        join(c, "a", ["t"], server_assignor="sticky")["error_code"] == Errors.UNSUPPORTED_ASSIGNOR
    )
    assert c.heartbeat({"group_id": "", "member_epoch": 0}, "c", "h")["error_code"] == (
        Errors.INVALID_REQUEST
    )


def test_new_partitions_and_regex_subscriptions_rebalance() -> None:
    topics = Topics(t=2)
    c, _ = coordinator(topics)
    a = join(c, "a", [], subscribed_topic_regex="t.*")
    assert owned(a, topics) == {("t", 0), ("t", 1)}
    epoch = a["member_epoch"]
    topics.counts["t"] = 3
    topics.add("t2", 1)
    topics.add("other", 1)
    a2 = beat(c, a)
    assert owned(a2, topics) == {("t", 0), ("t", 1), ("t", 2), ("t2", 0)}
    assert a2["member_epoch"] > epoch


def test_commit_checks_for_consumer_members() -> None:
    topics = Topics(t=1)
    c, _ = coordinator(topics)
    a = join(c, "a", ["t"])
    assert c.validate_commit("other", "x", 1) is None  # not a consumer group: classic rules
    assert c.validate_commit("g", "a", a["member_epoch"]) is Errors.NONE
    assert c.validate_commit("g", "a", a["member_epoch"] - 1) is Errors.STALE_MEMBER_EPOCH
    assert c.validate_commit("g", "nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    described = c.describe("g")
    assert described["group_state"] == "Stable" and described["members"][0]["member_id"] == "a"
    assert c.describe("nope")["error_code"] == Errors.GROUP_ID_NOT_FOUND


def test_range_and_uniform_assignors() -> None:
    subs = {"m1": {"a", "b"}, "m2": {"a", "b"}, "m3": {"a"}}
    parts = {"a": 5, "b": 2}
    r = range_assign(subs, parts, {})
    assert r["m1"] == {("a", 0), ("a", 1), ("b", 0)}
    assert r["m2"] == {("a", 2), ("a", 3), ("b", 1)}
    assert r["m3"] == {("a", 4)}
    u = uniform_assign(subs, parts, {})
    assert sorted(len(v) for v in u.values()) == [2, 2, 3]
    assert set().union(*u.values()) == {("a", p) for p in range(5)} | {("b", 0), ("b", 1)}
    assert all(tp[0] == "a" for tp in u["m3"])
    # Sticky: a member joining moves only what the balance needs.
    same = {"m1": {"a"}, "m2": {"a"}}
    before = uniform_assign(same, {"a": 6}, {})
    after = uniform_assign({**same, "m3": {"a"}}, {"a": 6}, before)
    assert sorted(len(v) for v in after.values()) == [2, 2, 2]
    assert after["m1"] <= before["m1"] and after["m2"] <= before["m2"]
