"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.

Topic overrides live with the topic metadata; dynamic broker configs (per broker and
cluster default) in the ConfigStore. Both survive restarts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.config import (
    ConfigEntry,
    ConfigException,
    ConfigSource,
    ConfigType,
    ResourceType,
    apply_alter_ops,
    describe_broker,
    describe_topic,
    validate_alter_configs,
)
from kafkars.protocol import Errors, KafkaError
from kafkars.server import broker_loggers

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis


def _entry(e: Any, include_synonyms: bool, include_documentation: bool) -> dict[str, Any]:
    return {
        "name": e.name,
        "value": e.value,
        "read_only": e.read_only,
        "config_source": int(e.source),
        "is_sensitive": e.is_sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": int(s.source)} for s in e.synonyms
        ]
        if include_synonyms
        else [],
        "config_type": int(e.config_type),
        "documentation": e.documentation if include_documentation else None,
    }


def _broker_scope(apis: KafkaApis, name: str) -> bool:
    """True for this broker's own resource, False for the cluster default (empty name)."""
    if name == "":
        return False
    if name != str(apis.broker_id):
        raise KafkaError(
            Errors.INVALID_REQUEST,
            f"Unexpected broker id, expected {apis.broker_id} or empty string, but received {name}",
        )
    return True


def _describe(apis: KafkaApis, r: dict[str, Any], body: dict[str, Any]) -> list[Any]:
    keys = r["configuration_keys"]
    rtype = r["resource_type"]
    synonyms = body.get("include_synonyms", False)
    docs = body.get("include_documentation", False)
    if rtype == ResourceType.TOPIC:
        topic = apis.metadata_cache.get(r["resource_name"])
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        return describe_topic(
            apis.config.current,
            topic.configs,
            keys=keys,
            include_synonyms=synonyms,
            include_documentation=docs,
        )
    if rtype == ResourceType.BROKER:
        per_broker = _broker_scope(apis, r["resource_name"])
        # An unset advertised.listeners stays null, as Kafka answers it (the listeners
        # as bound are in Metadata and DescribeCluster).
        return describe_broker(
            apis.config.current,
            apis.config.dynamic_broker_configs,
            dynamic_default=apis.config.dynamic_default_configs,
            keys=keys,
            include_synonyms=synonyms,
            include_documentation=docs,
            per_broker=per_broker,
        )
    if rtype == ResourceType.BROKER_LOGGER:
        broker_loggers.validate_node(r["resource_name"], apis.broker_id)
        return [
            ConfigEntry(
                name=name,
                value=level,
                source=ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                is_sensitive=False,
                read_only=False,
                config_type=ConfigType.UNKNOWN,  # Kafka leaves the type unset for loggers
            )
            for name, level in broker_loggers.loggers().items()
            if not keys or name in keys
        ]
    raise KafkaError(Errors.INVALID_REQUEST, f"Unsupported resource type {rtype}")


def handle_describe_configs(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    results = []
    for r in body["resources"]:
        result: dict[str, Any] = {
            "resource_type": r["resource_type"],
            "resource_name": r["resource_name"],
            "configs": [],
        }
        try:
            entries = _describe(apis, r, body)
            result["configs"] = [
                _entry(
                    e,
                    body.get("include_synonyms", False),
                    body.get("include_documentation", False),
                )
                for e in entries
            ]
            result["error_code"] = 0
        except KafkaError as e:
            # Kafka answers an unknown topic with the field's default (an empty message)
            # and any other failure with the exception's message.
            unknown_topic = e.code is Errors.UNKNOWN_TOPIC_OR_PARTITION and e.message is None
            result.update(
                error_code=int(e.code), error_message="" if unknown_topic else e.error_message
            )
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _alter_result(r: dict[str, Any], error: KafkaError | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource_type": r["resource_type"],
        "resource_name": r["resource_name"],
        "error_code": 0,
        "error_message": None,
    }
    if error is not None:
        out.update(error_code=int(error.code), error_message=error.error_message)
    return out


def _as_kafka_error(e: ConfigException) -> KafkaError:
    return KafkaError(Errors(e.error_code), str(e))


def _current(apis: KafkaApis, r: dict[str, Any]) -> tuple[ResourceType, bool, dict[str, str]]:
    rtype = ResourceType(r["resource_type"])
    if rtype == ResourceType.TOPIC:
        topic = apis.metadata_cache.get(r["resource_name"])
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        return rtype, True, dict(topic.configs)
    if rtype == ResourceType.BROKER:
        per_broker = _broker_scope(apis, r["resource_name"])
        stored = (
            apis.config.dynamic_broker_configs
            if per_broker
            else apis.config.dynamic_default_configs
        )
        return rtype, per_broker, dict(stored)
    raise KafkaError(Errors.INVALID_REQUEST, f"Unsupported resource type {int(rtype)}")


def _apply(apis: KafkaApis, r: dict[str, Any], configs: dict[str, str], per_broker: bool) -> None:
    if r["resource_type"] == ResourceType.TOPIC:
        apis.controller.set_topic_configs(r["resource_name"], configs)
    else:
        apis.config.set_dynamic_broker_configs(configs, per_broker=per_broker)


def _check_unique(resources: list[dict[str, Any]], r: dict[str, Any]) -> None:
    """Kafka refuses every copy of a resource named twice in one request."""
    key = (r["resource_type"], r["resource_name"])
    if sum((o["resource_type"], o["resource_name"]) == key for o in resources) > 1:
        raise KafkaError(Errors.INVALID_REQUEST, f"Duplicate resource {key[1]} in the request")


def handle_alter_configs(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    responses = []
    for r in body["resources"]:
        try:
            _check_unique(body["resources"], r)
            rtype, per_broker, _ = _current(apis, r)
            wanted = {c["name"]: c["value"] for c in r["configs"]}
            try:
                validate_alter_configs(rtype, wanted, per_broker=per_broker)
            except ConfigException as e:
                raise _as_kafka_error(e) from None
            # AlterConfigs replaces the resource's whole dynamic set.
            new = {k: v for k, v in wanted.items() if v is not None}
            if not body["validate_only"]:
                _apply(apis, r, new, per_broker)
            responses.append(_alter_result(r, None))
        except KafkaError as e:
            responses.append(_alter_result(r, e))
    return {"throttle_time_ms": 0, "responses": responses}


def _alter_loggers(apis: KafkaApis, r: dict[str, Any], validate_only: bool) -> None:
    """Kafka's RuntimeLoggerManager.applyChangesForResource."""
    ops = [(c["config_operation"], c["name"], c["value"]) for c in r["configs"]]
    broker_loggers.validate_node(r["resource_name"], apis.broker_id)
    try:
        broker_loggers.validate_ops(ops)
    except ConfigException as e:
        raise _as_kafka_error(e) from None
    if not validate_only:
        broker_loggers.apply_ops(ops)


def handle_incremental_alter_configs(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    responses = []
    for r in body["resources"]:
        try:
            _check_unique(body["resources"], r)
            if r["resource_type"] == ResourceType.BROKER_LOGGER:
                _alter_loggers(apis, r, body["validate_only"])
                responses.append(_alter_result(r, None))
                continue
            rtype, per_broker, current = _current(apis, r)
            ops = [(c["config_operation"], c["name"], c["value"]) for c in r["configs"]]
            names = [name for _, name, _ in ops]
            if len(set(names)) != len(names):
                raise KafkaError(Errors.INVALID_REQUEST, "Duplicate config keys in one resource")
            try:
                new = apply_alter_ops(rtype, current, ops, per_broker=per_broker)
            except ConfigException as e:
                raise _as_kafka_error(e) from None
            except ValueError as e:  # an unknown operation id
                raise KafkaError(Errors.INVALID_REQUEST, str(e)) from None
            if not body["validate_only"]:
                _apply(apis, r, new, per_broker)
            responses.append(_alter_result(r, None))
        except KafkaError as e:
            responses.append(_alter_result(r, e))
    return {"throttle_time_ms": 0, "responses": responses}
