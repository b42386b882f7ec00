"""pytest plugin: `kafka_broker` hands a test a running kafkars broker, `kafka_cluster` a
three-broker cluster over ZooKeeper (one of each per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkars.broker import Broker
from kafkars.testing.cluster import Cluster


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Broker]:
    """A broker in a child process on a free port, with auto topic creation."""
    with Broker(process=True, config={"auto.create.topics.enable": True}) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[Cluster]:
    """ZooKeeper and three brokers in child processes (needs Debian's `zookeeper`)."""
    with Cluster(3, config={"auto.create.topics.enable": True}) as cluster:
        yield cluster
