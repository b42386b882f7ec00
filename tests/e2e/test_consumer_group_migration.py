"""Consumer groups that change protocol while in use, with confluent-kafka clients, on kafkars
and on Apache Kafka 4.1 (the same test against both proves it right):

- a `group.protocol=consumer` member joining a classic group converts it online (Kafka's
  `group.consumer.migration.policy=bidirectional`): the classic members stay and share the
  partitions; when the consumer-protocol member leaves, the group is classic again;
- a consume-transform-produce loop of a consumer-protocol member commits its offsets in
  its transactions (`send_offsets_to_transaction`, TxnOffsetCommit with member epochs).
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import Errors
from kafkars.testing.reference_kafka import ReferenceKafka

CONFIG: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.session.timeout.ms": 10000,
    "group.consumer.min.session.timeout.ms": 1000,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
}


# The reference side is long (`make test-long`): it checks the test, the kafkars side runs in CI.
@pytest.fixture(scope="module", params=["kafkars", pytest.param("kafka", marks=pytest.mark.long)])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "kafkars":
        with Broker(process=True, config=CONFIG) as b:
            yield b.bootstrap_servers
    else:
        try:
            kafka = ReferenceKafka(config=CONFIG, features={"transaction.version": 1})
            kafka.__enter__()
        except Exception as e:  # no java or jars here: kafkars alone is tested
            pytest.skip(f"Apache Kafka is not available: {e}")
        try:
            yield kafka.bootstrap_servers
        finally:
            kafka.__exit__(None, None, None)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)


def produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % partitions)
    assert p.flush(20) == 0


def consumer(bootstrap: str, group_id: str, protocol: str, **extra: Any) -> Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **extra,
    }
    if protocol == "classic":
        # The consumer protocol takes these from the broker.
        config.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
    return Consumer(config)


class Tally:
    """Every record each consumer got, by (partition, offset)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, str]] = []

    def poll(self, consumers: list[Consumer], timeout: float = 0.05) -> None:
        for c in consumers:
            m = c.poll(timeout)
            if m is None:
                continue
            if m.error() is not None:
                raise KafkaException(m.error())
            self.seen.append((m.partition(), m.offset(), m.value().decode()))


def poll_until(
    consumers: list[Consumer], tally: Tally, done: Callable[[], bool], timeout: float = 60
) -> float:
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < timeout, "timed out"
        tally.poll(consumers)
    return time.monotonic() - start


def settled(consumers: list[Consumer], tally: Tally, counts: list[int], hold: float = 3.0) -> None:
    """Polls until each consumer holds `counts` partitions, unchanged for `hold` seconds."""
    deadline = time.monotonic() + 90
    since: float | None = None
    while time.monotonic() < deadline:
        tally.poll(consumers)
        now = [len(c.assignment()) for c in consumers]
        if now == counts:
            since = since or time.monotonic()
            if time.monotonic() - since >= hold:
                return
        else:
            since = None
    raise AssertionError(f"assignment {[len(c.assignment()) for c in consumers]} != {counts}")


def until_stable(
    bootstrap: str, group_id: str, consumers: list[Consumer], tally: Tally, timeout: float = 60
) -> None:
    """Polls until the group is Stable: a cooperative classic group can still be in its
    follow-up rebalance when the assignment looks settled, and neither broker need take
    a consumer-protocol member into a group in the middle of one."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        described = admin.describe_consumer_groups([group_id])[group_id].result(20)
        if getattr(described.state, "name", "") == "STABLE":
            return
        assert time.monotonic() < deadline, f"group state {described.state}"
        tally.poll(consumers, 0.2)


def group_type(bootstrap: str, group_id: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([group_id])[group_id].result(20)
    return getattr(described.type, "name", str(described.type))


@pytest.mark.parametrize("strategy", ["range,roundrobin", "cooperative-sticky"])
def test_consumer_member_joins_classic_group_and_leaves(bootstrap: str, strategy: str) -> None:
    """Eager classic members give up everything when they rejoin; cooperative ones report
    the partitions they keep in their subscription."""
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    classic = {"partition.assignment.strategy": strategy}
    create_topic(bootstrap, topic, 6)
    tally = Tally()

    # Records are produced only while the group is settled, and committed before it
    # changes: a record consumed twice is the brokers' doing, not a rebalance's.
    a = consumer(bootstrap, group, "classic", **classic)
    b = consumer(bootstrap, group, "classic", **classic)
    for c in (a, b):
        c.subscribe([topic])
    settled([a, b], tally, [3, 3])
    produced = [f"a{i}" for i in range(60)]
    produce(bootstrap, topic, produced, 6)
    poll_until([a, b], tally, lambda: len(tally.seen) >= len(produced))
    for c in (a, b):
        c.commit(asynchronous=False)
    assert group_type(bootstrap, group) == "CLASSIC"
    until_stable(bootstrap, group, [a, b], tally)

    # A consumer-protocol member joins the live classic group: no fatal error, the group
    # is converted and the six partitions spread over the three members.
    new = consumer(bootstrap, group, "consumer")
    new.subscribe([topic])
    settled([a, b, new], tally, [2, 2, 2])
    assert group_type(bootstrap, group) == "CONSUMER"
    more = [f"b{i}" for i in range(60)]
    produce(bootstrap, topic, more, 6)
    produced += more
    poll_until([a, b, new], tally, lambda: len(tally.seen) >= len(produced))
    assert all(len(c.assignment()) == 2 for c in (a, b, new))
    for c in (a, b, new):
        c.commit(asynchronous=False)

    # It leaves: the group is classic again, its two classic members take everything.
    new.close()
    settled([a, b], tally, [3, 3])
    assert group_type(bootstrap, group) == "CLASSIC"
    last = [f"c{i}" for i in range(60)]
    produce(bootstrap, topic, last, 6)
    produced += last
    poll_until([a, b], tally, lambda: len(tally.seen) >= len(produced))
    time.sleep(0.5)
    tally.poll([a, b], 0.2)
    for c in (a, b):
        c.commit(asynchronous=False)
        c.close()

    values = [v for _, _, v in tally.seen]
    assert sorted(values) == sorted(produced), "every record consumed exactly once"
    assert len({(p, o) for p, o, _ in tally.seen}) == len(produced)


def test_consume_transform_produce_with_consumer_protocol(bootstrap: str) -> None:
    source, sink = f"in-{uuid.uuid4().hex[:8]}", f"out-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, source, 3)
    create_topic(bootstrap, sink, 3)
    values = [f"v{i}" for i in range(90)]
    produce(bootstrap, source, values, 3)

    c = consumer(bootstrap, group, "consumer", **{"isolation.level": "read_committed"})
    c.subscribe([source])
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{group}"})
    p.init_transactions(30)
    done = 0
    deadline = time.monotonic() + 60
    while done < len(values):
        assert time.monotonic() < deadline, "timed out"
        batch = c.consume(num_messages=20, timeout=0.5)
        batch = [m for m in batch if m.error() is None]
        if not batch:
            continue
        p.begin_transaction()
        for m in batch:
            p.produce(sink, value=m.value().upper(), partition=m.partition())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata())
        p.commit_transaction(30)
        done += len(batch)

    committed = c.committed([TopicPartition(source, i) for i in range(3)], timeout=20)
    assert sum(tp.offset for tp in committed) == len(values)
    c.close()

    reader = consumer(
        bootstrap, f"r-{uuid.uuid4().hex[:8]}", "classic", **{"isolation.level": "read_committed"}
    )
    reader.subscribe([sink])
    out = Tally()
    poll_until([reader], out, lambda: len(out.seen) >= len(values))
    reader.close()
    assert sorted(v for _, _, v in out.seen) == sorted(v.upper() for v in values)


# -- ConsumerGroupHeartbeat's error paths, request by request --------------------------------
CONSUMER_GROUP_HEARTBEAT, FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH = 68, 10, 8, 9
INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, TXN_OFFSET_COMMIT = 22, 25, 28


class Connection:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.correlation = 0

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return bytes(out)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation += 1
        frame = _core.protocol.encode_request(api_key, version, self.correlation, "t", body)
        self.sock.sendall(frame)
        size = struct.unpack(">i", self._read(4))[0]
        return dict(
            _core.protocol.decode_response(api_key, version, self.correlation, self._read(size))
        )

    def heartbeat(self, **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "group_id": "",
            "member_id": "",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None,
            "server_assignor": None,
            "topic_partitions": None,
            **fields,
        }
        return self.call(CONSUMER_GROUP_HEARTBEAT, 0, body)

    def join(self, group: str, topic: str, **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "group_id": group,
            "member_id": str(uuid.uuid4()),
            "rebalance_timeout_ms": 1000,
            "subscribed_topic_names": [topic],
            "topic_partitions": [],
        }
        return self.heartbeat(**{**body, **fields})


def test_consumer_group_heartbeat_errors(bootstrap: str) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    conn = Connection(bootstrap)
    deadline = time.monotonic() + 30
    while True:  # the offsets topic and its coordinator come up on first use
        conn.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["warm-up"]})
        code = conn.join("warm-up", topic)["error_code"]
        if code not in (14, 15, 16) or time.monotonic() > deadline:
            break
        time.sleep(0.3)

    def outcome(r: dict[str, Any]) -> tuple[str, str | None, int]:
        return Errors(r["error_code"]).name, r["error_message"], r["member_epoch"]

    def new() -> str:
        return f"g-{uuid.uuid4().hex[:8]}"

    join = {"rebalance_timeout_ms": 1000, "topic_partitions": []}
    assert outcome(conn.heartbeat(group_id=new(), subscribed_topic_names=[topic])) == (
        "INVALID_REQUEST",
        "RebalanceTimeoutMs must be provided in first request.",
        0,
    )
    assert outcome(conn.heartbeat(group_id=new(), **join)) == (
        "INVALID_REQUEST",
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        0,
    )
    r = conn.heartbeat(group_id=new(), rebalance_timeout_ms=1000, subscribed_topic_names=[topic])
    assert outcome(r) == ("INVALID_REQUEST", "TopicPartitions must be empty when (re-)joining.", 0)
    assert outcome(conn.heartbeat(group_id=new(), member_epoch=3)) == (
        "INVALID_REQUEST",
        "MemberId can't be empty.",
        0,
    )
    assert outcome(conn.heartbeat(group_id=new(), member_id="m", member_epoch=-2)) == (
        "INVALID_REQUEST",
        "InstanceId can't be null.",
        0,
    )
    assert outcome(conn.heartbeat(group_id=new(), member_id="m", member_epoch=-3)) == (
        "INVALID_REQUEST",
        "MemberEpoch is invalid.",
        0,
    )
    r = conn.join(new(), topic, server_assignor="sticky")
    assert outcome(r) == (
        "UNSUPPORTED_ASSIGNOR",
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        0,
    )
    g = new()
    assert outcome(conn.heartbeat(group_id=g, member_id="m", member_epoch=1)) == (
        "GROUP_ID_NOT_FOUND",
        f"Consumer group {g} not found.",
        0,
    )
    assert outcome(conn.heartbeat(group_id=g, member_id="m", member_epoch=-1)) == (
        "GROUP_ID_NOT_FOUND",
        f"Group {g} not found.",
        0,
    )
    # An empty subscription is a valid one.
    assert conn.join(new(), topic, subscribed_topic_names=[])["error_code"] == 0

    a = conn.join(g, topic)
    mid, epoch = a["member_id"], a["member_epoch"]
    assert (a["error_code"], epoch) == (0, 1)
    assert outcome(conn.heartbeat(group_id=g, member_id="x", member_epoch=1)) == (
        "UNKNOWN_MEMBER_ID",
        f"Member x is not a member of group {g}.",
        0,
    )
    assert outcome(conn.heartbeat(group_id=g, member_id=mid, member_epoch=9)) == (
        "FENCED_MEMBER_EPOCH",
        "The consumer group member has a greater member epoch (9) than the one known by the "
        "group coordinator (1). The member must abandon all its partitions and rejoin.",
        0,
    )
    assert outcome(conn.heartbeat(group_id=g, member_id="x", member_epoch=-1)) == (
        "UNKNOWN_MEMBER_ID",
        f"Member x is not a member of group {g}.",
        0,
    )
    s = conn.join(g, topic, instance_id="i1")
    assert s["error_code"] == 0
    r = conn.heartbeat(group_id=g, member_id="x", member_epoch=-2, instance_id="i1")
    assert outcome(r) == (
        "FENCED_INSTANCE_ID",
        f"Static member x with instance id i1 was fenced by member {s['member_id']}.",
        0,
    )
    r = conn.heartbeat(group_id=g, member_id=s["member_id"], member_epoch=-2, instance_id="i9")
    assert outcome(r) == ("UNKNOWN_MEMBER_ID", "Instance id i9 is unknown.", 0)
    r = conn.join(g, topic, instance_id="i1")
    assert r["error_code"] == Errors.UNRELEASED_INSTANCE_ID
    r = conn.heartbeat(group_id=g, member_id=s["member_id"], member_epoch=-2, instance_id="i1")
    assert outcome(r) == ("NONE", None, -2)
    assert outcome(conn.heartbeat(group_id=g, member_id=mid, member_epoch=-1)) == ("NONE", None, -1)
    r = conn.heartbeat(group_id=g, member_id=mid, member_epoch=-1)
    assert outcome(r) == ("UNKNOWN_MEMBER_ID", f"Member {mid} is not a member of group {g}.", 0)
    conn.sock.close()


def test_offset_commit_and_fetch_check_member_epochs(bootstrap: str) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    conn = Connection(bootstrap)
    g = f"g-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + 30
    while True:
        conn.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [g]})
        a = conn.join(g, topic)
        if a["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert a["error_code"] == 0
    mid, epoch = a["member_id"], a["member_epoch"]

    def commit(version: int, member: str, member_epoch: int) -> str:
        r = conn.call(
            OFFSET_COMMIT,
            version,
            {
                "group_id": g,
                "generation_id_or_member_epoch": member_epoch,
                "member_id": member,
                "group_instance_id": None,
                "retention_time_ms": -1,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 3,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        return Errors(r["topics"][0]["partitions"][0]["error_code"]).name

    def fetch(member: str | None, member_epoch: int) -> tuple[str, list[Any]]:
        r = conn.call(
            OFFSET_FETCH,
            9,
            {
                "groups": [
                    {
                        "group_id": g,
                        "member_id": member,
                        "member_epoch": member_epoch,
                        "topics": [{"name": topic, "partition_indexes": [0]}],
                    }
                ],
                "require_stable": False,
            },
        )
        group = r["groups"][0]
        offsets = [p["committed_offset"] for t in group["topics"] for p in t["partitions"]]
        return Errors(group["error_code"]).name, offsets

    assert commit(9, mid, epoch + 1) == "STALE_MEMBER_EPOCH"
    assert commit(9, "nobody", epoch) == "UNKNOWN_MEMBER_ID"
    assert commit(8, mid, epoch) == "UNSUPPORTED_VERSION"
    assert commit(9, "", -1) == "UNKNOWN_MEMBER_ID"
    assert commit(9, mid, epoch) == "NONE"
    assert fetch(mid, epoch) == ("NONE", [3])
    assert fetch(None, -1) == ("NONE", [3])
    assert fetch(mid, epoch + 1) == ("STALE_MEMBER_EPOCH", [])
    assert fetch("nobody", epoch) == ("UNKNOWN_MEMBER_ID", [])
    conn.sock.close()


def test_txn_offset_commit_checks_member_epochs(bootstrap: str) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    conn = Connection(bootstrap)
    g, txn = f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + 30
    while True:
        conn.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [g]})
        conn.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [txn]})
        a = conn.join(g, topic)
        init = conn.call(
            INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": txn,
                "transaction_timeout_ms": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        ready = a["error_code"] not in (14, 15, 16) and init["error_code"] not in (14, 15, 16)
        if ready or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert a["error_code"] == 0 and init["error_code"] == 0
    pid, pepoch = init["producer_id"], init["producer_epoch"]
    added = conn.call(
        ADD_OFFSETS_TO_TXN,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": pepoch, "group_id": g},
    )
    assert added["error_code"] == 0

    def commit(member: str, generation: int) -> str:
        r = conn.call(
            TXN_OFFSET_COMMIT,
            3,
            {
                "transactional_id": txn,
                "group_id": g,
                "producer_id": pid,
                "producer_epoch": pepoch,
                "generation_id": generation,
                "member_id": member,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 5,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        return Errors(r["topics"][0]["partitions"][0]["error_code"]).name

    mid, epoch = a["member_id"], a["member_epoch"]
    assert commit(mid, epoch + 1) == "ILLEGAL_GENERATION"
    assert commit("nobody", epoch) == "UNKNOWN_MEMBER_ID"
    # A producer that does not name the consumer commits (Kafka 4.1 answers so).
    assert commit("", -1) == "NONE"
    assert commit(mid, epoch) == "NONE"
    conn.sock.close()
