"""`kafkars-server-start [server.properties] [--override key=value ...]`."""

from __future__ import annotations

import gc
import json
import logging
import resource
import signal
import threading
from pathlib import Path

import click

from kafkars import __version__
from kafkars.config import ConfigException, KafkaConfig, parse_overrides
from kafkars.server.kafka_server import KafkaServer
from kafkars.server.logging_config import LEVELS, LoggingConfigError, configure_logging


def raise_open_file_limit() -> None:
    """The soft limit on open files up to the hard one, as the JVM does for Kafka
    (MaxFDLimit): a broker holds a file per segment and index of every partition."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as e:
        logging.getLogger("kafkars.server").debug("Open files stay at %d: %s", soft, e)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("properties", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a property of the file (repeatable).",
)
@click.option(
    "--ready-file",
    type=click.Path(dir_okay=False),
    hidden=True,
    help="Write the bound listeners here as JSON once serving (used by kafkars.testing).",
)
@click.option(
    "--log-level",
    type=click.Choice(list(LEVELS), case_sensitive=False),
    default="INFO",
    show_default=True,
    help="Level of every logger a --log-config file does not set.",
)
@click.option(
    "--log-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Python logging.config file (INI, or a dictConfig as .json): per-logger levels, "
    "handlers. Set kafkars.request to DEBUG to log every request.",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the log here, rotated at 100 MiB keeping 10 files.",
)
@click.version_option(__version__, "--version", message="%(version)s")
def main(
    properties: str | None,
    overrides: tuple[str, ...],
    ready_file: str | None,
    log_level: str,
    log_config: Path | None,
    log_file: Path | None,
) -> None:
    """Start a kafkars broker.

    With no properties file: one broker on 127.0.0.1:9092 with data in ./kafkars-data.
    """
    try:
        configure_logging(log_level, log_config, log_file)
    except LoggingConfigError as e:
        raise click.ClickException(str(e)) from None
    try:
        extra = parse_overrides(list(overrides))
        if properties:
            config = KafkaConfig.from_properties_file(Path(properties), extra)
        else:
            config = KafkaConfig.from_dict(extra)
    except ConfigException as e:
        raise click.ClickException(str(e)) from None

    raise_open_file_limit()
    server = KafkaServer(config)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        logging.getLogger("kafkars.server").info("Received %s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.startup()
    except Exception as e:
        # Most start-up failures are a setting or a path of the user's: one line; the
        # traceback is there for --log-level DEBUG.
        log = logging.getLogger("kafkars.server")
        log.error("Fatal error during start-up: %s", e)
        log.debug("Start-up failure", exc_info=True)
        server.shutdown()
        raise SystemExit(1) from None
    # What start-up built lives as long as the broker: kept out of the cyclic collector,
    # so a full collection does not walk it (5 to 8 ms on this machine) under load.
    gc.freeze()
    if ready_file:
        tmp = Path(ready_file + ".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "listeners": server.bound_listeners,
                    "broker_id": server.broker_id,
                    "metrics_port": server.metrics_port,
                }
            )
        )
        tmp.replace(ready_file)
    while not stop.wait(1.0):
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
