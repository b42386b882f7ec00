"""The broker's logging set-up: Kafka-style lines, Kafka's level names, a Python
`logging.config` file for per-logger levels, and an optional rotating log file.

The Rust core's `tracing` events arrive through the same Python loggers (see
`kafkars._core.set_rust_log_level`), so whatever is configured here applies to them too.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

# Kafka's log4j pattern "[%d] %p %m (%c)%n".
LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"

TRACE = 5
logging.addLevelName(TRACE, "TRACE")

# log4j's level names, as Kafka's tools take them, with Python's own names beside them.
LEVELS: dict[str, int] = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}

# Each request, with its timings, at DEBUG (Kafka's kafka.request.logger).
REQUEST_LOGGER = "kafkars.request"


class LoggingConfigError(Exception):
    """A logging configuration that cannot be applied (the message names the file)."""


def configure_logging(
    level: str = "INFO",
    config_file: Path | None = None,
    log_file: Path | None = None,
    max_bytes: int = 100 * 1024 * 1024,
    backup_count: int = 10,
) -> None:
    """Sets up the root logger: `level` for every logger a config file does not name,
    standard error, and `log_file` rotated at `max_bytes` keeping `backup_count` files.

    `config_file` is Python's `logging.config` format: a `.json` file is a dictConfig, any
    other an INI fileConfig. It is applied last, so its per-logger levels win.
    """
    formatter = logging.Formatter(LOG_FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        # Imported here: logging.handlers brings socket and pickle, 8 ms of start-up.
        from logging.handlers import RotatingFileHandler

        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            handlers.append(
                RotatingFileHandler(log_file, maxBytes=max_bytes, backupCount=backup_count)
            )
        except OSError as e:
            raise LoggingConfigError(f"cannot write the log file {log_file}: {e.strerror}") from e
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(LEVELS[level.upper()])
    if config_file is not None:
        _apply_config_file(config_file)


def _apply_config_file(path: Path) -> None:
    from logging.config import dictConfig, fileConfig

    try:
        if path.suffix == ".json":
            config = json.loads(path.read_text())
            config.setdefault("version", 1)
            # Keep the handlers set up above unless the file says otherwise.
            config.setdefault("incremental", False)
            config.setdefault("disable_existing_loggers", False)
            dictConfig(config)
        else:
            fileConfig(path, disable_existing_loggers=False)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
        raise LoggingConfigError(f"cannot apply the logging config {path}: {e}") from e
