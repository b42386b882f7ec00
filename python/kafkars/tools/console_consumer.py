"""`kafkars-console-consumer`: Kafka's kafka-console-consumer.sh.

    kafkars-console-consumer -b 127.0.0.1:9092 --topic T --from-beginning --max-messages 10 \\
        --property print.key=true --property print.offset=true

Prints records as Kafka's DefaultMessageFormatter does: the enabled fields
(timestamp, partition, offset, headers, key) each followed by `key.separator`, then the
value, then `line.separator`. Without --group it reads as a throwaway group and commits
nothing.
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import IO, Any

import click

from kafkars.tools import client

_TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


class MessageFormatter:
    """Kafka's DefaultMessageFormatter properties."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(name: str, default: bool = False) -> bool:
            return props.get(name, str(default)).lower() == "true"

        self.print_timestamp = flag("print.timestamp")
        self.print_partition = flag("print.partition")
        self.print_offset = flag("print.offset")
        self.print_headers = flag("print.headers")
        self.print_key = flag("print.key")
        self.print_value = flag("print.value", True)
        self.key_separator = props.get("key.separator", "\t")
        self.line_separator = props.get("line.separator", "\n")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.null_literal = props.get("null.literal", "null")

    def format(self, msg: Any) -> str:
        fields = []
        if self.print_timestamp:
            kind, ts = msg.timestamp()
            fields.append(
                f"{_TIMESTAMP_TYPES[kind]}:{ts}" if kind in _TIMESTAMP_TYPES else "NO_TIMESTAMP"
            )
        if self.print_partition:
            fields.append(f"Partition:{msg.partition()}")
        if self.print_offset:
            fields.append(f"Offset:{msg.offset()}")
        if self.print_headers:
            headers = msg.headers() or []
            fields.append(
                self.headers_separator.join(
                    f"{k}{self.headers_key_separator}{self._text(v)}" for k, v in headers
                )
                if headers
                else "NO_HEADERS"
            )
        if self.print_key:
            fields.append(self._text(msg.key()))
        out = "".join(f + self.key_separator for f in fields)
        if self.print_value:
            out += self._text(msg.value())
        return out + self.line_separator

    def _text(self, value: bytes | None) -> str:
        return self.null_literal if value is None else value.decode("utf-8", "replace")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--topic", required=True)
@click.option("--group", help="Consumer group (commits its offsets); default: none.")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option("--partition", type=int, help="Read only this partition.")
@click.option("--offset", default="latest", show_default=True, help="earliest, latest or N.")
@click.option("--max-messages", type=int, help="Exit after this many records.")
@click.option("--timeout-ms", type=int, help="Exit when no record came for this long.")
@click.option("--isolation-level", default="read_uncommitted", show_default=True)
@click.option("--property", "properties", multiple=True, help="Formatter property key=value.")
@click.option("--consumer-property", "consumer_properties", multiple=True, help="key=value.")
def main(
    bootstrap_server: str,
    topic: str,
    group: str | None,
    from_beginning: bool,
    partition: int | None,
    offset: str,
    max_messages: int | None,
    timeout_ms: int | None,
    isolation_level: str,
    properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
) -> None:
    """Prints the records of a topic."""
    formatter = MessageFormatter(client.parse_properties(properties, "--property"))
    config = {
        "auto.offset.reset": "earliest" if from_beginning else "latest",
        "enable.auto.commit": str(group is not None).lower(),
        "isolation.level": isolation_level,
        **client.parse_properties(consumer_properties, "--consumer-property"),
    }
    consumer = client.consumer(
        bootstrap_server, group or f"console-consumer-{uuid.uuid4().hex[:8]}", config
    )
    try:
        if partition is None:
            consumer.subscribe([topic])
        else:
            consumer.assign([_start(topic, partition, offset, from_beginning)])
        count = consume(consumer, formatter, max_messages, timeout_ms, sys.stdout)
    except KeyboardInterrupt:  # pragma: no cover - interactive use
        count = None
    finally:
        consumer.close()
    if count is not None:
        click.echo(f"Processed a total of {count} messages", err=True)


def _start(topic: str, partition: int, offset: str, from_beginning: bool) -> Any:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    if from_beginning or offset == "earliest":
        return TopicPartition(topic, partition, OFFSET_BEGINNING)
    if offset == "latest":
        return TopicPartition(topic, partition, OFFSET_END)
    try:
        return TopicPartition(topic, partition, int(offset))
    except ValueError:
        raise click.UsageError("--offset must be earliest, latest or a number") from None


def consume(
    consumer: Any,
    formatter: MessageFormatter,
    max_messages: int | None,
    timeout_ms: int | None,
    out: IO[str],
) -> int:
    count = 0
    last = time.monotonic()
    while max_messages is None or count < max_messages:
        msg = consumer.poll(0.2)
        if msg is None:
            if timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                break
            continue
        if msg.error() is not None:
            if msg.error().fatal():
                raise click.ClickException(str(msg.error()))
            click.echo(f"WARN {msg.error()}", err=True)
            continue
        out.write(formatter.format(msg))
        out.flush()
        count += 1
        last = time.monotonic()
    return count


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
