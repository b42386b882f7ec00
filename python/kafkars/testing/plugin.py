"""pytest plugin: `kafka_broker` hands a test a running kafkars broker, `kafka_cluster` a
three-broker cluster over ZooKeeper, `reference_kafka` Apache Kafka itself (KRaft, for
comparisons; needs Java and Maven). One of each per session, started on first use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkars.broker import Broker
from kafkars.testing.cluster import Cluster
from kafkars.testing.reference_kafka import ReferenceKafka


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


@pytest.fixture(scope="session")
def reference_kafka() -> Iterator[ReferenceKafka]:
    """Apache Kafka (the version `kafkars.testing.reference_kafka.DEFAULT_VERSION` names)
    in a child JVM on a free port, with auto topic creation as Kafka defaults it."""
    with ReferenceKafka() as kafka:
        yield kafka
