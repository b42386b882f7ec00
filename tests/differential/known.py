"""Differences between Apache Kafka's answers and kafkars', each with its reason.

Keyed by API name, then by the field's path with list elements elided
(`topics[].configs[].value`). A difference listed here is reported (README,
"Differential tests") but does not fail the tests; anything else does. Keep each
reason one sentence a user can act on."""

from __future__ import annotations

# kafkars' cluster mode is Kafka 3.x's ZooKeeper mode (and mixes with 3.9 brokers), so
# it keeps 3.9's topic configs; Kafka 4.0 removed three of them and lowered a default.
_TOPIC_CONFIGS_OF_3_9 = (
    "kafkars keeps Kafka 3.9's topic configs (its cluster mode is 3.x's ZooKeeper mode): "
    "message.format.version, message.downconversion.enable and "
    "message.timestamp.difference.max.ms exist, and message.timestamp.after.max.ms "
    "defaults to Long.MAX_VALUE; Kafka 4.0 removed the three and set the default to 1 hour"
)
_KRAFT_MIN_ISR = (
    "Kafka's KRaft format step records min.insync.replicas as a cluster-wide dynamic "
    "default (source DYNAMIC_DEFAULT_BROKER_CONFIG); kafkars has it as a default"
)
_TOPIC_CONFIG_PATHS = {
    "topics[].configs[#]": _TOPIC_CONFIGS_OF_3_9,
    "topics[].configs[].config_source": _KRAFT_MIN_ISR + "; " + _TOPIC_CONFIGS_OF_3_9,
    "topics[].configs[].value": _TOPIC_CONFIGS_OF_3_9,
}

_SUBSET = (
    "kafkars advertises the APIs it implements end to end, a subset of Kafka 4's (no "
    "KRaft controller APIs, delegation tokens, share groups, client telemetry, "
    "DescribeQuorum or UpdateFeatures)"
)
_FEATURES = (
    "Kafka 4's features (metadata.version, group.version, transaction.version, "
    "eligible.leader.replicas.version) are KRaft's; kafkars, a ZooKeeper-mode design, "
    "finalizes none, so clients use the classic transaction protocol (transaction.version "
    "1)"
)

KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    "ApiVersions": {
        "api_keys[#]": _SUBSET,
        "api_keys[].api_key": _SUBSET,
        "api_keys[].min_version": _SUBSET,
        "api_keys[].max_version": _SUBSET,
        "finalized_features": _FEATURES,
        "finalized_features[#]": _FEATURES,
        "finalized_features[].max_version_level": _FEATURES,
        "finalized_features[].min_version_level": _FEATURES,
        "finalized_features_epoch": _FEATURES,
        "supported_features": _FEATURES,
        "supported_features[#]": _FEATURES,
        "supported_features[].max_version": _FEATURES,
        "supported_features[].min_version": _FEATURES,
    },
    "CreateTopics": dict(_TOPIC_CONFIG_PATHS),
    "DescribeConfigs": {
        "results[*].configs[name=listeners].*": (
            "a KRaft node also listens as a controller (CONTROLLER://...), and kafkars' "
            "default listener is 127.0.0.1:9092 where Kafka's is every interface (:9092): a "
            "development broker is not exposed to the network unless asked"
        ),
        "results[*].configs[name=min.insync.replicas].*": _KRAFT_MIN_ISR,
        "results[*].configs[name=node.id].synonyms*": (
            "kafkars' node.id defaults to -1 (a ZooKeeper-mode broker may set only "
            "broker.id, as in Kafka 3.x), so a default synonym is listed; Kafka 4 requires it"
        ),
    },
}

# Scenario-specific: passed to `Pair.check(known=...)` by the one test they concern.
AUTO_CREATED_TOPIC = {
    "topics[].error_code": (
        "kafkars creates an auto-created topic before answering and serves it at once; "
        "Kafka answers UNKNOWN_TOPIC_OR_PARTITION (KRaft: the creation goes to its "
        "controller) or LEADER_NOT_AVAILABLE (ZooKeeper mode) until the topic has "
        "leaders, and clients retry"
    ),
    "topics[].partitions": "the auto-created topic, served at once by kafkars",
    "topics[].partitions[].error_code": "the auto-created topic, served at once by kafkars",
    "topics[].topic_id": "the auto-created topic: Kafka has no id for it yet",
}

# Against Apache Kafka 3.9 in ZooKeeper mode (test_zookeeper_mode.py).
ZOOKEEPER_MODE: dict[str, dict[str, str]] = {
    "DescribeConfigs": {
        "results[*].configs[name=advertised.listeners].read_only": (
            "kafkars reports advertised.listeners read-only as Kafka 4 does, in both modes; "
            "Kafka 3.9 lets a ZooKeeper-mode broker change it dynamically"
        ),
        "results[*].configs[name=listeners].synonyms*": (
            "kafkars' default listener is 127.0.0.1:9092 where Kafka's is every interface"
        ),
    },
}
