"""StopReplica and ControlledShutdown across the kinds (issue 25): under a controller of
each kind, a reassignment moves a replica off a broker of the other kind and a topic
deletion removes replicas on both (StopReplica with delete), and a broker of the other
kind shutting down asks the controller to move its leaderships first
(ControlledShutdown)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from .conftest import MixedCluster, mixed_cluster, needs_mixed
from .load import QUIET
from .test_mixed import consume, create_topic, metadata, produce, wait_for

# About 35 s a controller kind: `make mixed` (the CI runs the faults instead).
pytestmark = [needs_mixed, pytest.mark.long]


@pytest.fixture(params=["kafka", "kafkars"])
def controlled_by(request: pytest.FixtureRequest) -> Iterator[MixedCluster]:
    """One Kafka broker (1) and one kafkars broker (2); the controller the kind named."""
    yield from mixed_cluster(1, 1, ours_first=request.param == "kafkars")


def log_dir(cluster: MixedCluster, broker_id: int) -> Path:
    if broker_id in cluster.kafka:
        return Path(cluster.kafka[broker_id].log_dir)
    return Path(cluster.ours[broker_id].log_dir)


def hosts(cluster: MixedCluster, broker_id: int, topic: str, partition: int) -> bool:
    """Whether the broker still has the partition's directory (a deleted one is renamed
    `<topic>-<partition>.<id>-delete` first by Kafka, then removed)."""
    return (log_dir(cluster, broker_id) / f"{topic}-{partition}").is_dir()


def leader_in_zookeeper(cluster: MixedCluster, topic: str, partition: int) -> int:
    assert cluster.zk_client is not None
    raw, _ = cluster.zk_client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return int(json.loads(raw)["leader"])


def test_stop_replica_and_controlled_shutdown(controlled_by: MixedCluster) -> None:
    """One cluster for both (a cluster start is most of the time): StopReplica first,
    then the broker of the other kind shuts down."""
    stop_replica_across_kinds(controlled_by)
    controlled_shutdown_across_kinds(controlled_by)


def stop_replica_across_kinds(cluster: MixedCluster) -> None:
    controller = cluster.controller()
    other = next(b for b in cluster.running() if b != controller)
    assert cluster.kind(other) != cluster.kind(controller)
    # Reassignment: each partition moves to the other broker, so the controller stops
    # (and deletes) one replica on each kind.
    topic = create_topic(cluster, other, [[other], [controller]], min_insync=1)
    acked = produce(cluster, topic, 2)
    for p, (source, target) in enumerate([(other, controller), (controller, other)]):
        assert hosts(cluster, source, topic, p) and not hosts(cluster, target, topic, p)
    assert cluster.zk_client is not None
    moves = [
        {"topic": topic, "partition": 0, "replicas": [controller]},
        {"topic": topic, "partition": 1, "replicas": [other]},
    ]
    cluster.zk_client.create(
        "/admin/reassign_partitions", json.dumps({"version": 1, "partitions": moves}).encode()
    )
    wait_for(
        lambda: (
            not cluster.zk_client.exists("/admin/reassign_partitions")  # type: ignore[union-attr]
            and leader_in_zookeeper(cluster, topic, 0) == controller
            and leader_in_zookeeper(cluster, topic, 1) == other
        ),
        60,
        "the reassignment",
    )
    wait_for(
        lambda: not hosts(cluster, other, topic, 0) and not hosts(cluster, controller, topic, 1),
        30,
        "StopReplica(delete) on the replicas moved away",
    )
    assert hosts(cluster, controller, topic, 0) and hosts(cluster, other, topic, 1)
    assert sorted(consume(cluster.bootstrap_servers, topic, 2, len(acked))) == sorted(acked)

    # Deletion: StopReplica to both brokers, each for the partition it now hosts.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(other), **QUIET})
    admin.delete_topics([topic])[topic].result(60)
    wait_for(
        lambda: (
            not any(hosts(cluster, b, topic, p) for b in cluster.running() for p in (0, 1))
            and not cluster.zk_client.exists(f"/brokers/topics/{topic}")  # type: ignore[union-attr]
            and not cluster.zk_client.get_children("/admin/delete_topics")
        ),  # type: ignore[union-attr]
        60,
        "the topic deleted on both brokers",
    )
    for b in cluster.running():
        wait_for(
            lambda b=b: (
                topic
                not in AdminClient({"bootstrap.servers": cluster.bootstrap(b), **QUIET})
                .list_topics(timeout=10)
                .topics
            ),
            30,
            f"the topic gone from broker {b}'s metadata",
        )


def controlled_shutdown_across_kinds(cluster: MixedCluster) -> None:
    """The broker of the other kind leads a partition whose follower is the controller;
    stopped cleanly it first asks the controller (ControlledShutdown), which moves the
    leadership to the controller while the broker is still registered."""
    controller = cluster.controller()
    other = next(b for b in cluster.running() if b != controller)
    # min.insync.replicas=1: a leader of either kind does not move its high watermark on
    # while the ISR is under it (Kafka 3.9's rule), and the controller alone is the ISR
    # once the other broker is gone, with a watermark that may lag the old leader's.
    topic = create_topic(cluster, controller, [[other, controller]], min_insync=1)
    acked = produce(cluster, topic, 1)
    assert cluster.zk_client is not None
    leaders_while_registered: set[int] = set()
    done = threading.Event()

    def sample() -> None:
        zk = cluster.zk_client
        assert zk is not None
        while not done.wait(0.02):
            leader = leader_in_zookeeper(cluster, topic, 0)
            if zk.exists(f"/brokers/ids/{other}"):
                leaders_while_registered.add(leader)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    if other in cluster.kafka:
        cluster.kafka[other].stop(remove=False)
        text = cluster.kafka[other].log(1_000_000)
        assert "Controlled shutdown request returned successfully" in text, text[-3000:]
    else:
        cluster.ours[other].stop(remove=False)
        text = (log_dir(cluster, other) / ".kafkars-server.log").read_text(errors="replace")
        assert "controlled shutdown succeeded" in text, text[-3000:]
    stopped = time.monotonic() - started
    done.set()
    sampler.join()
    assert controller in leaders_while_registered, leaders_while_registered
    assert leader_in_zookeeper(cluster, topic, 0) == controller
    # A client keeps a leader that is down until metadata names another: read once the
    # controller's metadata names itself.
    wait_for(
        lambda: metadata(cluster, controller, topic).partitions[0].leader == controller,
        30,
        "the controller's metadata naming it the leader",
    )
    values = consume(cluster.bootstrap_servers, topic, 1, len(acked))
    assert sorted(values) == sorted(acked)
    print(f"controlled shutdown of broker {other} ({cluster.kind(other)}): {stopped:.1f} s")
