"""The BROKER_LOGGER config resource: the broker's loggers and their levels, described and
changed at runtime (Kafka's Log4jController and RuntimeLoggerManager, over Python's
`logging`). Levels use log4j's names, as Kafka's tools expect."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafkars.config import ConfigException
from kafkars.config.alter import AlterOp
from kafkars.protocol import Errors, KafkaError

log = logging.getLogger("kafkars.server.BrokerLoggers")

ROOT_LOGGER = "root"
VALID_LOG_LEVELS = ("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN")
TRACE = 5  # below DEBUG, as log4j's TRACE is
_TO_PYTHON = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": TRACE,
    "ALL": 1,
}


def level_name(level: int) -> str:
    """A Python level as log4j names it (the nearest at or below it)."""
    for name, value in sorted(_TO_PYTHON.items(), key=lambda kv: -kv[1]):
        if level >= value:
            return name
    return "ALL"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def loggers() -> dict[str, str]:
    """Every logger that exists, with its effective level (root first, then by name)."""
    out = {ROOT_LOGGER: level_name(logging.getLogger().getEffectiveLevel())}
    for name in sorted(logging.Logger.manager.loggerDict):
        logger = _logger(name)
        if logger is not None:
            out[name] = level_name(logger.getEffectiveLevel())
    return out


def validate_node(resource_name: str, node_id: int) -> None:
    """A BROKER_LOGGER resource names this broker."""
    if not resource_name:
        raise KafkaError(Errors.INVALID_REQUEST, "Broker id must not be empty")
    try:
        requested = int(resource_name)
    except ValueError:
        raise KafkaError(
            Errors.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource_name}"
        ) from None
    if requested != node_id:
        raise KafkaError(
            Errors.INVALID_REQUEST,
            f"Unexpected broker id, expected {node_id} but received {resource_name}",
        )


def validate_ops(ops: Iterable[tuple[int, str, str | None]]) -> None:
    """RuntimeLoggerManager.validateLogLevelConfigs: SET to a log4j level or DELETE (not of
    the root logger), on loggers that exist; APPEND and SUBTRACT are refused."""
    for op_id, name, value in ops:
        try:
            op = AlterOp(op_id)
        except ValueError:
            raise KafkaError(
                Errors.INVALID_REQUEST,
                f"Unknown operation type {op_id} is not allowed for the BROKER_LOGGER resource",
            ) from None
        if op in (AlterOp.APPEND, AlterOp.SUBTRACT):
            raise KafkaError(
                Errors.INVALID_REQUEST,
                f"{op.name} operation is not allowed for the BROKER_LOGGER resource",
            )
        if _logger(name) is None:
            raise ConfigException(f"Logger {name} does not exist!", name=name)
        if op is AlterOp.SET and value not in VALID_LOG_LEVELS:
            raise ConfigException(
                f"Cannot set the log level of {name} to {value} as it is not a supported log "
                f"level. Valid log levels are {', '.join(VALID_LOG_LEVELS)}",
                name=name,
                value=value,
            )
        if op is AlterOp.DELETE and name == ROOT_LOGGER:
            raise KafkaError(
                Errors.INVALID_REQUEST,
                f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
            )


def apply_ops(ops: Iterable[tuple[int, str, str | None]]) -> None:
    """Sets or unsets (back to inheriting its parent's) each logger's level."""
    for op_id, name, value in ops:
        logger = _logger(name)
        assert logger is not None  # validated
        if AlterOp(op_id) is AlterOp.SET:
            assert value is not None
            logger.setLevel(_TO_PYTHON[value])
            log.warning("Updated the log level of %s to %s", name, value)
        else:
            logger.setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", name)
