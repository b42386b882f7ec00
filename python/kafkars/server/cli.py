"""`kafkars-server-start [server.properties] [--override key=value ...]`.

argparse rather than click (which the tools use): click's import is 20 ms, a sixth of the
broker's start-up."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import resource
import signal
import threading
from pathlib import Path

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


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Start a kafkars broker. With no properties file: one broker on "
        "127.0.0.1:9092 with data in ./kafkars-data.",
    )
    parser.add_argument("properties", nargs="?", type=_existing_file, help="server.properties")
    parser.add_argument(
        "--override",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a property of the file (repeatable).",
    )
    # Where to write the bound listeners as JSON once serving (used by kafkars.testing).
    parser.add_argument("--ready-file", help=argparse.SUPPRESS)
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=list(LEVELS),
        default="INFO",
        help="Level of every logger a --log-config file does not set (default: INFO).",
    )
    parser.add_argument(
        "--log-config",
        type=_existing_file,
        help="Python logging.config file (INI, or a dictConfig as .json): per-logger levels, "
        "handlers. Set kafkars.request to DEBUG to log every request.",
    )
    parser.add_argument(
        "--log-file",
        type=Path,
        help="Also write the log here, rotated at 100 MiB keeping 10 files.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    return parser


def _existing_file(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file")
    return path


def main(argv: list[str] | None = None, prog_name: str | None = None) -> None:
    """Start a kafkars broker; a mistake in the arguments or the config is one line and
    exit status 1 (2 for a usage error)."""
    args = _parser(prog_name).parse_args(argv)
    try:
        configure_logging(args.log_level, args.log_config, args.log_file)
        extra = parse_overrides(args.overrides)
        if args.properties:
            config = KafkaConfig.from_properties_file(args.properties, extra)
        else:
            config = KafkaConfig.from_dict(extra)
    except (LoggingConfigError, ConfigException) as e:
        raise SystemExit(f"Error: {e}") from None

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
    if args.ready_file:
        tmp = Path(args.ready_file + ".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "listeners": server.bound_listeners,
                    "broker_id": server.broker_id,
                    "metrics_port": server.metrics_port,
                }
            )
        )
        tmp.replace(args.ready_file)
    while not stop.wait(1.0):
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
