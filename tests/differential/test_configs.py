"""Configs and log dirs: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DescribeLogDirs, AlterReplicaLogDirs."""

from __future__ import annotations

from typing import Any

from kafkars.protocol import ApiKey

from .compare import Pair
from .test_records import seed
from .test_topics import make_topic

TOPIC, BROKER = 2, 4
# Broker configs both brokers have, static and dynamic, read-only and not.
BROKER_KEYS = [
    "advertised.listeners",
    "listeners",
    "broker.id",
    "node.id",
    "num.partitions",
    "auto.create.topics.enable",
    "message.max.bytes",
    "log.retention.hours",
    "log.retention.ms",
    "log.segment.bytes",
    "log.cleaner.threads",
    "min.insync.replicas",
    "compression.type",
    "default.replication.factor",
    "unclean.leader.election.enable",
    "offsets.topic.replication.factor",
    "group.initial.rebalance.delay.ms",
    "num.io.threads",
    "sasl.enabled.mechanisms",
    "ssl.keystore.password",
]


def describe(resources: list[tuple[int, str, list[str] | None]], version: int) -> dict[str, Any]:
    return {
        "resources": [
            {"resource_type": t, "resource_name": n, "configuration_keys": keys}
            for t, n, keys in resources
        ],
        "include_synonyms": True,
        "include_documentation": version >= 3,
    }


def test_describe_topic_configs(pair: Pair, name: str) -> None:
    make_topic(pair, name, 1, **{"retention.ms": "3600000", "cleanup.policy": "compact"})
    pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(TOPIC, name, ["retention.ms", "cleanup.policy", "segment.bytes"])], v),
        scenario="topic, chosen keys",
    )
    pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(TOPIC, f"{name}-missing", None)], v),
        scenario="unknown topic",
    )


def test_describe_broker_configs(pair: Pair) -> None:
    pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(BROKER, "1", BROKER_KEYS)], v),
        scenario="broker, chosen keys",
    )
    pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(BROKER, "7", ["num.partitions"])], v),
        scenario="another broker's id",
    )
    pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(BROKER, "", ["num.partitions"])], v),
        scenario="cluster default (empty name)",
    )


def incremental(resources: list[tuple[int, str, list[tuple[str, int, str | None]]]]) -> Any:
    return {
        "resources": [
            {
                "resource_type": t,
                "resource_name": n,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in cfgs],
            }
            for t, n, cfgs in resources
        ],
        "validate_only": False,
    }


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def test_incremental_alter_configs(pair: Pair, name: str) -> None:
    make_topic(pair, name)
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental([(TOPIC, name, [("retention.ms", SET, "7200000")])]),
        scenario="set a topic config",
    )
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental(
            [
                (TOPIC, name, [("cleanup.policy", APPEND, "compact")]),
                (TOPIC, name, [("retention.ms", DELETE, None)]),
            ]
        ),
        scenario="one resource twice",
    )
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental(
            [(TOPIC, name, [("cleanup.policy", APPEND, "compact"), ("retention.ms", DELETE, None)])]
        ),
        scenario="append to a list, delete",
    )
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental(
            [
                (TOPIC, name, [("retention.ms", SET, "soon")]),
                (TOPIC, f"{name}-missing", [("retention.ms", SET, "1000")]),
                (TOPIC, name, [("no.such.config", SET, "1")]),
                (TOPIC, name, [("retention.ms", APPEND, "1")]),
            ]
        ),
        scenario="invalid value, unknown topic, unknown config, append to a scalar",
    )
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental([(BROKER, "1", [("log.cleaner.threads", SET, "2")])]),
        scenario="dynamic broker config",
    )
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental([(BROKER, "1", [("num.io.threads", SET, "0")])]),
        scenario="invalid dynamic broker config",
    )
    pair.check(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental([(BROKER, "1", [("broker.id", SET, "5")])]),
        scenario="read-only broker config",
    )
    pair.check(
        ApiKey.DESCRIBE_CONFIGS,
        lambda v: describe([(TOPIC, name, ["retention.ms", "cleanup.policy"])], v),
        scenario="after incremental changes",
    )


def test_alter_configs(pair: Pair, name: str) -> None:
    make_topic(pair, name)

    def body(configs: dict[str, str], resource: tuple[int, str] = (TOPIC, name)) -> Any:
        return {
            "resources": [
                {
                    "resource_type": resource[0],
                    "resource_name": resource[1],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": False,
        }

    pair.check(ApiKey.ALTER_CONFIGS, body({"retention.ms": "100000"}), scenario="topic")
    pair.check(ApiKey.ALTER_CONFIGS, body({"retention.ms": "x"}), scenario="invalid value")
    pair.check(
        ApiKey.ALTER_CONFIGS,
        body({"retention.ms": "1"}, (TOPIC, f"{name}-missing")),
        scenario="unknown topic",
    )


def test_describe_log_dirs(pair: Pair, name: str) -> None:
    seed(pair, name, partitions=2)
    pair.check(
        ApiKey.DESCRIBE_LOG_DIRS,
        {"topics": [{"topic": name, "partitions": [0, 1, 5]}]},
        scenario="a topic's partitions",
    )


def test_alter_replica_log_dirs(pair: Pair, name: str) -> None:
    make_topic(pair, name)
    pair.check(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        {"dirs": [{"path": "/nonexistent", "topics": [{"name": name, "partitions": [0]}]}]},
        scenario="a dir outside log.dirs",
    )
