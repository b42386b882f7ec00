"""BROKER_LOGGER resource checks and log4j level names (Kafka's RuntimeLoggerManager)."""

from __future__ import annotations

import logging

import pytest

from kafkars.config import ConfigException
from kafkars.protocol import Errors, KafkaError
from kafkars.server import broker_loggers


def test_resource_must_name_this_broker() -> None:
    broker_loggers.validate_node("7", 7)
    for name, message in [
        ("", "Broker id must not be empty"),
        ("x", "Node id must be an integer, but it is: x"),
        ("8", "Unexpected broker id, expected 7 but received 8"),
    ]:
        with pytest.raises(KafkaError) as raised:
            broker_loggers.validate_node(name, 7)
        assert raised.value.code is Errors.INVALID_REQUEST and raised.value.message == message


def test_levels_use_log4j_names() -> None:
    assert broker_loggers.level_name(logging.WARNING) == "WARN"
    assert broker_loggers.level_name(logging.CRITICAL) == "FATAL"
    assert broker_loggers.level_name(broker_loggers.TRACE) == "TRACE"
    assert broker_loggers.level_name(logging.INFO + 5) == "INFO"


def test_set_and_delete_a_logger_level() -> None:
    logger = logging.getLogger("kafkars.test.broker_loggers")
    broker_loggers.validate_ops([(0, logger.name, "TRACE")])
    broker_loggers.apply_ops([(0, logger.name, "TRACE")])
    assert broker_loggers.loggers()[logger.name] == "TRACE"
    broker_loggers.apply_ops([(1, logger.name, None)])
    assert logger.level == logging.NOTSET
    with pytest.raises(ConfigException, match="not a supported log level"):
        broker_loggers.validate_ops([(0, logger.name, "trace")])
