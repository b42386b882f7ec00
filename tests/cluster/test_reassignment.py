"""Partition reassignment (KIP-455) on a 3-broker cluster: kafkars-reassign-partitions
moving a replica while an idempotent producer writes, cancelling a move that cannot
finish, and a move written to /admin/reassign_partitions as ZooKeeper-era tools do."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkars.testing.cluster import Cluster
from kafkars.zk import KafkaZkClient, zk_data

from .helpers import (
    Producing,
    consume_all,
    create_topic,
    needs_zookeeper,
    partition_metadata,
    running_cluster,
    wait_for,
)

pytestmark = needs_zookeeper


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    yield from running_cluster()


def reassign(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkars.tools.reassign_partitions",
            "--bootstrap-server",
            cluster.bootstrap_servers.split(",")[0],
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def write_plan(tmp_path: Path, topic: str, replicas: list[int]) -> str:
    path = tmp_path / "plan.json"
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
    path.write_text(json.dumps(plan))
    return str(path)


def replica_dirs(cluster: Cluster, broker: int, topic: str) -> list[str]:
    return [d.name for d in Path(cluster.brokers[broker].log_dir).glob(f"{topic}-0*")]


def test_reassignment_moves_replicas_and_the_leader_under_load(
    cluster: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(cluster, 1, rf=2)
    leader, replicas, _ = partition_metadata(cluster, topic, 0)
    (newcomer,) = {1, 2, 3} - set(replicas)
    # The leader leaves: leadership has to move to a target replica.
    target = [newcomer, *(b for b in replicas if b != leader)]
    plan = write_plan(tmp_path, topic, target)
    with Producing(cluster, topic) as producing:
        wait_for(lambda: len(producing.acked) > 200, 20, "the first acknowledgements")
        out = reassign(cluster, "--execute", "--reassignment-json-file", plan)
        assert out.returncode == 0, out.stderr
        assert f"Successfully started partition reassignments for {topic}-0" in out.stdout
        assert '"replicas":[' in out.stdout  # the rollback plan
        wait_for(
            lambda: (
                "is completed"
                in reassign(cluster, "--verify", "--reassignment-json-file", plan).stdout
            ),
            60,
            "the reassignment to complete",
        )
        count = len(producing.acked)
        wait_for(lambda: len(producing.acked) > count + 200, 30, "acknowledgements afterwards")
    assert not producing.errors, producing.errors[:3]
    new_leader, new_replicas, isr = partition_metadata(cluster, topic, 0)
    assert new_replicas == sorted(target) and isr == sorted(target)
    assert new_leader in target
    assert "No partition reassignments found." in reassign(cluster, "--list").stdout
    # The replica that left deletes its log.
    wait_for(lambda: not replica_dirs(cluster, leader, topic), 20, "the old replica's log gone")
    values = consume_all(cluster, topic, 1)
    assert len(values) == len(set(values)), "a record was written twice"
    assert set(producing.acked) <= set(values), "an acknowledged record was lost"


def test_reassignment_cancelled_and_written_to_zookeeper(cluster: Cluster, tmp_path: Path) -> None:
    topic = create_topic(cluster, 1, rf=2)
    leader, replicas, _ = partition_metadata(cluster, topic, 0)
    (newcomer,) = {1, 2, 3} - set(replicas)
    plan = write_plan(tmp_path, topic, [*replicas, newcomer])
    # A stopped newcomer cannot catch up, so the move stays in progress (for less than
    # the ZooKeeper session timeout, or the cluster would count it dead).
    cluster.pause(newcomer)
    try:
        out = reassign(cluster, "--execute", "--reassignment-json-file", plan)
        assert out.returncode == 0, out.stderr
        listed = reassign(cluster, "--list").stdout
        assert f"{topic}-0: replicas: " in listed and f"adding: {newcomer}." in listed, listed
        verify = reassign(cluster, "--verify", "--reassignment-json-file", plan)
        assert verify.returncode == 1 and "still in progress" in verify.stdout
        cancel = reassign(cluster, "--cancel", "--reassignment-json-file", plan)
        assert f"Successfully cancelled partition reassignments for: {topic}-0" in cancel.stdout
    finally:
        cluster.resume(newcomer)
    assert partition_metadata(cluster, topic, 0)[1] == replicas
    assert "No partition reassignments found." in reassign(cluster, "--list").stdout
    again = reassign(cluster, "--cancel", "--reassignment-json-file", plan)
    assert "None of the specified partition moves are active" in again.stdout

    # The ZooKeeper way: the controller picks up /admin/reassign_partitions and deletes
    # the znode once the move is done.
    zk = KafkaZkClient(f"{cluster.zookeeper.connect}/kafkars")
    try:
        target = [newcomer, leader]
        zk.zk.create(
            zk_data.REASSIGN_PARTITIONS,
            zk_data.encode_reassignments({(topic, 0): target}),
            makepath=True,
        )
        wait_for(
            lambda: partition_metadata(cluster, topic, 0)[1:] == (sorted(target), sorted(target)),
            60,
            "the move written to ZooKeeper",
        )
        wait_for(lambda: zk.zk.exists(zk_data.REASSIGN_PARTITIONS) is None, 10, "the znode removed")
        assignment = zk.get_topic_assignment(topic)
        assert assignment.partitions[0] == target and not assignment.is_reassigning(0)
    finally:
        zk.close()


def test_reassignment_refusals(cluster: Cluster, tmp_path: Path) -> None:
    topic = create_topic(cluster, 1, rf=2)
    bad = reassign(
        cluster, "--execute", "--reassignment-json-file", write_plan(tmp_path, topic, [1, 9])
    )
    assert bad.returncode == 1
    assert "non-existent brokerIDs: [9]" in bad.stderr
    missing = reassign(
        cluster, "--execute", "--reassignment-json-file", write_plan(tmp_path, "nope", [1])
    )
    assert missing.returncode == 1 and "unknown partitions: nope-0" in missing.stderr
    dup = reassign(
        cluster, "--execute", "--reassignment-json-file", write_plan(tmp_path, topic, [1, 1])
    )
    assert dup.returncode == 1 and "duplicated replica list" in dup.stderr
    assert reassign(cluster, "--list", "--throttle", "1000").returncode == 2
