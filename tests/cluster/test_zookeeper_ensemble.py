"""Cluster mode on a 3-node ZooKeeper ensemble: losing the quorum leader costs the
brokers neither their sessions nor any acknowledged record, and the controller still
fails partitions over afterwards."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafkars.testing.cluster import Cluster
from kafkars.testing.zookeeper import ZooKeeperEnsemble
from kafkars.zk import zk_data

from .helpers import (
    SESSION_TIMEOUT_MS,
    Producing,
    consume_all,
    create_topic,
    needs_zookeeper,
    partition_metadata,
    wait_for,
)

pytestmark = needs_zookeeper


@pytest.fixture
def ensemble() -> Iterator[ZooKeeperEnsemble]:
    with ZooKeeperEnsemble(3) as zk:
        yield zk


def session_owners(zk: KazooClient) -> dict[str, int | None]:
    """The session owning each broker's registration and the controller's znode (None:
    the znode is gone)."""
    paths = [zk_data.broker_path(i) for i in (1, 2, 3)] + [zk_data.CONTROLLER]
    return {p: stat.ephemeralOwner if (stat := zk.exists(p)) else None for p in paths}


def test_zookeeper_leader_killed_brokers_keep_their_sessions(
    ensemble: ZooKeeperEnsemble,
) -> None:
    config = {"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS}
    with Cluster(3, config=config, zookeeper=ensemble) as cluster:
        observer = KazooClient(f"{ensemble.connect}/kafkars", timeout=30)
        observer.start(10)
        try:
            topic = create_topic(cluster, 1, **{"min.insync.replicas": "2"})
            before = session_owners(observer)
            assert all(before.values()), before
            epoch_before, _ = observer.get(zk_data.CONTROLLER_EPOCH)
            with Producing(cluster, topic) as producing:
                acked = producing.acked
                wait_for(lambda: len(acked) > 200, 20, "the first acknowledgements")
                zk_leader = ensemble.leader()
                ensemble.kill(zk_leader)
                killed_at = time.monotonic()
                assert ensemble.wait_for_quorum() != zk_leader
                count = len(acked)
                wait_for(lambda: len(acked) > count + 200, 30, "acknowledgements after")
                # Past the session timeout, the same sessions own the same ephemeral
                # znodes: kazoo moved each broker to a surviving node in time (a broker
                # that had not would have lost its session, and its znode, by now).
                time.sleep(max(0.0, killed_at + SESSION_TIMEOUT_MS / 1000 + 2 - time.monotonic()))
                assert session_owners(observer) == before
                assert observer.get(zk_data.CONTROLLER_EPOCH)[0] == epoch_before
                assert time.monotonic() - killed_at < 30

                # The controller still works on the two remaining nodes.
                leader, _, _ = partition_metadata(cluster, topic, 0)
                cluster.kill(leader)
                wait_for(
                    lambda: partition_metadata(cluster, topic, 0)[0] not in (leader, -1),
                    SESSION_TIMEOUT_MS / 1000 + 10,
                    "a new partition leader",
                )
                count = len(acked)
                wait_for(lambda: len(acked) > count + 200, 30, "acknowledgements from it")
                # The ZooKeeper node and the broker come back and catch up.
                ensemble.start(zk_leader)
                ensemble.wait_for_quorum()
                cluster.start(leader)
                wait_for(
                    lambda: partition_metadata(cluster, topic, 0)[2] == [1, 2, 3],
                    30,
                    "ISR [1, 2, 3]",
                )
            assert not producing.errors, producing.errors[:3]
            values = consume_all(cluster, topic, 1)
            assert len(values) == len(set(values)), "a record was written twice"
            assert set(acked) <= set(values), "an acknowledged record was lost"
        finally:
            observer.stop()
            observer.close()
