"""`kafkars-server-start [server.properties] [--override key=value ...]`."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path

import click

from kafkars.config import ConfigException, KafkaConfig, parse_overrides
from kafkars.server.kafka_server import KafkaServer

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


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
@click.option("--log-level", default="INFO", show_default=True)
def main(
    properties: str | None, overrides: tuple[str, ...], ready_file: str | None, log_level: str
) -> None:
    """Start a kafkars broker.

    With no properties file: one broker on 127.0.0.1:9092 with data in ./kafkars-data.
    """
    logging.basicConfig(level=log_level.upper(), format=LOG_FORMAT, stream=sys.stderr)
    try:
        extra = parse_overrides(list(overrides))
        if properties:
            config = KafkaConfig.from_properties_file(Path(properties), extra)
        else:
            config = KafkaConfig.from_dict(extra)
    except ConfigException as e:
        raise click.ClickException(str(e)) from None

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
        logging.getLogger("kafkars.server").error("Fatal error during start-up: %s", e)
        server.shutdown()
        raise SystemExit(1) from None
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
