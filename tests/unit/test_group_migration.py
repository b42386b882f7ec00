"""Online migration between classic and consumer groups (Kafka 4's
`group.consumer.migration.policy`), and ConsumerGroupHeartbeat's error paths, without
sockets: a classic GroupCoordinator and a ConsumerGroupCoordinator attached to each other
on a MockTime."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkars import _core
from kafkars.assignors import decode_assignment, encode_assignment
from kafkars.coordinator.clock import MockTime
from kafkars.coordinator.group import GroupCoordinator, GroupState
from kafkars.coordinator.group import consumer_group_records as records
from kafkars.coordinator.group.consumer_group import ConsumerGroupConfig, ConsumerGroupCoordinator
from kafkars.coordinator.group.group_coordinator import GroupConfig
from kafkars.protocol import Errors

G = "g"


def answered(call: Callable[..., None], *args: Any) -> Any:
    """Calls a coordinator method that answers through a callback (its last argument)
    and returns the answer, which these stores give at once."""
    answers: list[Any] = []
    call(*args, answers.append)
    assert len(answers) == 1
    return answers[0]


class Topics:
    def __init__(self, **counts: int) -> None:
        self.counts = dict(counts)
        self.ids = {t: uuid.uuid4() for t in counts}

    def partition_count(self, topic: str) -> int | None:
        return self.counts.get(topic)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((t for t, i in self.ids.items() if i == topic_id), None)

    def topic_names(self) -> list[str]:
        return list(self.counts)


def owned(r: dict[str, Any], topics: Topics) -> set[tuple[str | None, int]]:
    return {
        (topics.topic_name(tp["topic_id"]), p)
        for tp in r["assignment"]["topic_partitions"]
        for p in tp["partitions"]
    }


def subscription(topics: list[str], owned_partitions: dict[str, list[int]] | None = None) -> bytes:
    return _core.protocol.encode_subscription(
        1,
        {
            "topics": topics,
            "user_data": None,
            "owned_partitions": [
                {"topic": t, "partitions": ps} for t, ps in (owned_partitions or {}).items()
            ],
            "generation_id": -1,
            "rack_id": None,
        },
    )


class Reply:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: dict[str, Any] = {}

    def __call__(self, response: dict[str, Any]) -> None:
        self.value = response
        self.event.set()

    def get(self) -> dict[str, Any]:
        assert self.event.wait(5), "no response"
        return self.value


class Env:
    def __init__(self, policy: str = "bidirectional", session_ms: int = 5000) -> None:
        self.session_ms = session_ms
        self.clock = MockTime()
        self.topics = Topics(t=4)
        self.classic = GroupCoordinator(
            GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0), time=self.clock
        )
        self.classic.startup(expire_offsets=False)
        self.ops: list[Any] = []
        purgatory = self.clock.purgatory("ConsumerGroupHeartbeat")

        def schedule(op: Any) -> None:
            self.ops.append(op)
            purgatory.try_complete_else_watch(op, ["session"])

        self.consumer = ConsumerGroupCoordinator(
            ConsumerGroupConfig(heartbeat_interval_ms=100, migration_policy=policy),
            self.topics,
            schedule,
            classic_group_in_use=lambda g: bool((grp := self.classic.get_group(g)) and grp.members),
            time=self.clock,
        )
        self.classic.attach_consumer_groups(self.consumer)

    def join(
        self, member_id: str = "", owned_partitions: dict[str, list[int]] | None = None
    ) -> Reply:
        reply = Reply()
        self.classic.handle_join_group(
            G, member_id, None, False, "client", "/127.0.0.1", 5000, self.session_ms, "consumer",
            [("range", subscription(["t"], owned_partitions))], reply,
        )  # fmt: skip
        return reply

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes]) -> Reply:
        reply = Reply()
        self.classic.handle_sync_group(
            G, generation, member_id, None, "consumer", "range", assignments, reply
        )
        return reply

    def heartbeat(self, member_id: str, generation: int) -> Errors:
        return self.classic.handle_heartbeat(G, member_id, None, generation)

    def cg_heartbeat(self, **req: Any) -> dict[str, Any]:
        return self.consumer.heartbeat({"group_id": G, **req}, "client", "127.0.0.1")

    def cg_join(self, member_id: str = "") -> dict[str, Any]:
        return self.cg_heartbeat(
            member_id=member_id,
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )

    def stable_classic_pair(self) -> tuple[str, str, int]:
        """Two classic members, two partitions each, at generation 2."""
        a = self.join().get()
        leader = a["member_id"]
        self.sync(leader, 1, {leader: encode_assignment([("t", p) for p in range(4)])}).get()
        b = self.join()
        self.join(leader).get()
        follower = b.get()["member_id"]
        gen = b.value["generation_id"]
        f = self.sync(follower, gen, {})
        self.sync(
            leader,
            gen,
            {
                leader: encode_assignment([("t", 0), ("t", 1)]),
                follower: encode_assignment([("t", 2), ("t", 3)]),
            },
        ).get()
        f.get()
        return leader, follower, gen


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    yield e
    e.classic.shutdown()


def test_upgrade_keeps_classic_members_and_their_partitions(env: Env) -> None:
    leader, follower, gen = env.stable_classic_pair()
    r = env.cg_join()
    assert r["error_code"] == 0 and r["member_epoch"] == gen + 1
    group = env.consumer.get(G)
    assert group is not None and set(group.members) == {leader, follower, r["member_id"]}
    # The classic members came with their generation and assignment.
    assert group.members[leader].member_epoch == gen
    assert group.members[leader].classic is not None
    # The classic group stays, empty, for the offsets.
    classic = env.classic.get_group(G)
    assert classic is not None and not classic.members and classic.is_(GroupState.EMPTY)
    types = {m["member_id"]: m["member_type"] for m in env.consumer.describe(G)["members"]}
    assert types == {leader: 0, follower: 0, r["member_id"]: 1}
    # The new member gets nothing yet: every partition is held by a classic member.
    assert owned(r, env.topics) == set()
    # The classic members are told to rejoin.
    assert env.heartbeat(leader, gen) is Errors.REBALANCE_IN_PROGRESS
    assert env.heartbeat(leader, gen + 5) is Errors.ILLEGAL_GENERATION
    assert env.heartbeat("nobody", gen) is Errors.UNKNOWN_MEMBER_ID


def test_classic_members_reconcile_by_rejoining(env: Env) -> None:
    leader, follower, gen = env.stable_classic_pair()
    new = env.cg_join()
    # Eager members give up everything before rejoining (owned partitions empty). One
    # that loses partitions first rejoins at its old generation (revoking them), then at
    # the group's epoch; one that loses nothing moves there at once.
    for m in (leader, follower):
        generation = gen
        for _ in range(3):
            j = env.join(m).get()
            assert j["error_code"] == 0 and j["member_id"] == m and j["leader"] == ""
            assert j["protocol_name"] == "range"
            generation = j["generation_id"]
            assert env.sync(m, generation, {}).get()["error_code"] == 0
            if env.heartbeat(m, generation) is Errors.NONE:
                break
        assert generation == gen + 1
    r = env.cg_heartbeat(member_id=new["member_id"], member_epoch=new["member_epoch"])
    mine = owned(r, env.topics) if r["assignment"] else set()
    group = env.consumer.get(G)
    assert group is not None
    held = {m: len(x.assigned) for m, x in group.members.items()}
    assert sum(held.values()) == 4 and len(mine) >= 1
    # A sync at a stale generation is refused as Kafka does.
    assert env.sync(leader, gen, {}).get()["error_code"] == int(Errors.ILLEGAL_GENERATION)


def test_downgrade_when_the_last_consumer_member_leaves(env: Env) -> None:
    leader, follower, _ = env.stable_classic_pair()
    new = env.cg_join()
    cg = env.consumer.get(G)
    assert cg is not None
    epoch, target = cg.group_epoch, sorted(cg.target[leader])
    r = env.cg_heartbeat(member_id=new["member_id"], member_epoch=-1)
    assert r["error_code"] == 0 and r["member_epoch"] == -1
    assert env.consumer.get(G) is None
    classic = env.classic.get_group(G)
    assert classic is not None and set(classic.members) == {leader, follower}
    assert classic.generation_id == epoch and classic.protocol_name == "range"
    # It rebalances at once; the members keep their assignment until they rejoin.
    assert classic.is_(GroupState.PREPARING_REBALANCE)
    assert decode_assignment(classic.members[leader].assignment) == target
    assert env.heartbeat(leader, epoch) is Errors.REBALANCE_IN_PROGRESS
    a, b = env.join(leader), env.join(follower)
    assert a.get()["generation_id"] == epoch + 1 and b.get()["error_code"] == 0


def test_migration_policy_disabled_refuses(env: Env) -> None:
    e = Env(policy="disabled")
    try:
        e.stable_classic_pair()
        r = e.cg_join()
        assert r["error_code"] == int(Errors.GROUP_ID_NOT_FOUND)
        assert e.consumer.get(G) is None
    finally:
        e.classic.shutdown()


def test_upgrade_only_keeps_the_consumer_group(env: Env) -> None:
    e = Env(policy="upgrade")
    try:
        leader, _follower, _ = e.stable_classic_pair()
        new = e.cg_join()
        assert new["error_code"] == 0
        e.cg_heartbeat(member_id=new["member_id"], member_epoch=-1)
        group = e.consumer.get(G)
        assert group is not None and leader in group.members
    finally:
        e.classic.shutdown()


def test_non_consumer_protocol_classic_group_is_not_upgraded(env: Env) -> None:
    reply = Reply()
    env.classic.handle_join_group(
        G, "", None, False, "c", "/h", 5000, 5000, "connect", [("v1", b"x")], reply
    )
    assert reply.get()["error_code"] == 0
    r = env.cg_join()
    assert r["error_code"] == int(Errors.GROUP_ID_NOT_FOUND)


def test_classic_member_joins_a_consumer_group(env: Env) -> None:
    a = env.cg_join()
    j = env.join().get()
    assert j["error_code"] == 0
    assert j["generation_id"] == a["member_epoch"] + 1
    # The consumer member must give up half; the classic member's partitions arrive as
    # they are released.
    r = env.cg_heartbeat(member_id=a["member_id"], member_epoch=a["member_epoch"])
    assert len(owned(r, env.topics)) == 2
    env.cg_heartbeat(
        member_id=a["member_id"],
        member_epoch=r["member_epoch"],
        topic_partitions=[
            {"topic_id": env.topics.ids["t"], "partitions": [p for _, p in owned(r, env.topics)]}
        ],
    )
    assert env.heartbeat(j["member_id"], j["generation_id"]) is Errors.REBALANCE_IN_PROGRESS
    j2 = env.join(j["member_id"]).get()
    s = env.sync(j["member_id"], j2["generation_id"], {}).get()
    assert len(decode_assignment(s["assignment"])) == 2
    # LeaveGroup of the classic member: it is gone from the consumer group.
    error, results = env.classic.handle_leave_group(G, [(j["member_id"], None)])
    assert error is Errors.NONE and results == [Errors.NONE]
    group = env.consumer.get(G)
    assert group is not None and list(group.members) == [a["member_id"]]
    # A classic member with protocols the group's classic members do not share is refused.
    env.join().get()
    reply = Reply()
    env.classic.handle_join_group(
        G, "", None, False, "c", "/h", 5000, 5000, "consumer",
        [("roundrobin", subscription(["t"]))], reply,
    )  # fmt: skip
    assert reply.get()["error_code"] == int(Errors.INCONSISTENT_GROUP_PROTOCOL)


def test_commit_checks_of_consumer_group_members(env: Env) -> None:
    a = env.cg_join()
    c = env.consumer
    mid, epoch = a["member_id"], a["member_epoch"]
    assert c.validate_commit(G, mid, epoch, transactional=True) is Errors.NONE
    assert c.validate_commit(G, mid, epoch + 1) is Errors.STALE_MEMBER_EPOCH
    assert c.validate_commit(G, mid, epoch, version=9) is Errors.NONE
    assert c.validate_commit(G, mid, epoch, version=8) is Errors.UNSUPPORTED_VERSION
    assert c.validate_commit(G, mid, epoch + 1, transactional=True) is Errors.ILLEGAL_GENERATION
    assert c.validate_commit(G, "x", epoch, transactional=True) is Errors.UNKNOWN_MEMBER_ID
    assert c.validate_commit(G, "", -1, transactional=True) is Errors.NONE
    assert c.validate_commit(G, "", -1) is Errors.UNKNOWN_MEMBER_ID
    assert c.validate_fetch(G, None, -1) is Errors.NONE
    assert c.validate_fetch(G, mid, epoch) is Errors.NONE
    assert c.validate_fetch(G, mid, epoch - 1) is Errors.STALE_MEMBER_EPOCH
    assert c.validate_fetch(G, "x", epoch) is Errors.UNKNOWN_MEMBER_ID
    # TxnOffsetCommit through the classic coordinator applies the same checks.
    results = answered(env.classic.handle_txn_commit_offsets, G, mid, None, epoch + 1, 7, 0, {})
    assert results == {}
    from kafkars.coordinator.group.group_metadata import OffsetAndMetadata

    offsets = {("t", 0): OffsetAndMetadata(5)}
    stale = answered(env.classic.handle_txn_commit_offsets, G, mid, None, epoch + 1, 7, 0, offsets)
    assert stale == {("t", 0): Errors.ILLEGAL_GENERATION}
    ok = answered(env.classic.handle_txn_commit_offsets, G, mid, None, epoch, 7, 0, offsets)
    assert ok == {("t", 0): Errors.NONE}


@pytest.mark.parametrize(
    ("req", "message"),
    [
        ({"member_epoch": 0, "subscribed_topic_names": ["t"], "topic_partitions": []},
         "RebalanceTimeoutMs must be provided in first request."),
        ({"member_epoch": 0, "rebalance_timeout_ms": 1000, "topic_partitions": []},
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
         "(re-)joining."),
        ({"member_epoch": 0, "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["t"]},
         "TopicPartitions must be empty when (re-)joining."),
        ({"member_epoch": 3}, "MemberId can't be empty."),
        ({"member_epoch": -1}, "MemberId can't be empty."),
        ({"member_epoch": -2, "member_id": "m"}, "InstanceId can't be null."),
        ({"member_epoch": -3, "member_id": "m"}, "MemberEpoch is invalid."),
        ({"member_epoch": 1, "member_id": "m", "instance_id": " "}, "InstanceId can't be empty."),
    ],
)  # fmt: skip
def test_heartbeat_invalid_requests(env: Env, req: dict[str, Any], message: str) -> None:
    r = env.cg_heartbeat(**req)
    assert r["error_code"] == int(Errors.INVALID_REQUEST)
    assert r["error_message"] == message


def test_heartbeat_error_paths(env: Env) -> None:
    # Unknown group: a member that is not joining, or leaving.
    r = env.cg_heartbeat(member_id="m", member_epoch=1)
    assert r["error_code"] == int(Errors.GROUP_ID_NOT_FOUND)
    r = env.cg_heartbeat(member_id="m", member_epoch=-1)
    assert r["error_code"] == int(Errors.GROUP_ID_NOT_FOUND)
    a = env.cg_join()
    r = env.cg_heartbeat(member_id="other", member_epoch=1)
    assert r["error_code"] == int(Errors.UNKNOWN_MEMBER_ID)
    r = env.cg_heartbeat(member_id=a["member_id"], member_epoch=a["member_epoch"] + 7)
    assert r["error_code"] == int(Errors.FENCED_MEMBER_EPOCH)
    r = env.cg_heartbeat(member_id="other", member_epoch=-1)
    assert r["error_code"] == int(Errors.UNKNOWN_MEMBER_ID)
    r = env.cg_heartbeat(
        member_id=a["member_id"],
        member_epoch=a["member_epoch"],
        server_assignor="sticky",
    )
    assert r["error_code"] == int(Errors.UNSUPPORTED_ASSIGNOR)
    r = env.cg_heartbeat(member_id=a["member_id"], member_epoch=-1)
    assert r["error_code"] == 0 and r["member_epoch"] == -1


def test_static_member_leaves_for_a_while(env: Env) -> None:
    a = env.cg_heartbeat(
        member_id="",
        member_epoch=0,
        instance_id="i",
        rebalance_timeout_ms=1000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    r = env.cg_heartbeat(member_id="wrong", member_epoch=-2, instance_id="i")
    assert r["error_code"] == int(Errors.FENCED_INSTANCE_ID)
    r = env.cg_heartbeat(member_id=a["member_id"], member_epoch=-2, instance_id="j")
    assert r["error_code"] == int(Errors.UNKNOWN_MEMBER_ID)
    r = env.cg_heartbeat(member_id=a["member_id"], member_epoch=-2, instance_id="i")
    assert r["error_code"] == 0 and r["member_epoch"] == -2
    group = env.consumer.get(G)
    assert group is not None and group.members[a["member_id"]].assigned


# ConsumerGroupMemberMetadataValue records Apache Kafka 4.1.1 wrote for a consumer-protocol
# member and a classic member (librdkafka, topic "rt") of one consumer group.
KAFKA_CONSUMER_MEMBER = bytes.fromhex(
    "000000000872646b61666b610b2f3132372e302e302e310203727401000493e00001000100"
)
KAFKA_CLASSIC_MEMBER = bytes.fromhex(
    "000000000872646b61666b610b2f3132372e302e302e310203727401000493e00001004c010000afc803"
    "0672616e676519000300000001000272740000000000000000ffffffff0000000b726f756e64726f6269"
    "6e19000300000001000272740000000000000000ffffffff00000000"
)


def test_member_metadata_records_as_kafka_writes_them() -> None:
    consumer = records.read_member_metadata(KAFKA_CONSUMER_MEMBER)
    assert consumer.classic_protocols is None and consumer.subscribed_topic_names == ["rt"]
    assert records.member_metadata_value(consumer) == KAFKA_CONSUMER_MEMBER
    classic = records.read_member_metadata(KAFKA_CLASSIC_MEMBER)
    assert classic.classic_session_timeout_ms == 45000
    assert [name for name, _ in classic.classic_protocols or []] == ["range", "roundrobin"]
    assert records.member_metadata_value(classic) == KAFKA_CLASSIC_MEMBER


def test_classic_members_of_a_consumer_group_survive_a_reload() -> None:
    e = Env()
    written: dict[bytes, bytes | None] = {}
    e.consumer.store = lambda _g, batch, _done: written.update(batch)
    try:
        leader, _follower, gen = e.stable_classic_pair()
        e.cg_join()
        again = ConsumerGroupCoordinator(ConsumerGroupConfig(), e.topics, [].append, time=e.clock)
        again.load({k: v for k, v in written.items() if v is not None})
        group = again.get(G)
        assert group is not None and len(group.members) == 3
        member = group.members[leader]
        assert member.classic is not None and member.classic.session_timeout_ms == 5000
        assert member.classic.protocol_name == "range" and member.member_epoch == gen
        assert sum(m.classic is None for m in group.members.values()) == 1
    finally:
        e.classic.shutdown()


def test_classic_member_that_does_not_rejoin_is_removed() -> None:
    e = Env(session_ms=30000)
    try:
        leader, follower, gen = e.stable_classic_pair()
        e.cg_join()
        assert e.heartbeat(leader, gen) is Errors.REBALANCE_IN_PROGRESS
        e.clock.sleep(4000)
        # Heartbeats keep its session, not its place: it was told to rejoin.
        assert e.heartbeat(leader, gen) is Errors.REBALANCE_IN_PROGRESS
        e.clock.sleep(1500)
        group = e.consumer.get(G)
        assert group is not None and leader not in group.members and follower in group.members
        assert e.heartbeat(leader, gen) is Errors.UNKNOWN_MEMBER_ID
    finally:
        e.classic.shutdown()
