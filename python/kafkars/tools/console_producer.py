"""`kafkars-console-producer`: Kafka's kafka-console-producer.sh.

    printf 'k1:v1\\nk2:v2\\n' | kafkars-console-producer -b 127.0.0.1:9092 --topic T \\
        --property parse.key=true --property key.separator=:

Each line of standard input is one record. As in Kafka's LineMessageReader,
`parse.key` splits a key off at `key.separator` (a line without it is an error), and
`parse.headers` reads `h1:v1,h2:v2` before the key at `headers.delimiter`. A topic that
does not exist (and that the broker does not create on first use) is an error before
anything is read.
"""

from __future__ import annotations

import sys
from typing import IO, Any

import click

from kafkars.tools import client


class LineReader:
    """Kafka's LineMessageReader properties: turns one input line into a record."""

    def __init__(self, props: dict[str, str]) -> None:
        self.parse_key = props.get("parse.key", "false").lower() == "true"
        self.key_separator = props.get("key.separator", "\t")
        self.parse_headers = props.get("parse.headers", "false").lower() == "true"
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")

    def read(self, line: str) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        headers: list[tuple[str, bytes | None]] = []
        rest = line
        if self.parse_headers:
            raw, sep, rest = rest.partition(self.headers_delimiter)
            if not sep:
                raise click.ClickException(f"No headers delimiter found on line: {line}")
            for h in filter(None, raw.split(self.headers_separator)):
                k, _, v = h.partition(self.headers_key_separator)
                headers.append((k, self._bytes(v)))
        key = None
        if self.parse_key:
            k, sep, rest = rest.partition(self.key_separator)
            if not sep:
                raise click.ClickException(f"No key separator found on line: {line}")
            key = self._bytes(k)
        return key, self._bytes(rest), headers

    def _bytes(self, text: str) -> bytes | None:
        return None if text == self.null_marker else text.encode()


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--topic", required=True)
@click.option("--partition", type=int, help="Send every record to this partition.")
@click.option(
    "--compression-codec",
    type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
    default="none",
    show_default=True,
)
@click.option("--request-required-acks", default="-1", show_default=True)
@click.option("--sync", is_flag=True, help="Wait for each record's acknowledgement.")
@click.option("--property", "properties", multiple=True, help="Line reader property key=value.")
@click.option("--producer-property", "producer_properties", multiple=True, help="key=value.")
@click.option("--producer.config", "producer_config", help="Producer properties file.")
@client.version_option()
def main(
    bootstrap_server: str,
    topic: str,
    partition: int | None,
    compression_codec: str,
    request_required_acks: str,
    sync: bool,
    properties: tuple[str, ...],
    producer_properties: tuple[str, ...],
    producer_config: str | None,
) -> None:
    """Sends each line of standard input to a topic."""
    reader = LineReader(client.parse_properties(properties, "--property"))
    config = {
        **client.read_properties(producer_config, "--producer.config"),
        "compression.type": compression_codec,
        "acks": request_required_acks,
        **client.parse_properties(producer_properties, "--producer-property"),
    }
    sent = produce_lines(bootstrap_server, topic, partition, reader, config, sync, sys.stdin)
    if sent.errors:
        raise click.ClickException(f"{sent.errors} record(s) failed: {sent.first_error}")


class DeliveryReport:
    """Counts acknowledged and failed records (delivery callbacks run in flush/poll)."""

    def __init__(self) -> None:
        self.acked = 0
        self.errors = 0
        self.first_error: Any = None

    def __call__(self, err: Any, _msg: Any) -> None:
        if err is None:
            self.acked += 1
            return
        self.errors += 1
        self.first_error = self.first_error or err


def produce_lines(
    bootstrap: str,
    topic: str,
    partition: int | None,
    reader: LineReader,
    config: dict[str, str],
    sync: bool,
    lines: IO[str],
) -> DeliveryReport:
    errors = client.ErrorSink()
    producer = client.producer(bootstrap, {**config, "error_cb": errors})
    existing = client.topic_partitions(producer, topic)
    if partition is not None and partition not in existing:
        raise click.ClickException(f"Topic '{topic}' has no partition {partition}")
    report = DeliveryReport()
    where = {} if partition is None else {"partition": partition}
    for line in lines:
        key, value, headers = reader.read(line.rstrip("\r\n"))
        while True:
            try:
                producer.produce(
                    topic, value=value, key=key, headers=headers, on_delivery=report, **where
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
                errors.check()
        producer.flush() if sync else producer.poll(0)
        errors.check()
    while producer.flush(0.5):
        errors.check()
    return report


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
