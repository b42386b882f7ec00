"""Apache Kafka 3.9 and kafkars brokers in one ZooKeeper-mode cluster (issue 25): topics
created through either kind, acks=all produce with a leader of each kind and its follower
of the other kind, and the controller moving between the kinds."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.controller.channel_manager import call_broker
from kafkars.protocol import ApiKey

from .conftest import SESSION_TIMEOUT_MS, MixedCluster, needs_mixed

pytestmark = needs_mixed
RECORDS = 500


def quiet(conf: dict[str, object]) -> dict[str, object]:
    return {**conf, "log_level": 0, "logger": lambda *a: None}


def wait_for(predicate, timeout: float, what: str) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    last: object = None
    while time.monotonic() - start < timeout:
        try:
            if predicate():
                return time.monotonic() - start
        except Exception as e:  # a broker between states answers with errors
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} ({last})")


def create_topic(
    cluster: MixedCluster, through: int, assignment: list[list[int]], min_insync: int = 2
) -> str:
    """A topic with `assignment` (replicas per partition, the first the preferred
    leader), created by a client bootstrapped from broker `through` only; it must then
    appear with a leader everywhere."""
    name = f"mixed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap(through)}))
    topic = NewTopic(
        name,
        num_partitions=len(assignment),
        replica_assignment=assignment,
        config={"min.insync.replicas": str(min_insync)},
    )
    admin.create_topics([topic])[name].result(60)
    for broker_id in cluster.running():
        wait_for(
            lambda b=broker_id: (
                all(
                    p.leader == assignment[p.id][0]
                    for p in metadata(cluster, b, name).partitions.values()
                )
                and len(metadata(cluster, b, name).partitions) == len(assignment)
            ),
            30,
            f"{name}'s leaders in broker {broker_id}'s metadata",
        )
    return name


def metadata(cluster: MixedCluster, broker_id: int, topic: str):  # type: ignore[no-untyped-def]
    """The topic as broker `broker_id` alone describes it."""
    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap(broker_id)}))
    md = admin.list_topics(topic, timeout=10).topics[topic]
    if md.error is not None:
        raise RuntimeError(str(md.error))
    return md


def isr(cluster: MixedCluster, broker_id: int, topic: str, partition: int) -> list[int]:
    return sorted(metadata(cluster, broker_id, topic).partitions[partition].isrs)


def produce(cluster: MixedCluster, topic: str, partitions: int) -> list[bytes]:
    """RECORDS acks=all records to each partition; returns the acknowledged values."""
    acked: list[bytes] = []
    errors: list[str] = []

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked.append(msg.value())
        else:
            errors.append(str(err))

    p = Producer(
        quiet(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 30000,
            }
        )
    )
    for partition in range(partitions):
        for i in range(RECORDS):
            p.produce(
                topic, b"%d-%d" % (partition, i), partition=partition, on_delivery=on_delivery
            )
            p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    return acked


def consume(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    c = Consumer(
        quiet({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(out) < expected and time.monotonic() < deadline:
        out += [m.value() for m in c.consume(1000, 0.5) if m.error() is None]
    c.close()
    return out


def check_round_trip(cluster: MixedCluster, through: int) -> None:
    """Partition 0 led by a Kafka broker with a kafkars follower, partition 1 the other
    way round: acks=all with min.insync.replicas=2 is acknowledged only once the follower
    of the other kind has fetched it (the high watermark), the ISR stays both, and every
    acknowledged record is read back once through either kind."""
    k, o = cluster.kafka_ids[0], cluster.our_ids[0]
    topic = create_topic(cluster, through, [[k, o], [o, k]])
    acked = produce(cluster, topic, 2)
    assert len(acked) == 2 * RECORDS
    for broker_id in cluster.running():
        for partition in (0, 1):
            assert isr(cluster, broker_id, topic, partition) == sorted([k, o])
    for broker_id in cluster.running():
        values = consume(cluster.bootstrap(broker_id), topic, 2, len(acked))
        assert sorted(values) == sorted(acked), f"read through broker {broker_id}"


def test_topics_created_through_either_kind(pair: MixedCluster) -> None:
    assert pair.controller() == pair.kafka_ids[0]
    check_round_trip(pair, pair.kafka_ids[0])
    check_round_trip(pair, pair.our_ids[0])


def test_controller_moves_between_kinds(pair: MixedCluster) -> None:
    """Kafka holds /controller first; killed, kafkars takes it and leads the cluster
    (LeaderAndIsr and UpdateMetadata to the Kafka broker when it returns); then kafkars is
    killed and Kafka takes it back."""
    k, o = pair.kafka_ids[0], pair.our_ids[0]
    assert pair.controller() == k
    for victim, successor in ((k, o), (o, k)):
        pair.kill(victim)
        wait_for(
            lambda s=successor: pair.controller() == s,
            SESSION_TIMEOUT_MS / 1000 + 20,
            f"{successor} as controller",
        )
        pair.start_broker(victim)
        assert pair.controller() == successor
        check_round_trip(pair, victim)


HELD_RECORDS = 50


def high_watermarks(cluster: MixedCluster, topic: str) -> list[int]:
    """Each partition's high watermark, from its leader (ListOffsets)."""
    c = Consumer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused"}))
    try:
        return [
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
            for p in range(len(metadata(cluster, cluster.running()[0], topic).partitions))
        ]
    finally:
        c.close()


def assert_high_watermark_held(cluster: MixedCluster, topic: str) -> None:
    """Leaders whose ISR is under min.insync.replicas take acks=1 records but, as Kafka
    3.9 does (its Partition.maybeIncrementLeaderHW), do not move the high watermark: a
    consumer sees none of them while the followers in the ISR already have them."""
    before = high_watermarks(cluster, topic)
    p = Producer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1"}))
    for partition in range(len(before)):
        for i in range(HELD_RECORDS):
            p.produce(topic, b"held-%d" % i, partition=partition)
    assert p.flush(30) == 0
    # The followers in the ISR fetch within their fetch wait (500 ms): a leader that
    # counted them would have moved the watermark by then.
    for _ in range(10):
        time.sleep(0.2)
        assert high_watermarks(cluster, topic) == before


def test_kafka_leader_under_a_kafkars_controller(trio: MixedCluster) -> None:
    """A Kafka leader changes its ISR through AlterPartition to the kafkars controller: a
    kafkars follower killed leaves the ISR (the controller's LeaderAndIsr to the Kafka
    leader), started again it catches up and the Kafka leader's AlterPartition puts it
    back. Meanwhile a Kafka and a kafkars leader under min.insync.replicas hold their
    high watermarks alike. A Kafka broker asks the kafkars controller for producer ids
    (AllocateProducerIds) when an idempotent producer starts on it."""
    k, controller, follower = trio.kafka_ids[0], trio.our_ids[0], trio.our_ids[1]
    assert trio.controller() == controller
    topic = create_topic(trio, k, [[k, follower, controller]])
    # min.insync.replicas=3: the follower's death leaves each leader, Kafka's (0) and
    # kafkars' (1), under it.
    held = create_topic(trio, k, [[k, follower, controller], [controller, follower, k]], 3)
    produce(trio, topic, 1)
    produce(trio, held, 2)
    trio.kill(follower)
    wait_for(lambda: isr(trio, k, topic, 0) == sorted([k, controller]), 30, "the ISR shrunk")
    for p in (0, 1):
        wait_for(lambda p=p: isr(trio, k, held, p) == sorted([k, controller]), 30, f"{held}-{p}")
    produce(trio, topic, 1)
    assert_high_watermark_held(trio, held)
    trio.start_broker(follower)
    everyone = sorted([k, follower, controller])
    for broker_id in trio.running():
        wait_for(
            lambda b=broker_id: isr(trio, b, topic, 0) == everyone, 60, f"a full ISR at {broker_id}"
        )
        for p in (0, 1):
            wait_for(lambda b=broker_id, p=p: isr(trio, b, held, p) == everyone, 60, f"{held}-{p}")
    wait_for(
        lambda: high_watermarks(trio, held) == [RECORDS + HELD_RECORDS] * 2,
        30,
        f"the high watermarks of {held} past the acks=1 records",
    )
    assert trio.controller() == controller
    values = consume(trio.bootstrap(follower), topic, 1, 2 * RECORDS)
    assert len(values) == 2 * RECORDS

    # InitProducerId at the Kafka broker: it takes a producer-id block from the controller.
    host, port = trio.bootstrap(k).split(":")

    def init_producer_id() -> bool:
        reply.update(
            call_broker(
                (host, int(port)),
                int(ApiKey.INIT_PRODUCER_ID),
                4,
                {
                    "transactional_id": None,
                    "transaction_timeout_ms": -1,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
                client_id="mixed-test",
            )
        )
        # COORDINATOR_LOAD_IN_PROGRESS while the broker fetches its block.
        return bool(reply["error_code"] == 0)

    reply: dict[str, Any] = {}
    wait_for(init_producer_id, 30, "a producer id from the Kafka broker")
    assert reply["error_code"] == 0, reply
    assert reply["producer_id"] >= 0
    assert trio.zk_client is not None
    raw, _ = trio.zk_client.get("/latest_producer_id_block")
    block = json.loads(raw)
    start, end = int(block["block_start"]), int(block["block_end"])  # strings, as Kafka writes
    # Blocks are handed out in order; another broker (an idempotent producer's InitProducerId
    # at the kafkars broker) may have taken the latest one since.
    if block["broker"] == k:
        assert start <= reply["producer_id"] <= end, block
    else:
        assert reply["producer_id"] < start, block
