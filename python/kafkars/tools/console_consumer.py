"""`kafkars-console-consumer`: Kafka's kafka-console-consumer.sh.

    kafkars-console-consumer -b 127.0.0.1:9092 --topic T --from-beginning --max-messages 10 \\
        --property print.key=true --property print.offset=true
    kafkars-console-consumer -b ... --include 'orders-.*' --from-beginning --timeout-ms 5000
    kafkars-console-consumer -b ... --topic T --partition 0 --offset 42 --max-messages 1
    kafkars-console-consumer -b ... --topic __consumer_offsets --formatter offsets \\
        --from-beginning

Prints records as Kafka's DefaultMessageFormatter does: the enabled fields
(timestamp, partition, offset, headers, key) each followed by `key.separator`, then the
value, then `line.separator`. Without --group it joins no group: it assigns itself every
partition of the topics (or the one --partition) and commits nothing, so it reads from
its first second instead of waiting out a group's rebalance delay. With --group it
subscribes and commits as a member of that group.
"""

from __future__ import annotations

import re
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


class Formatter(click.ParamType):
    """Kafka's --formatter: a short name, or the class name Kafka's tool takes."""

    name = "formatter"
    choices = ("default", "logging", "noop", "offsets", "group-metadata", "transaction-log")
    _classes = {
        "defaultmessageformatter": "default",
        "loggingmessageformatter": "logging",
        "noopmessageformatter": "noop",
        "offsetsmessageformatter": "offsets",
        "groupmetadatamessageformatter": "group-metadata",
        "transactionlogmessageformatter": "transaction-log",
    }

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        text = str(value)
        if text in self.choices:
            return text
        short = self._classes.get(re.split(r"[.$]", text)[-1].lower())
        if short is None:
            if text.rsplit(".", 1)[-1].lower() == "transactionlogmessageformatter":
                self.fail(
                    "kafkars keeps no __transaction_state, so it has no transaction log formatter",
                    param,
                    ctx,
                )
            self.fail(f"{text!r} is not one of {', '.join(self.choices)}", param, ctx)
        return short


class InternalRecordFormatter:
    """Kafka's OffsetsMessageFormatter and GroupMetadataMessageFormatter (the records of
    one kind from `__consumer_offsets`) and TransactionLogMessageFormatter (those of
    `__transaction_state`): one JSON object a line."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def format(self, msg: Any) -> str:
        from kafkars.tools import internal_records

        if self.kind == "transaction-log":
            try:
                decoded = internal_records.decode_transaction(msg.key(), msg.value())
            except ValueError as e:
                return f"could not decode the record at offset {msg.offset()}: {e}\n"
            return "" if decoded is None else internal_records.to_json(decoded) + "\n"
        key_type = internal_records.record_type(msg.key())
        wanted = (
            internal_records.OFFSET_KEY_TYPES
            if self.kind == "offsets"
            else {internal_records.GROUP_METADATA_KEY_TYPE}
        )
        if key_type not in wanted:
            return ""
        try:
            decoded = internal_records.decode(msg.key(), msg.value())
        except ValueError as e:
            return f"could not decode the record at offset {msg.offset()}: {e}\n"
        return "" if decoded is None else internal_records.to_json(decoded) + "\n"


class LoggingFormatter:
    """Kafka's LoggingMessageFormatter: each record's fields on standard error."""

    def __init__(self, props: dict[str, str]) -> None:
        self.inner = MessageFormatter(props)

    def format(self, msg: Any) -> str:
        kind, ts = msg.timestamp()
        click.echo(
            f"Received message: topic {msg.topic()} partition {msg.partition()} offset "
            f"{msg.offset()} {_TIMESTAMP_TYPES.get(kind, 'NoTimestampType')} {ts}",
            err=True,
        )
        return self.inner.format(msg)


class NoOpFormatter:
    def format(self, msg: Any) -> str:
        return ""


def _formatter(name: str, props: dict[str, str]) -> Any:
    if name == "transaction-log":
        from kafkars.tools import internal_records

        if not internal_records.transaction_decoder_available():
            raise click.ClickException("this build of kafkars has no __transaction_state decoder")
    if name in ("offsets", "group-metadata", "transaction-log"):
        return InternalRecordFormatter(name)
    if name == "logging":
        return LoggingFormatter(props)
    if name == "noop":
        return NoOpFormatter()
    return MessageFormatter(props)


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--topic", help="The topic to read.")
@click.option("--include", help="A regular expression: read every topic it matches.")
@click.option("--group", help="Consumer group (commits its offsets); default: none.")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option("--partition", type=click.IntRange(min=0), help="Read only this partition.")
@click.option(
    "--offset",
    default=None,
    help="With --partition: earliest, latest or an offset (default latest).",
)
@click.option("--max-messages", type=click.IntRange(min=1), help="Exit after this many records.")
@click.option(
    "--timeout-ms", type=click.IntRange(min=0), help="Exit when no record came for this long."
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
)
@click.option(
    "--formatter",
    type=Formatter(),
    default="default",
    show_default=True,
    help="default, logging, noop, offsets, group-metadata, transaction-log "
    "(or Kafka's class name).",
)
@click.option("--property", "properties", multiple=True, help="Formatter property key=value.")
@click.option("--consumer-property", "consumer_properties", multiple=True, help="key=value.")
@click.option("--consumer.config", "consumer_config", help="Consumer properties file.")
@client.version_option()
def main(
    bootstrap_server: str,
    topic: str | None,
    include: str | None,
    group: str | None,
    from_beginning: bool,
    partition: int | None,
    offset: str | None,
    max_messages: int | None,
    timeout_ms: int | None,
    isolation_level: str,
    formatter: str,
    properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
    consumer_config: str | None,
) -> None:
    """Prints the records of a topic."""
    if (topic is None) == (include is None):
        raise click.UsageError("give exactly one of --topic, --include")
    if include is not None:
        try:
            pattern = re.compile(include)
        except re.error as e:
            raise click.BadParameter(
                f"not a regular expression: {e}", param_hint="'--include'"
            ) from None
        if partition is not None:
            raise click.UsageError("--partition goes with --topic, not --include")
    if offset is not None and partition is None:
        raise click.UsageError("--offset needs --partition")
    if offset is not None and from_beginning:
        raise click.UsageError("give --offset or --from-beginning, not both")
    start = _start_offset(offset, from_beginning)
    printer = _formatter(formatter, client.parse_properties(properties, "--property"))
    config = {
        **client.read_properties(consumer_config, "--consumer.config"),
        "auto.offset.reset": "earliest" if from_beginning else "latest",
        "enable.auto.commit": str(group is not None).lower(),
        "isolation.level": isolation_level,
        **client.parse_properties(consumer_properties, "--consumer-property"),
    }
    errors = client.ErrorSink()
    consumer = client.consumer(
        bootstrap_server,
        group or f"console-consumer-{uuid.uuid4().hex[:8]}",
        {**config, "error_cb": errors},
    )
    try:
        if topic is not None and partition is not None:
            client.topic_partitions(consumer, topic)  # a clean error when it is missing
            consumer.assign([_partition(topic, partition, start)])
        elif group is not None:
            if topic is not None:
                client.topic_partitions(consumer, topic)
            # librdkafka's subscription regex is POSIX and unanchored: anchor it.
            consumer.subscribe([topic] if topic is not None else [f"^({include})$"])
        else:
            names = [topic] if topic is not None else _matching(consumer, pattern)
            if not names:
                raise click.ClickException(f"No topic matches --include {include!r}")
            consumer.assign(
                [
                    _partition(name, p, start)
                    for name in names
                    for p in client.topic_partitions(consumer, name)
                ]
            )
        count = consume(consumer, printer, max_messages, timeout_ms, sys.stdout, errors)
    except KeyboardInterrupt:  # pragma: no cover - interactive use
        count = None
    finally:
        consumer.close()
    if count is not None:
        click.echo(f"Processed a total of {count} messages", err=True)


def _matching(consumer: Any, pattern: re.Pattern[str]) -> list[str]:
    """The topics `--include` matches (whole names, as Kafka's regex subscription does);
    internal topics only when the pattern names them."""
    topics = consumer.list_topics(timeout=client.DEFAULT_TIMEOUT_S).topics
    return sorted(
        t
        for t in topics
        if pattern.fullmatch(t) and (not t.startswith("__") or pattern.pattern.startswith("__"))
    )


def _start_offset(offset: str | None, from_beginning: bool) -> int:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

    if from_beginning or offset == "earliest":
        return int(OFFSET_BEGINNING)
    if offset is None or offset == "latest":
        return int(OFFSET_END)
    try:
        value = int(offset)
    except ValueError:
        value = -1
    if value < 0:
        raise click.BadParameter(
            f"{offset!r}: give earliest, latest or an offset >= 0", param_hint="'--offset'"
        )
    return value


def _partition(topic: str, partition: int, start: int) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition, start)


def consume(
    consumer: Any,
    formatter: Any,
    max_messages: int | None,
    timeout_ms: int | None,
    out: IO[str],
    errors: client.ErrorSink | None = None,
) -> int:
    count = 0
    last = time.monotonic()
    while max_messages is None or count < max_messages:
        msg = consumer.poll(0.2)
        if errors is not None:
            errors.check()
        if msg is None:
            if timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                break
            continue
        if msg.error() is not None:
            if msg.error().fatal():
                raise click.ClickException(client.describe_error(msg.error()))
            click.echo(f"WARN {client.describe_error(msg.error())}", err=True)
            continue
        out.write(formatter.format(msg))
        out.flush()
        count += 1
        last = time.monotonic()
    return count


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
