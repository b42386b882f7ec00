"""Broker and topic configuration with Kafka 3.9's names, types, defaults and behaviour.

- :class:`KafkaConfig` — the broker config (``from_dict``, ``from_properties_file``).
- :class:`LogConfig` — a topic's effective config (``LogConfig.from_layers(broker, overrides)``).
- :func:`describe_broker` / :func:`describe_topic` — DescribeConfigs entries.
- :func:`validate_alter` / :func:`apply_alter_ops` — AlterConfigs and the incremental form.
- :class:`ConfigStore` — persisted dynamic configs and topic overrides.
"""

from kafkars.config.alter import (
    AlterOp,
    ResourceType,
    apply_alter_ops,
    validate_alter,
    validate_alter_configs,
)
from kafkars.config.broker import KafkaConfig, parse_overrides
from kafkars.config.definition import (
    INVALID_CONFIG,
    INVALID_REQUEST,
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigType,
    Importance,
    Password,
    UpdateMode,
)
from kafkars.config.describe import (
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    describe_broker,
    describe_topic,
)
from kafkars.config.listeners import Endpoint, parse_listeners
from kafkars.config.store import ConfigStore
from kafkars.config.topic import LogConfig

__all__ = [
    "INVALID_CONFIG",
    "INVALID_REQUEST",
    "AlterOp",
    "ConfigDef",
    "ConfigEntry",
    "ConfigException",
    "ConfigKey",
    "ConfigSource",
    "ConfigStore",
    "ConfigSynonym",
    "ConfigType",
    "Endpoint",
    "Importance",
    "KafkaConfig",
    "LogConfig",
    "Password",
    "ResourceType",
    "UpdateMode",
    "apply_alter_ops",
    "describe_broker",
    "describe_topic",
    "parse_listeners",
    "parse_overrides",
    "validate_alter",
    "validate_alter_configs",
]
