"""The group coordinator's writes to `__consumer_offsets` are acks=all and complete by
callback: a commit is answered once the ISR has it (and survives its coordinator), and
while a write waits for followers that do not fetch, the request handler threads serve
other requests; a SyncGroup whose assignment cannot be stored gets Kafka's error and
the group goes back to PreparingRebalance."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from kafkars.coordinator.group.records import partition_for
from kafkars.testing.cluster import Cluster

from .helpers import create_topic, needs_zookeeper, quiet, running_cluster, wait_for

pytestmark = needs_zookeeper

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 11, 14, 15
COORDINATOR_NOT_AVAILABLE, REBALANCE_IN_PROGRESS = 15, 27
COMMIT_TIMEOUT_MS = 2000


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    # Two request handler threads: two writes waiting on them would starve the broker
    # if they held their threads. No initial rebalance delay: one member's join is quick.
    yield from running_cluster(
        config={
            "num.io.threads": 2,
            "offsets.commit.timeout.ms": COMMIT_TIMEOUT_MS,
            "group.initial.rebalance.delay.ms": 0,
        }
    )


def call(cluster: Cluster, broker_id: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    from kafkars.controller.channel_manager import call_broker

    _, _, host, port = cluster.brokers[broker_id].listeners[0]
    return call_broker((host, port), api_key, version, body, client_id="test")


def offsets_replicas(cluster: Cluster, group: str) -> tuple[int, list[int], int]:
    """The leader (the group's coordinator) and replicas of the group's partition of
    __consumer_offsets, once FindCoordinator created the topic and it has a leader with
    a full ISR; and the topic's partition count."""
    any_broker = next(iter(cluster.brokers))
    found: dict[str, Any] = {}

    def ready() -> bool:
        answer = call(cluster, any_broker, FIND_COORDINATOR, 1, {"key": group, "key_type": 0})
        admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
        topic = admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
        if answer["error_code"] != 0 or not topic.partitions:
            return False
        p = topic.partitions[partition_for(group, len(topic.partitions))]
        found.update(leader=p.leader, replicas=sorted(p.replicas), count=len(topic.partitions))
        return p.leader == answer["node_id"] and len(p.isrs) == 3

    wait_for(ready, 30, f"the coordinator of {group} with a full ISR")
    return found["leader"], found["replicas"], found["count"]


def commit(cluster: Cluster, broker_id: int, group: str, topic: str, offset: int) -> int:
    """A simple consumer's OffsetCommit (no generation); its error code."""
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
                ],
            }
        ],
    }
    answer = call(cluster, broker_id, OFFSET_COMMIT, 2, body)
    return int(answer["topics"][0]["partitions"][0]["error_code"])


def committed(cluster: Cluster, broker_id: int, group: str, topic: str) -> int:
    body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
    answer = call(cluster, broker_id, OFFSET_FETCH, 1, body)
    return int(answer["topics"][0]["partitions"][0]["committed_offset"])


def group_state(cluster: Cluster, broker_id: int, group: str) -> str:
    answer = call(cluster, broker_id, DESCRIBE_GROUPS, 0, {"groups": [group]})
    return str(answer["groups"][0]["group_state"])


def test_a_commit_is_answered_once_the_isr_has_it_and_survives_its_coordinator(
    cluster: Cluster,
) -> None:
    topic = create_topic(cluster, 1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    coordinator, _, _ = offsets_replicas(cluster, group)
    assert commit(cluster, coordinator, group, topic, 42) == 0
    # Acknowledged means in the ISR: the coordinator's death loses nothing.
    cluster.kill(coordinator)
    survivors = [b for b in cluster.brokers if b != coordinator]
    found: dict[str, int] = {}

    def moved() -> bool:
        answer = call(cluster, survivors[0], FIND_COORDINATOR, 1, {"key": group, "key_type": 0})
        found["node"] = answer["node_id"]
        return answer["error_code"] == 0 and answer["node_id"] in survivors

    wait_for(moved, 40, "a new coordinator")
    wait_for(lambda: committed(cluster, found["node"], group, topic) == 42, 20, "the offset")


def test_a_failed_assignment_write_fails_syncgroup_and_the_group_rebalances(
    cluster: Cluster,
) -> None:
    topic = create_topic(cluster, 1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    coordinator, replicas, partitions = offsets_replicas(cluster, group)
    # Another group on the same partition of __consumer_offsets.
    other = next(
        g
        for g in (f"o-{i}" for i in range(100_000))
        if partition_for(g, partitions) == partition_for(group, partitions)
    )
    join = call(
        cluster,
        coordinator,
        JOIN_GROUP,
        3,
        {
            "group_id": group,
            "session_timeout_ms": 30_000,
            "rebalance_timeout_ms": 30_000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )
    assert join["error_code"] == 0 and join["leader"] == join["member_id"]
    member, generation = join["member_id"], join["generation_id"]
    followers = [b for b in replicas if b != coordinator]
    answers: dict[str, Any] = {}
    for follower in followers:
        cluster.pause(follower)  # they stop fetching: the high watermark stays behind
    try:
        started = time.monotonic()

        def sync() -> None:
            body = {
                "group_id": group,
                "generation_id": generation,
                "member_id": member,
                "group_instance_id": None,
                "assignments": [{"member_id": member, "assignment": b"a"}],
            }
            answers["sync"] = call(cluster, coordinator, SYNC_GROUP, 3, body)
            answers["sync_s"] = time.monotonic() - started

        def commit_other() -> None:
            answers["commit"] = commit(cluster, coordinator, other, topic, 7)

        waiting = [threading.Thread(target=sync), threading.Thread(target=commit_other)]
        for t in waiting:
            t.start()
        time.sleep(0.3)
        # Both writes wait for the ISR, yet the two handler threads are free.
        asked = time.monotonic()
        assert group_state(cluster, coordinator, group) == "CompletingRebalance"
        assert time.monotonic() - asked < 1.0
        assert "sync" not in answers and "commit" not in answers
        for t in waiting:
            t.join(30)
    finally:
        for follower in followers:
            cluster.resume(follower)
    # Kafka's storeGroup answer for a write that timed out, and its commit answer.
    assert answers["sync"]["error_code"] == REBALANCE_IN_PROGRESS
    assert answers["sync_s"] >= COMMIT_TIMEOUT_MS / 1000 * 0.9
    assert answers["commit"] == COORDINATOR_NOT_AVAILABLE
    assert group_state(cluster, coordinator, group) == "PreparingRebalance"
    assert committed(cluster, coordinator, other, topic) == -1
