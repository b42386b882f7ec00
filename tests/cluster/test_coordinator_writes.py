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
JOIN_GROUP, HEARTBEAT, SYNC_GROUP, DESCRIBE_GROUPS = 11, 12, 14, 15
INIT_PRODUCER_ID, END_TXN = 22, 26
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, REBALANCE_IN_PROGRESS = 15, 16, 27
COMMIT_TIMEOUT_MS = 2000
# How long the transaction coordinator's writes wait for the ISR (Kafka's
# request.timeout.ms for appendTransactionToLog).
TXN_WRITE_TIMEOUT_MS = 2000


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    # Two request handler threads: two writes waiting on them would starve the broker
    # if they held their threads. No initial rebalance delay: one member's join is quick.
    yield from running_cluster(
        config={
            "num.io.threads": 2,
            "offsets.commit.timeout.ms": COMMIT_TIMEOUT_MS,
            "group.initial.rebalance.delay.ms": 0,
            "request.timeout.ms": TXN_WRITE_TIMEOUT_MS,
        }
    )


def call(cluster: Cluster, broker_id: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    from kafkars.controller.channel_manager import call_broker

    _, _, host, port = cluster.brokers[broker_id].listeners[0]
    return call_broker((host, port), api_key, version, body, client_id="test")


def offsets_replicas(
    cluster: Cluster, key: str, internal: str = "__consumer_offsets"
) -> tuple[int, list[int], int]:
    """The leader (the key's coordinator) and replicas of the key's partition of the
    internal topic, once FindCoordinator created the topic and it has a leader with a
    full ISR; and the topic's partition count."""
    any_broker = next(iter(cluster.brokers))
    key_type = 0 if internal == "__consumer_offsets" else 1
    found: dict[str, Any] = {}

    def ready() -> bool:
        answer = call(cluster, any_broker, FIND_COORDINATOR, 1, {"key": key, "key_type": key_type})
        admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap_servers}))
        topic = admin.list_topics(internal, timeout=10).topics[internal]
        if answer["error_code"] != 0 or not topic.partitions:
            return False
        p = topic.partitions[partition_for(key, len(topic.partitions))]
        found.update(leader=p.leader, replicas=sorted(p.replicas), count=len(topic.partitions))
        if p.leader != answer["node_id"] or len(p.isrs) != 3:
            return False
        # The leader coordinates the key once it has loaded the partition: until then
        # it answers NOT_COORDINATOR (a request that changes nothing asks).
        if key_type == 0:
            body = {"group_id": key, "generation_id": -1, "member_id": ""}
            probe = call(cluster, p.leader, HEARTBEAT, 0, body)
        else:
            body = {
                "transactional_id": key,
                "producer_id": -1,
                "producer_epoch": -1,
                "committed": False,
            }
            probe = call(cluster, p.leader, END_TXN, 0, body)
        return bool(probe["error_code"] != NOT_COORDINATOR)

    wait_for(ready, 30, f"the coordinator of {key} with a full ISR")
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


def test_a_transaction_state_write_the_isr_does_not_take_fails_init_producer_id(
    cluster: Cluster,
) -> None:
    tid = f"txn-{uuid.uuid4().hex[:8]}"
    coordinator, replicas, partitions = offsets_replicas(cluster, tid, "__transaction_state")
    # Another id on the same partition: two writes wait, as many as handler threads.
    other = next(
        t
        for t in (f"other-{i}" for i in range(100_000))
        if partition_for(t, partitions) == partition_for(tid, partitions)
    )
    body = {"transactional_id": tid, "transaction_timeout_ms": 60_000}
    followers = [b for b in replicas if b != coordinator]
    answers: dict[str, Any] = {}
    for follower in followers:
        cluster.pause(follower)
    try:
        started = time.monotonic()

        def init(name: str) -> None:
            request = {"transactional_id": name, "transaction_timeout_ms": 60_000}
            answers[name] = call(cluster, coordinator, INIT_PRODUCER_ID, 1, request)
            answers[f"{name}_s"] = time.monotonic() - started

        waiting = [threading.Thread(target=init, args=(name,)) for name in (tid, other)]
        for t in waiting:
            t.start()
        time.sleep(0.3)
        asked = time.monotonic()
        call(cluster, coordinator, DESCRIBE_GROUPS, 0, {"groups": ["any"]})
        assert time.monotonic() - asked < 1.0
        assert tid not in answers and other not in answers
        for t in waiting:
            t.join(30)
    finally:
        for follower in followers:
            cluster.resume(follower)
    # Kafka's answer for a transaction state write that timed out.
    for name in (tid, other):
        assert answers[name]["error_code"] == COORDINATOR_NOT_AVAILABLE
        assert answers[f"{name}_s"] >= TXN_WRITE_TIMEOUT_MS / 1000 * 0.9
    # The failed transition was undone: once the followers fetch again, it works.
    result: dict[str, Any] = {}

    def initialised() -> bool:
        result.update(call(cluster, coordinator, INIT_PRODUCER_ID, 1, body))
        return result["error_code"] == 0

    wait_for(initialised, 30, "InitProducerId to succeed")
    assert result["producer_id"] >= 0
