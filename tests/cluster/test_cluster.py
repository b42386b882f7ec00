"""Cluster mode against a real ZooKeeper (Debian's zookeeper package) and three broker
processes: replication factor 3, acks=all, leader failover on SIGKILL, controlled
shutdown on SIGTERM, controller failover, a returning broker catching up."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
)

from kafkars import _core
from kafkars.protocol import ApiKey, Errors
from kafkars.testing.cluster import Cluster
from kafkars.zk import KafkaZkClient

from .helpers import (
    SESSION_TIMEOUT_MS,
    Producing,
    consume_all,
    create_topic,
    leader_failover_under_load,
    needs_zookeeper,
    partition_metadata,
    quiet,
    wait_for,
)

pytestmark = needs_zookeeper


def test_replication_factor_three_with_acks_all(cluster: Cluster) -> None:
    topic = create_topic(cluster, 3, **{"min.insync.replicas": "2"})
    for p in range(3):
        leader, replicas, isr = partition_metadata(cluster, topic, p)
        assert replicas == [1, 2, 3] and isr == [1, 2, 3] and leader in replicas
    producer = Producer(
        quiet(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                # Retries (a slow machine) must not write a record twice.
                "enable.idempotence": True,
            }
        )
    )
    for i in range(300):
        producer.produce(topic, value=b"%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    assert sorted(consume_all(cluster, topic, 3)) == sorted(b"%d" % i for i in range(300))


def test_leader_killed_new_leader_and_nothing_acknowledged_lost(cluster: Cluster) -> None:
    topic = create_topic(cluster, 1, **{"min.insync.replicas": "2"})
    failover_s = leader_failover_under_load(cluster, topic)
    assert failover_s < SESSION_TIMEOUT_MS / 1000 + 2, failover_s


def test_controlled_shutdown_moves_leadership_first(cluster: Cluster) -> None:
    topic = create_topic(cluster, 3)
    leaders = {partition_metadata(cluster, topic, p)[0] for p in range(3)}
    victim = sorted(leaders)[0]
    cluster.stop(victim)
    # Leadership moved before the broker went away; it leaves the ISRs as it goes.
    for p in range(3):
        leader, _, _ = partition_metadata(cluster, topic, p)
        assert leader != victim and leader >= 0
    wait_for(
        lambda: all(victim not in partition_metadata(cluster, topic, p)[2] for p in range(3)),
        30,
        f"broker {victim} out of every ISR",
    )
    log = cluster.brokers[victim].server_log()
    assert "controlled shutdown succeeded" in log
    cluster.start(victim)
    wait_for(
        lambda: all(partition_metadata(cluster, topic, p)[2] == [1, 2, 3] for p in range(3)),
        30,
        "the restarted broker back in every ISR",
    )


def test_controller_killed_another_takes_over(cluster: Cluster) -> None:
    zk = KafkaZkClient(f"{cluster.zookeeper.connect}/kafkars")
    try:
        first = zk.get_controller_id()
        assert first in (1, 2, 3)
        _, epoch_before = zk.controller_epoch()[0], zk.controller_epoch()[0]
        cluster.kill(first)
        wait_for(
            lambda: zk.get_controller_id() not in (None, first),
            SESSION_TIMEOUT_MS / 1000 + 10,
            "a new controller",
        )
        assert zk.controller_epoch()[0] > epoch_before
        # The new controller does its job: a new topic gets leaders on the live brokers.
        topic = create_topic(cluster, 2, rf=2)
        for p in range(2):
            leader, replicas, _ = partition_metadata(cluster, topic, p)
            assert leader in replicas and leader != first
    finally:
        zk.close()


def test_a_leader_and_isr_whose_leader_epoch_is_not_newer_is_ignored(cluster: Cluster) -> None:
    """Kafka's becomeLeaderOrFollower: a partition state at the leader epoch a broker
    already holds (a replayed or late controller decision) is answered
    STALE_CONTROLLER_EPOCH and not applied; an older epoch too."""
    topic = create_topic(cluster, 1)
    leader, replicas, _ = partition_metadata(cluster, topic, 0)
    follower = next(b for b in replicas if b != leader)
    zk = KafkaZkClient(f"{cluster.zookeeper.connect}/kafkars")
    try:
        state = zk.get_partition_state(topic, 0)
        assert state is not None
        controller_epoch = zk.controller_epoch()[0]
        topic_id = zk.get_topic_assignment(topic).topic_id
        controller_id = zk.get_controller_id()
    finally:
        zk.close()
    host, port = cluster.brokers[follower].bootstrap_servers.rsplit(":", 1)
    with _core.BrokerConnection(host, int(port)) as conn:
        for leader_epoch in (state.leader_epoch, state.leader_epoch - 1):
            body = {
                "controller_id": controller_id,
                "controller_epoch": controller_epoch,
                "broker_epoch": -1,
                "topic_states": [
                    {
                        "topic_name": topic,
                        "topic_id": topic_id,
                        "partition_states": [
                            {
                                "partition_index": 0,
                                "controller_epoch": state.controller_epoch,
                                "leader": state.leader,
                                "leader_epoch": leader_epoch,
                                "isr": state.isr,
                                "partition_epoch": state.zk_version,
                                "replicas": replicas,
                            }
                        ],
                    }
                ],
                "live_leaders": [],
            }
            response = conn.call(ApiKey.LEADER_AND_ISR, 5, body)
            assert response["error_code"] == 0
            [[error]] = [t["partition_errors"] for t in response["topics"]]
            assert (error["partition_index"], error["error_code"]) == (
                0,
                Errors.STALE_CONTROLLER_EPOCH,
            ), leader_epoch


def test_two_of_three_down_acks_all_is_refused(cluster: Cluster) -> None:
    topic = create_topic(cluster, 1, **{"min.insync.replicas": "2"})
    leader, _, _ = partition_metadata(cluster, topic, 0)
    others = [b for b in (1, 2, 3) if b != leader]
    for b in others:
        cluster.stop(b)
    wait_for(lambda: partition_metadata(cluster, topic, 0)[2] == [leader], 30, "ISR shrink")
    producer = Producer(
        quiet(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "message.timeout.ms": 3000,
                "retries": 0,
            }
        )
    )
    results: list[KafkaError | None] = []
    producer.produce(topic, value=b"x", on_delivery=lambda err, msg: results.append(err))
    producer.flush(10)
    assert results and results[0] is not None
    assert results[0].code() == KafkaError.NOT_ENOUGH_REPLICAS


def test_consumer_group_survives_its_coordinator(cluster: Cluster) -> None:
    topic = create_topic(cluster, 2)
    producer = Producer(
        quiet({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    )
    for i in range(100):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    group = f"g-{uuid.uuid4().hex[:6]}"

    def consumer() -> Consumer:
        c = Consumer(
            quiet(
                {
                    "bootstrap.servers": cluster.bootstrap_servers,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                    "session.timeout.ms": 6000,
                }
            )
        )
        c.subscribe([topic])
        return c

    first = consumer()
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 50 and time.monotonic() < deadline:
        got += [m.value() for m in first.consume(50 - len(got), 1.0) if m.error() is None]
    assert len(got) == 50
    first.commit(asynchronous=False)
    first.close()
    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
    description = admin.describe_consumer_groups([group])[group].result(10)
    coordinator = description.coordinator.id
    # The committed offsets are replicated before the coordinator goes.
    time.sleep(1)
    cluster.kill(coordinator)
    second = consumer()
    rest: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(rest) < 50 and time.monotonic() < deadline:
        rest += [m.value() for m in second.consume(50, 1.0) if m.error() is None]
    second.close()
    assert sorted(got + rest) == sorted(b"%d" % i for i in range(100))


def test_session_expiry_is_handled_like_a_death(cluster: Cluster) -> None:
    topic = create_topic(cluster, 3)
    zk = KafkaZkClient(f"{cluster.zookeeper.connect}/kafkars")
    try:
        controller = zk.get_controller_id()
    finally:
        zk.close()
    leaders = {p: partition_metadata(cluster, topic, p)[0] for p in range(3)}
    victim = next(b for b in leaders.values() if b != controller)
    cluster.pause(victim)
    try:
        wait_for(
            lambda: all(
                partition_metadata(cluster, topic, p)[0] not in (victim, -1) for p in range(3)
            ),
            SESSION_TIMEOUT_MS / 1000 + 10,
            f"leadership away from the stopped broker {victim}",
        )
    finally:
        cluster.resume(victim)
    # Back, it registers again with a new session, follows, and rejoins every ISR.
    wait_for(
        lambda: all(partition_metadata(cluster, topic, p)[2] == [1, 2, 3] for p in range(3)),
        40,
        f"broker {victim} back in every ISR",
    )


def test_transactions_across_brokers_and_a_coordinator_failure(cluster: Cluster) -> None:
    topic = create_topic(cluster, 3)
    tid = f"txn-{uuid.uuid4().hex[:6]}"

    def producer() -> Producer:
        p = Producer(
            quiet(
                {
                    "bootstrap.servers": cluster.bootstrap_servers,
                    "transactional.id": tid,
                    "transaction.timeout.ms": 20000,
                }
            )
        )
        p.init_transactions(30)
        return p

    p = producer()
    # Partitions led by different brokers: markers go to remote leaders.
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, value=b"commit-%d" % i, partition=i % 3)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, value=b"abort-%d" % i, partition=i % 3)
    p.abort_transaction(30)

    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
    state = admin.list_topics("__transaction_state", timeout=10).topics["__transaction_state"]
    assert state.partitions[0].replicas and len(state.partitions[0].replicas) == 3
    # The coordinator's broker dies; another loads the transactional id and carries on.
    coordinator = next(
        b for b in (1, 2, 3) if any(part.leader == b for part in state.partitions.values())
    )
    del p
    zk = KafkaZkClient(f"{cluster.zookeeper.connect}/kafkars")
    try:
        controller = zk.get_controller_id()
    finally:
        zk.close()
    del controller
    cluster.kill(coordinator)
    p = producer()
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, value=b"after-%d" % i, partition=i % 3)
    p.commit_transaction(60)

    c = Consumer(
        quiet(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "unused",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
    )
    c.assign([TopicPartition(topic, i, 0) for i in range(3)])
    values: list[bytes] = []
    idle = 0
    while idle < 5:
        msgs = c.consume(1000, 1.0)
        idle = 0 if msgs else idle + 1
        values += [m.value() for m in msgs if m.error() is None]
    c.close()
    expected = [b"commit-%d" % i for i in range(30)] + [b"after-%d" % i for i in range(30)]
    assert sorted(values) == sorted(expected)


def test_preferred_leader_election(cluster: Cluster) -> None:
    from confluent_kafka import ElectionType

    topic = create_topic(cluster, 1)
    preferred, replicas, _ = partition_metadata(cluster, topic, 0)
    tp = TopicPartition(topic, 0)

    def elect(kind: ElectionType) -> dict[TopicPartition, KafkaError | None]:
        # A new client each time: the controller may have moved (a client that cached
        # the old one gets NOT_CONTROLLER).
        admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
        return admin.elect_leaders(kind, [tp]).result(30)  # type: ignore[no-any-return]

    # Already led by its preferred replica: nothing to do.
    result = elect(ElectionType.PREFERRED)
    assert result[tp] is not None and result[tp].code() == KafkaError.ELECTION_NOT_NEEDED
    # Leadership moves away (controlled shutdown) and stays away when it returns...
    cluster.stop(preferred)
    cluster.start(preferred)
    wait_for(lambda: partition_metadata(cluster, topic, 0)[2] == [1, 2, 3], 30, "full ISR")
    assert partition_metadata(cluster, topic, 0)[0] != preferred
    # ...until a preferred election gives it back.
    result = elect(ElectionType.PREFERRED)
    assert result[tp] is None
    wait_for(lambda: partition_metadata(cluster, topic, 0)[0] == preferred, 10, "preferred leader")
    # Unclean election is not needed while a leader lives.
    result = elect(ElectionType.UNCLEAN)
    assert result[tp] is not None and result[tp].code() == KafkaError.ELECTION_NOT_NEEDED


def call(
    cluster: Cluster, broker_id: int, api_key: int, version: int, body: dict[str, Any]
) -> dict[str, Any]:
    """One request to one broker, through the broker's codec."""
    from kafkars.controller.channel_manager import call_broker

    _, _, host, port = cluster.brokers[broker_id].listeners[0]
    return call_broker((host, port), api_key, version, body, client_id="test")


def describe_topic_partitions(cluster: Cluster, broker_id: int, topic: str) -> list[dict[str, Any]]:
    """Every partition of `topic` from DescribeTopicPartitions, two to a page."""
    partitions: list[dict[str, Any]] = []
    cursor = None
    while True:
        body = {"topics": [{"name": topic}], "response_partition_limit": 2, "cursor": cursor}
        response = call(cluster, broker_id, 75, 0, body)
        [entry] = response["topics"]
        assert entry["error_code"] == 0
        partitions += entry["partitions"]
        cursor = response["next_cursor"]
        if cursor is None:
            return partitions


def test_describe_topic_partitions_shows_replicas_isr_and_offline_replicas(
    cluster: Cluster,
) -> None:
    topic = create_topic(cluster, 5)
    controller = call(cluster, 1, 3, 12, {"topics": []})["controller_id"]
    victim = next(b for b in (3, 2, 1) if b != controller)
    asker = next(b for b in (1, 2, 3) if b != victim)
    partitions = describe_topic_partitions(cluster, asker, topic)
    assert [p["partition_index"] for p in partitions] == list(range(5))
    for p in partitions:
        assert sorted(p["replica_nodes"]) == sorted(p["isr_nodes"]) == [1, 2, 3]
        assert p["leader_id"] in (1, 2, 3) and p["offline_replicas"] == []
        assert p["eligible_leader_replicas"] == []

    cluster.kill(victim)

    def victim_offline() -> bool:
        ps = describe_topic_partitions(cluster, asker, topic)
        return all(
            p["offline_replicas"] == [victim]
            and victim in p["replica_nodes"]
            and victim not in p["isr_nodes"]
            and p["leader_id"] not in (victim, -1)
            for p in ps
        )

    wait_for(victim_offline, 30, f"broker {victim}'s replicas to show offline")


def test_replicas_are_placed_across_racks() -> None:
    racks = {1: "rack-a", 2: "rack-a", 3: "rack-b", 4: "rack-b"}
    with Cluster(
        4,
        config={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS},
        broker_configs={b: {"broker.rack": r} for b, r in racks.items()},
    ) as c:
        # Every broker registered its rack; Metadata and DescribeCluster serve it.
        metadata = call(c, 2, 3, 12, {"topics": []})
        assert {b["node_id"]: b["rack"] for b in metadata["brokers"]} == racks
        admin = AdminClient(quiet({"bootstrap.servers": c.bootstrap_servers}))
        described = admin.describe_cluster().result(10)
        assert {n.id: n.rack for n in described.nodes} == racks

        def spans_both_racks(partitions: int) -> bool:
            meta = admin.list_topics(topic, timeout=10).topics[topic].partitions
            assert len(meta) == partitions
            return all({racks[b] for b in p.replicas} == set(racks.values()) for p in meta.values())

        topic = create_topic(c, 8, rf=2)
        assert spans_both_racks(8)
        admin.create_partitions([NewPartitions(topic, 12)])[topic].result(30)
        wait_for(lambda: spans_both_racks(12), 10, "the added partitions across both racks")


def test_topic_config_change_reaches_every_broker(cluster: Cluster) -> None:
    """AlterConfigs on one broker: the partition's leader (another broker) applies it
    through /config/changes, as Kafka's brokers do."""
    topic = create_topic(cluster, 1, rf=3)
    leader, _, _ = partition_metadata(cluster, topic, 0)
    other = min(set(cluster.brokers) - {leader})
    admin = AdminClient(quiet({"bootstrap.servers": cluster.brokers[other].bootstrap_servers}))
    # A batch larger than max.message.bytes: the leader must refuse it (MESSAGE_TOO_LARGE).
    resource = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "200", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    errors: list[str] = []

    def refused() -> bool:
        p = Producer(
            quiet(
                {
                    "bootstrap.servers": cluster.brokers[leader].bootstrap_servers,
                    "retries": 0,
                    "message.timeout.ms": 5000,
                }
            )
        )
        p.produce(
            topic, b"x" * 1000, partition=0, on_delivery=lambda err, _: errors.append(str(err))
        )
        p.flush(10)
        return bool(errors) and "MSG_SIZE_TOO_LARGE" in errors[-1]

    wait_for(refused, 20, "the leader to apply max.message.bytes=200")
    third = (set(cluster.brokers) - {leader, other}).pop()
    viewer = AdminClient(quiet({"bootstrap.servers": cluster.brokers[third].bootstrap_servers}))
    described = viewer.describe_configs([ConfigResource("topic", topic)])
    (configs,) = [f.result(30) for f in described.values()]
    assert configs["max.message.bytes"].value == "200"


def test_rolling_restart_under_load_loses_nothing(cluster: Cluster) -> None:
    """Each broker in turn: SIGTERM (controlled shutdown), start again, wait until it is
    back in every ISR; an idempotent acks=all producer writes all along."""
    topic = create_topic(cluster, 1, **{"min.insync.replicas": "2"})
    with Producing(cluster, topic) as producing:
        wait_for(lambda: len(producing.acked) > 100, 20, "the first acknowledgements")
        for broker in sorted(cluster.brokers):
            cluster.stop(broker)
            count = len(producing.acked)
            wait_for(
                lambda n=count: len(producing.acked) > n + 50 or bool(producing.errors),
                60,
                f"writes without broker {broker} ({partition_metadata(cluster, topic, 0)})",
            )
            assert not producing.errors, (broker, producing.errors[:3])
            cluster.start(broker)
            wait_for(
                lambda: partition_metadata(cluster, topic, 0)[2] == [1, 2, 3],
                30,
                "the restarted broker back in the ISR",
            )
    assert not producing.errors, producing.errors[:3]
    values = consume_all(cluster, topic, 1)
    assert len(values) == len(set(values)), "a record was written twice"
    assert set(producing.acked) <= set(values), "an acknowledged record was lost"


def test_fetch_from_the_closest_replica() -> None:
    """KIP-392: with RackAwareReplicaSelector on the brokers, a consumer whose client.rack
    matches a follower's broker.rack is sent to that follower and reads everything there."""
    racks = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
    with Cluster(
        3,
        config={
            "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
            "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
        },
        broker_configs={b: {"broker.rack": r} for b, r in racks.items()},
    ) as cluster:
        topic = create_topic(cluster, 1)
        leader, _, _ = partition_metadata(cluster, topic, 0)
        follower = min(set(racks) - {leader})
        producer = Producer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}))
        for i in range(200):
            producer.produce(topic, value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        fetching_from: set[int] = set()

        def on_stats(raw: str) -> None:
            for broker in json.loads(raw)["brokers"].values():
                if any(tp.startswith(f"{topic}-") for tp in broker.get("toppars", {})):
                    fetching_from.add(broker["nodeid"])

        consumer = Consumer(
            quiet(
                {
                    "bootstrap.servers": cluster.bootstrap_servers,
                    "group.id": "unused",
                    "enable.auto.commit": False,
                    "client.rack": racks[follower],
                    "statistics.interval.ms": 200,
                    "stats_cb": on_stats,
                }
            )
        )
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 200 and time.monotonic() < deadline:
            values += [m.value() for m in consumer.consume(100, 0.5) if m.error() is None]
        consumer.poll(0.5)
        consumer.close()
        assert sorted(values) == sorted(b"%d" % i for i in range(200))
        assert follower in fetching_from and leader != follower, (fetching_from, leader)


def test_send_offsets_when_the_group_and_transaction_coordinators_differ(
    cluster: Cluster,
) -> None:
    """TxnOffsetCommit reaches the group's coordinator, which must ask the transaction's
    coordinator (another broker here) whether the offsets partition is in the transaction
    (librdkafka's 0103 do_test_empty_txn)."""
    from kafkars.coordinator.group.records import partition_for

    topic = create_topic(cluster, 1)
    tid = f"txn-{uuid.uuid4().hex[:6]}"
    p = Producer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid}))
    p.init_transactions(30)
    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
    # Creates __consumer_offsets; then a group led elsewhere than the transaction.
    c0 = Consumer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "warm-up"}))
    c0.committed([TopicPartition(topic, 0)], timeout=30)
    c0.close()

    def leaders(internal: str) -> dict[int, int]:
        found: dict[int, int] = {}

        def led() -> bool:
            md = admin.list_topics(internal, timeout=10).topics[internal]
            found.update({i: part.leader for i, part in md.partitions.items()})
            return bool(found) and all(leader >= 0 for leader in found.values())

        wait_for(led, 30, f"leaders for {internal}")
        return found

    txn_leaders, offsets_leaders = leaders("__transaction_state"), leaders("__consumer_offsets")
    txn_coordinator = txn_leaders[partition_for(tid, len(txn_leaders))]
    group = next(
        g
        for g in (f"g-{i}" for i in range(1000))
        if offsets_leaders[partition_for(g, len(offsets_leaders))] != txn_coordinator
    )

    p.begin_transaction()
    p.produce(topic, value=b"v", partition=0)
    c = Consumer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group}))
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 7)], c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    committed = c.committed([TopicPartition(topic, 0)], timeout=30)
    c.close()
    assert committed[0].offset == 7


def test_create_partitions_with_a_replica_assignment(cluster: Cluster) -> None:
    """New partitions get the replicas the request names (librdkafka's 0081)."""
    from confluent_kafka.admin import NewPartitions

    topic = create_topic(cluster, 1, rf=2)
    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
    bad = admin.create_partitions([NewPartitions(topic, 2, replica_assignment=[[1, 2, 3]])])
    with pytest.raises(Exception, match="INVALID_REPLICA_ASSIGNMENT"):
        bad[topic].result(30)
    admin.create_partitions([NewPartitions(topic, 3, replica_assignment=[[3, 1], [2, 3]])])[
        topic
    ].result(30)

    def replicas() -> dict[int, list[int]]:
        md = admin.list_topics(topic, timeout=10).topics[topic]
        return {i: list(p.replicas) for i, p in md.partitions.items()}

    wait_for(lambda: len(replicas()) == 3, 30, "three partitions")
    assert replicas()[1] == [3, 1] and replicas()[2] == [2, 3]


def test_acls_are_the_clusters(cluster: Cluster) -> None:
    """An ACL created through one broker (the controller, where librdkafka sends
    CreateAcls) holds on every broker (librdkafka's 0115 and 0119)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    topic = create_topic(cluster, 3)
    admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
    deny = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:*",
        "*",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    admin.create_acls([deny])[deny].result(30)

    def topic_error(broker_id: int) -> int:
        # Metadata asked of this very broker (kafka-python's encoding over one socket):
        # clients would route a request to whichever broker they like.
        import socket
        import struct

        from kafka.protocol.metadata import MetadataRequest, MetadataResponse

        host, port = cluster.brokers[broker_id].bootstrap_servers.rsplit(":", 1)
        request = MetadataRequest(
            version=8,
            topics=[MetadataRequest.MetadataRequestTopic(version=8, name=topic)],
            allow_auto_topic_creation=False,
        )
        request.with_header(correlation_id=1, client_id="acl-test")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(bytes(request.encode(version=8, header=True, framed=True)))
            reader = sock.makefile("rb")
            frame = reader.read(struct.unpack(">i", reader.read(4))[0])
        return int(MetadataResponse.decode(frame, version=8, header=True).topics[0].error_code)

    for broker_id in cluster.brokers:
        wait_for(
            lambda b=broker_id: topic_error(b) == KafkaError.TOPIC_AUTHORIZATION_FAILED,
            10,
            f"broker {broker_id} to refuse the topic",
        )
