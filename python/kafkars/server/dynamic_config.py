"""Kafka's `DynamicBrokerConfig`: the owner of the broker's current configuration.

The static file plus the dynamic layers (AlterConfigs on the broker resource) make one
`KafkaConfig`; a dynamic change builds a new one and swaps it in here. Everything that
reads configuration at request time reads it through this object, so it sees the swap.
Components that must act on a change register as reconfigurables: `validate` ones may
refuse it before anything is persisted, `apply` ones follow the swap.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkars.config import ConfigStore, KafkaConfig, LogConfig, describe_topic
from kafkars.config.definition import LONG_MAX

# Called with (current, proposed); may raise ConfigException to refuse the change.
Validator = Callable[[KafkaConfig, KafkaConfig], None]
# Called with the new configuration once it is in place.
Reconfigurable = Callable[[KafkaConfig], None]


def storage_settings(config: LogConfig) -> dict[str, Any]:
    """A topic's effective LogConfig in the shape the Rust log takes."""
    get = config.get
    # As in Kafka 3.9, the deprecated difference.max.ms stands in for a bound left at its
    # default; the Rust LogValidator checks CreateTime timestamps against the result.
    difference = int(get("message.timestamp.difference.max.ms"))
    before = int(get("message.timestamp.before.max.ms"))
    after = int(get("message.timestamp.after.max.ms"))
    return {
        "segment_bytes": int(get("segment.bytes")),
        "segment_ms": int(get("segment.ms")),
        "segment_jitter_ms": int(get("segment.jitter.ms")),
        "max_index_size": int(get("segment.index.bytes")),
        "index_interval_bytes": int(get("index.interval.bytes")),
        "max_message_bytes": int(get("max.message.bytes")),
        "flush_interval_messages": int(get("flush.messages")),
        "flush_ms": int(get("flush.ms")),
        "file_delete_delay_ms": int(get("file.delete.delay.ms")),
        "message_timestamp_type": str(get("message.timestamp.type")),
        "message_timestamp_before_max_ms": difference if before == LONG_MAX else before,
        "message_timestamp_after_max_ms": difference if after == LONG_MAX else after,
        "compression": str(get("compression.type")),
        "compacted": "compact" in get("cleanup.policy"),
        "retention_ms": int(get("retention.ms")),
        "retention_bytes": int(get("retention.bytes")),
        "delete_policy": "delete" in get("cleanup.policy"),
        "delete_retention_ms": int(get("delete.retention.ms")),
        "min_cleanable_dirty_ratio": float(get("min.cleanable.dirty.ratio")),
        "min_compaction_lag_ms": int(get("min.compaction.lag.ms")),
        "max_compaction_lag_ms": int(get("max.compaction.lag.ms")),
        "preallocate": bool(get("preallocate")),
    }


class DynamicBrokerConfig:
    """The broker's configuration as it is now, and the one way to change it."""

    def __init__(self, config: KafkaConfig) -> None:
        self._config = config
        self._store: ConfigStore | None = None
        self._broker_id = -1
        self._validators: list[Validator] = []
        self._reconfigurables: list[Reconfigurable] = []

    def load(self, store: ConfigStore, broker_id: int) -> None:
        """Layers the persisted dynamic configs (which outrank the file) over the config."""
        self._store = store
        self._broker_id = broker_id
        self._config = self._config.with_dynamic(
            store.broker_configs(broker_id), store.default_broker_configs()
        )

    def add_validator(self, validator: Validator) -> None:
        self._validators.append(validator)

    def add_reconfigurable(self, reconfigurable: Reconfigurable) -> None:
        self._reconfigurables.append(reconfigurable)

    @property
    def current(self) -> KafkaConfig:
        return self._config

    def get(self, name: str) -> Any:
        return self._config.get(name)

    # -- the settings the request handlers read ----------------------------------------------
    @property
    def auto_create_topics(self) -> bool:
        return bool(self.get("auto.create.topics.enable"))

    @property
    def default_partitions(self) -> int:
        return int(self.get("num.partitions"))

    @property
    def default_replication_factor(self) -> int:
        return int(self.get("default.replication.factor"))

    @property
    def delete_topic_enable(self) -> bool:
        return bool(self.get("delete.topic.enable"))

    @property
    def rack(self) -> str | None:
        value = self.get("broker.rack")
        return str(value) if value else None

    @property
    def log_dirs(self) -> list[str]:
        return [str(Path(d).resolve()) for d in self._config.log_dirs]

    # -- topic-level settings derived from the broker's ----------------------------------------
    def log_config(self, overrides: dict[str, str]) -> LogConfig:
        return LogConfig.from_layers(self._config, overrides)

    def storage_config(self, overrides: dict[str, str]) -> dict[str, Any]:
        """The topic's effective settings in the shape the Rust log takes."""
        return storage_settings(self.log_config(overrides))

    def describe_topic_configs(self, overrides: dict[str, str]) -> list[Any]:
        return describe_topic(self._config, overrides)

    # -- dynamic layers ----------------------------------------------------------------------
    @property
    def dynamic_broker_configs(self) -> dict[str, str]:
        return dict(self._config.dynamic_broker)

    @property
    def dynamic_default_configs(self) -> dict[str, str]:
        return dict(self._config.dynamic_default)

    def set_dynamic_broker_configs(self, configs: dict[str, str], *, per_broker: bool) -> None:
        """Validates, persists and swaps in a dynamic layer, then tells the
        reconfigurables (broker defaults such as log.retention.ms flow into every topic)."""
        if per_broker:
            new = self._config.with_dynamic(dynamic_broker=configs)
        else:
            new = self._config.with_dynamic(dynamic_default=configs)
        for validate in self._validators:
            validate(self._config, new)
        if self._store is not None:
            self._store.set_broker_configs(self._broker_id if per_broker else None, configs)
        self._config = new
        for reconfigure in self._reconfigurables:
            reconfigure(new)
