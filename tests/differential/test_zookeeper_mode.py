"""ZooKeeper mode side by side: Apache Kafka 3.9 (the last release with it) and a kafkars
broker in cluster mode, each a one-broker cluster over the tests' ZooKeeper (own
chroots). Where Kafka 4 differs from kafkars for KRaft's reasons (auto-created topics,
the topic configs 4.0 removed, the cluster-wide min.insync.replicas), 3.9 should not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkars.broker import Broker
from kafkars.protocol import ApiKey
from kafkars.testing.reference_kafka import ZOOKEEPER_VERSION, ReferenceKafka
from kafkars.testing.zookeeper import ZooKeeperServer

from .compare import Pair, Report
from .conftest import COMMON_CONFIG
from .known import AUTO_CREATED_TOPIC, ZOOKEEPER_MODE
from .test_configs import BROKER, BROKER_KEYS, TOPIC, describe
from .test_records import fetch, seed
from .test_topics import ZERO, create_topics

ZK_CONFIG = {k: v for k, v in COMMON_CONFIG.items() if k != "node.id"}


@pytest.fixture(scope="module")
def zk_pair(report: Report) -> Iterator[Pair]:
    with ZooKeeperServer() as zk:
        kafka = ReferenceKafka(
            version=ZOOKEEPER_VERSION, zookeeper=f"{zk.connect}/kafka", config=ZK_CONFIG
        )
        with (
            kafka,
            Broker(
                process=True, config={**ZK_CONFIG, "zookeeper.connect": f"{zk.connect}/kafkars"}
            ) as ours,
        ):
            # Report under its own name: these are 3.9's answers, not 4.x's.
            zk_report = Report()
            pair = Pair(kafka.bootstrap_servers, ours.bootstrap_servers, zk_report, ZOOKEEPER_MODE)
            yield pair
            pair.close()
            for outcome in zk_report.outcomes:
                outcome.scenario = f"ZooKeeper mode, Kafka {ZOOKEEPER_VERSION}: {outcome.scenario}"
            report.zookeeper_outcomes.extend(zk_report.outcomes)


def test_auto_created_topic(zk_pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        topic: dict[str, Any] = {"name": f"{name}-v{version}"}
        if version >= 10:
            topic["topic_id"] = ZERO
        return {"topics": [topic], "allow_auto_topic_creation": True}

    versions = [v for v in zk_pair.versions(ApiKey.METADATA) if v >= 4]
    zk_pair.check(
        ApiKey.METADATA,
        body,
        scenario="auto-created topic",
        versions=versions,
        known=AUTO_CREATED_TOPIC,
    )


def test_topic_configs(zk_pair: Pair, name: str) -> None:
    def body(version: int) -> dict[str, Any]:
        return create_topics(
            [{"name": f"{name}-v{version}", "num_partitions": 1, "replication_factor": 1}]
        )

    zk_pair.check(ApiKey.CREATE_TOPICS, body, scenario="broker defaults")
    zk_pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(BROKER, "1", BROKER_KEYS)], v),
        scenario="broker, chosen keys",
    )


def test_produce_fetch(zk_pair: Pair, name: str) -> None:
    seed(zk_pair, name)
    zk_pair.check(ApiKey.FETCH, lambda v: fetch(name, v), scenario="from the start")
    zk_pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(TOPIC, name, None)], v),
        scenario="every topic config",
    )
