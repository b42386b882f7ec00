"""DescribeConfigs: config entries with values, sources and synonyms as Kafka reports them."""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkars.config.broker import LISTENER_PREFIX_RE, KafkaConfig, config_key
from kafkars.config.broker_defs import BROKER_CONFIG_DEF
from kafkars.config.definition import ConfigType, UpdateMode, to_string
from kafkars.config.topic import TOPIC_CONFIG_DEF, TOPIC_SYNONYMS, LogConfig


class ConfigSource(enum.IntEnum):
    """Where a value comes from; the numbers are the DescribeConfigs wire ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7

    # Kafka's protocol-level name for DYNAMIC_TOPIC_CONFIG.
    TOPIC_CONFIG = 1


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs result entry (``value`` is None for sensitive or unset values)."""

    name: str
    value: str | None
    source: ConfigSource
    is_sensitive: bool
    read_only: bool
    config_type: ConfigType
    documentation: str | None = None
    synonyms: list[ConfigSynonym] = field(default_factory=list)

    @property
    def is_default(self) -> bool:
        """For DescribeConfigs v0, which has a flag instead of a source."""
        return self.source == ConfigSource.DEFAULT_CONFIG


# Broker configs that several names set (DynamicBrokerConfig.brokerConfigSynonyms).
_BROKER_SYNONYM_GROUPS = [
    ["log.roll.ms", "log.roll.hours"],
    ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
]
_LISTENER_MECHANISM_CONFIGS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)


def broker_config_synonyms(name: str) -> list[str]:
    """Names that can set the same broker config, highest precedence first."""
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    m = LISTENER_PREFIX_RE.fullmatch(name)
    if m:
        base = m.group(2)
        mechanism = next((c for c in _LISTENER_MECHANISM_CONFIGS if base.endswith(c)), None)
        return [name, mechanism or base]
    return [name]


def _is_sensitive(type_: ConfigType | None) -> bool:
    # Kafka hides values of unknown type too, to be safe.
    return type_ is None or type_ is ConfigType.PASSWORD


def _layers(config: KafkaConfig) -> list[tuple[Mapping[str, str], ConfigSource]]:
    return [
        (config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (config.originals, ConfigSource.STATIC_BROKER_CONFIG),
        (_DEFAULTS, ConfigSource.DEFAULT_CONFIG),
    ]


_DEFAULTS = BROKER_CONFIG_DEF.defaults_as_strings()


def _synonyms(
    config: KafkaConfig, name: str, names: list[str], sensitive: bool
) -> list[ConfigSynonym]:
    """Kafka's ``configSynonyms``: by source first, then by name; leading entries for
    higher-precedence names are dropped (so a base config skips its listener override)."""
    found: list[ConfigSynonym] = []
    for layer, source in _layers(config):
        for n in names:
            if n in layer:
                found.append(ConfigSynonym(n, None if sensitive else layer[n], source))
    while found and found[0].name != name:
        found.pop(0)
    return found


def _entry_type(name: str) -> ConfigType | None:
    key = config_key(name)
    return key.type if key else None


def describe_broker(
    config: KafkaConfig,
    dynamic: Mapping[str, Any] | None = None,
    *,
    dynamic_default: Mapping[str, Any] | None = None,
    keys: Collection[str] | None = None,
    include_synonyms: bool = True,
    include_documentation: bool = True,
    per_broker: bool = True,
) -> list[ConfigEntry]:
    """The broker resource's entries, sorted by name.

    ``dynamic``/``dynamic_default`` replace the config's per-broker / cluster-default
    dynamic layers when given. ``per_broker=False`` describes the cluster-default resource
    (empty resource name): only the dynamic default configs. ``keys`` filters by name.
    """
    if dynamic is not None or dynamic_default is not None:
        config = config.with_dynamic(dynamic, dynamic_default)
    if per_broker:
        # Kafka lists every non-internal key plus whatever was given (known or not).
        names = {key.name for key in BROKER_CONFIG_DEF if not key.internal}
        names |= {k for k, v in config.originals.items() if v is not None}
        names |= set(config.dynamic_default) | set(config.dynamic_broker)
    else:
        names = set(config.dynamic_default)
    if keys:
        names &= set(keys)
    entries = []
    for name in sorted(names):
        type_ = _entry_type(name)
        sensitive = _is_sensitive(type_)
        if per_broker:
            value = None if sensitive else config.get_string(name)
        else:
            value = None if sensitive else config.dynamic_default[name]
        synonyms = _synonyms(config, name, broker_config_synonyms(name), sensitive)
        if not per_broker:
            synonyms = [
                s for s in synonyms if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
        # Kafka's `!DynamicBrokerConfig.AllDynamicConfigs.contains(name)`: only KafkaConfig
        # keys can be dynamic here; the dynamic-only broker configs (replication throttle
        # rates) and listener-prefixed names report read_only=true, as Kafka does.
        key = BROKER_CONFIG_DEF.get(name)
        read_only = key is None or key.update_mode is UpdateMode.READ_ONLY
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                is_sensitive=sensitive,
                read_only=read_only,
                config_type=type_ if type_ is not None else ConfigType.UNKNOWN,
                documentation=config.documentation_of(name) if include_documentation else None,
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


def describe_topic(
    broker_config: KafkaConfig,
    topic_overrides: Mapping[str, Any] | None,
    *,
    keys: Collection[str] | None = None,
    include_synonyms: bool = True,
    include_documentation: bool = True,
) -> list[ConfigEntry]:
    """A topic's entries, sorted by name: each effective value with the topic override
    (if any) first among its synonyms, then the broker layers, then the default."""
    overrides = dict(topic_overrides or {})
    log_config = LogConfig.from_layers(broker_config, overrides)
    names = TOPIC_CONFIG_DEF.names()
    if keys:
        names = [n for n in names if n in set(keys)]
    entries = []
    for name in sorted(names):
        type_ = TOPIC_CONFIG_DEF[name].type
        value = to_string(log_config.get(name), type_)
        synonyms: list[ConfigSynonym] = []
        chain = TOPIC_SYNONYMS.get(name)
        if chain:
            first = chain[0][0]
            synonyms = _synonyms(broker_config, first, broker_config_synonyms(first), False)
        if name in overrides:
            synonyms.insert(0, ConfigSynonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                is_sensitive=False,
                read_only=False,
                config_type=type_,
                documentation=LogConfig.documentation_of(name) if include_documentation else None,
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


__all__ = [
    "ConfigEntry",
    "ConfigSource",
    "ConfigSynonym",
    "broker_config_synonyms",
    "describe_broker",
    "describe_topic",
]
