"""Validation and application of AlterConfigs / IncrementalAlterConfigs changes."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from kafkars.config.broker import LISTENER_PREFIX_RE, base_config_name, config_key
from kafkars.config.broker_defs import LISTENER_ONLY_DYNAMIC
from kafkars.config.definition import (
    INVALID_CONFIG,
    INVALID_REQUEST,
    ConfigException,
    ConfigType,
    UpdateMode,
    parse_type,
    to_string,
)
from kafkars.config.topic import TOPIC_CONFIG_DEF, LogConfig


class ResourceType(enum.IntEnum):
    """ConfigResource.Type wire ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16


class AlterOp(enum.IntEnum):
    """IncrementalAlterConfigs operation ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


# Broker configs settable only on one broker, never as the cluster-wide default.
_CLUSTER_LEVEL_LISTENER_CONFIGS = {
    "max.connections",
    "max.connection.creation.rate",
    "num.network.threads",
}


def validate_alter(
    resource_type: ResourceType | int,
    name: str,
    value: str | None,
    *,
    per_broker: bool = True,
) -> Any:
    """Check one config change; returns the parsed value (None for a deletion).

    ``per_broker`` is False when a broker resource has the empty name (cluster default).
    Raises ConfigException whose ``error_code`` is INVALID_CONFIG or INVALID_REQUEST.
    """
    try:
        rt: ResourceType | None = ResourceType(resource_type)
    except ValueError:
        rt = None
    if rt is ResourceType.TOPIC:
        if name not in TOPIC_CONFIG_DEF:
            raise ConfigException(f"Unknown topic config name: {name}", name=name)
        if value is None:
            return None
        return TOPIC_CONFIG_DEF.parse_value(name, value)
    if rt is ResourceType.BROKER:
        # Kafka's broker checks a dynamic change by building the new config, and answers
        # whatever that refuses as an invalid request (not an invalid config).
        try:
            return _validate_broker(name, value, per_broker)
        except ConfigException as e:
            if e.error_code != INVALID_CONFIG:
                raise
            raise ConfigException(
                f"Invalid config value for broker config {name}: {e}",
                name=name,
                value=value,
                error_code=INVALID_REQUEST,
            ) from None
    raise ConfigException(
        f"AlterConfigs is only supported for topics and brokers, but resource type is "
        f"{rt.name if rt is not None else resource_type}",
        name=name,
        error_code=INVALID_REQUEST,
    )


def _validate_broker(name: str, value: str | None, per_broker: bool) -> Any:
    prefixed = LISTENER_PREFIX_RE.fullmatch(name) is not None
    key = config_key(name)
    if not prefixed and key is not None and key.update_mode is UpdateMode.READ_ONLY:
        raise ConfigException(
            f"Cannot update these configs dynamically: {name} is read-only "
            "(set it in server.properties and restart)",
            name=name,
            value=value,
        )
    if not prefixed and name in LISTENER_ONLY_DYNAMIC:
        raise ConfigException(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix (listener.name.<listener>.{name}): {name}",
            name=name,
            value=value,
        )
    if not per_broker:
        base = base_config_name(name)
        per_broker_only = (key is not None and key.update_mode is UpdateMode.PER_BROKER) or (
            prefixed and base not in _CLUSTER_LEVEL_LISTENER_CONFIGS
        )
        if per_broker_only:
            raise ConfigException(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {name}",
                name=name,
                value=value,
            )
    if value is None or key is None:
        return value  # deletions and custom (plugin) configs are taken as they are
    parsed = parse_type(name, value, key.type)
    if key.validator is not None:
        key.validator(name, parsed)
    return parsed


def _list_type(resource_type: ResourceType, name: str) -> bool:
    topic = resource_type is ResourceType.TOPIC
    key = TOPIC_CONFIG_DEF.get(name) if topic else config_key(name)
    if key is None:
        raise ConfigException(f"Unknown config name: {name}", name=name)
    return key.type is ConfigType.LIST


def _default_list(resource_type: ResourceType, name: str) -> str | None:
    key = TOPIC_CONFIG_DEF[name] if resource_type is ResourceType.TOPIC else config_key(name)
    if key is None or not key.has_default:
        return None
    return to_string(key.default, ConfigType.LIST)


def apply_alter_ops(
    resource_type: ResourceType | int,
    current: Mapping[str, str],
    ops: Iterable[tuple[AlterOp | int, str, str | None]],
    *,
    per_broker: bool = True,
) -> dict[str, str]:
    """IncrementalAlterConfigs on one resource's stored configs; returns the new mapping.

    ``current`` is the topic's overrides or the broker resource's dynamic layer. APPEND
    and SUBTRACT start from the stored value, else the key's default, and are allowed on
    LIST configs only. Every resulting value is validated; nothing changes on error.
    """
    rt = ResourceType(resource_type)
    props = dict(current)
    changed: set[str] = set()
    for op_id, name, value in ops:
        op = AlterOp(op_id)
        if op is AlterOp.SET:
            if value is None:
                raise ConfigException(f"Null value not supported for config {name}", name=name)
            props[name] = value
        elif op is AlterOp.DELETE:
            props.pop(name, None)
        elif op is AlterOp.APPEND:
            if not _list_type(rt, name):
                raise ConfigException(
                    f"Config value append is not allowed for config key: {name}", name=name
                )
            old = props.get(name, _default_list(rt, name)) or ""
            items = [i for i in old.split(",") if i] if old else []
            items += [i for i in (value or "").split(",") if i not in items]
            props[name] = ",".join(items)
        elif op is AlterOp.SUBTRACT:
            if not _list_type(rt, name):
                raise ConfigException(
                    f"Config value subtract is not allowed for config key: {name}", name=name
                )
            old = props.get(name, _default_list(rt, name)) or ""
            remove = set((value or "").split(","))
            props[name] = ",".join(i for i in old.split(",") if i not in remove)
        changed.add(name)
    validate_alter_configs(rt, {n: props.get(n) for n in changed}, per_broker=per_broker)
    if rt is ResourceType.TOPIC:
        LogConfig.validate_overrides(props)
    return props


def validate_alter_configs(
    resource_type: ResourceType | int,
    configs: Mapping[str, str | None],
    *,
    per_broker: bool = True,
) -> dict[str, Any]:
    """Validate a whole AlterConfigs resource (every key); returns parsed values."""
    parsed = {
        name: validate_alter(resource_type, name, value, per_broker=per_broker)
        for name, value in configs.items()
    }
    if ResourceType(resource_type) is ResourceType.TOPIC:
        LogConfig.validate_overrides({k: v for k, v in configs.items() if v is not None})
    return parsed


__all__ = [
    "INVALID_CONFIG",
    "INVALID_REQUEST",
    "AlterOp",
    "ResourceType",
    "apply_alter_ops",
    "validate_alter",
    "validate_alter_configs",
]
