"""`kafkars-perf-test`: Kafka's kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh.

    kafkars-perf-test producer --topic T --num-records 1000000 --record-size 100 \\
        --throughput -1 --producer-props bootstrap.servers=127.0.0.1:9092 acks=1 linger.ms=5
    kafkars-perf-test consumer -b 127.0.0.1:9092 --topic T --messages 1000000

As Kafka's perf tools take them, `--producer-props` (and `--consumer-props`) take any
number of `key=value` after one flag, `bootstrap.servers` among them or from
`-b/--bootstrap-server`; `--producer.config`/`--consumer.config` read a properties file
(the props on the command line win).

The producer prints a progress line every 5 s and a final line in Kafka's format
(records/s, MB/s, average and maximum latency, then the 50th/95th/99th/99.9th
percentile latency); the consumer prints Kafka's CSV-style summary.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import click

from kafkars.tools import client

_REPORT_EVERY_S = 5.0


@click.group(cls=client.ToolGroup)
@client.version_option()
def main() -> None:
    """Producer and consumer throughput tests."""


@dataclass
class Stats:
    """Kafka's ProducerPerformance.Stats: latencies of acknowledged records, per window
    and overall (every record's latency kept for the final percentiles)."""

    start: float = field(default_factory=time.monotonic)
    count: int = 0
    bytes: int = 0
    max_ms: float = 0.0
    total_ms: float = 0.0
    latencies: list[float] = field(default_factory=list)
    window_start: float = field(default_factory=time.monotonic)
    window_count: int = 0
    window_bytes: int = 0
    window_total_ms: float = 0.0
    window_max_ms: float = 0.0
    errors: int = 0

    def record(self, latency_ms: float, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_ms += latency_ms
        self.max_ms = max(self.max_ms, latency_ms)
        self.latencies.append(latency_ms)
        self.window_count += 1
        self.window_bytes += size
        self.window_total_ms += latency_ms
        self.window_max_ms = max(self.window_max_ms, latency_ms)

    def window_line(self) -> str | None:
        now = time.monotonic()
        elapsed = now - self.window_start
        if elapsed < _REPORT_EVERY_S or not self.window_count:
            return None
        line = (
            f"{self.window_count} records sent, {self.window_count / elapsed:.1f} records/sec "
            f"({self.window_bytes / elapsed / 1024 / 1024:.2f} MB/sec), "
            f"{self.window_total_ms / self.window_count:.1f} ms avg latency, "
            f"{self.window_max_ms:.1f} ms max latency."
        )
        self.window_start, self.window_count, self.window_bytes = now, 0, 0
        self.window_total_ms = self.window_max_ms = 0.0
        return line

    def final_line(self) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        ordered = sorted(self.latencies)

        def pct(q: float) -> int:
            return int(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else 0

        avg = self.total_ms / self.count if self.count else 0.0
        return (
            f"{self.count} records sent, {self.count / elapsed:.6f} records/sec "
            f"({self.bytes / elapsed / 1024 / 1024:.2f} MB/sec), {avg:.2f} ms avg latency, "
            f"{self.max_ms:.2f} ms max latency, {pct(0.5)} ms 50th, {pct(0.95)} ms 95th, "
            f"{pct(0.99)} ms 99th, {pct(0.999)} ms 99.9th."
        )


def _client_config(
    bootstrap_server: str | None, config_file: str | None, option: str, props: tuple[str, ...]
) -> tuple[str, dict[str, str]]:
    """The bootstrap servers and the client configs: file, then props, then `-b`."""
    config = {
        **client.read_properties(config_file, option),
        **client.parse_properties(props, option.replace(".config", "-props")),
    }
    bootstrap = bootstrap_server or config.pop("bootstrap.servers", None) or "127.0.0.1:9092"
    config.pop("bootstrap.servers", None)
    return bootstrap, config


@main.command(greedy=["--producer-props"])
@click.option("-b", "--bootstrap-server", help="Default: bootstrap.servers, or 127.0.0.1:9092.")
@click.option("--topic", required=True)
@click.option("--num-records", type=click.IntRange(min=1), required=True)
@click.option("--record-size", type=click.IntRange(min=0), default=100, show_default=True)
@click.option("--throughput", type=int, default=-1, help="Records/s to offer; -1: no limit.")
@click.option("--producer-props", multiple=True, help="key=value producer configs (any number).")
@click.option("--producer.config", "producer_config", help="Producer properties file.")
def producer(
    bootstrap_server: str | None,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: int,
    producer_props: tuple[str, ...],
    producer_config: str | None,
) -> None:
    """Sends records as fast as allowed and reports throughput and latency."""
    bootstrap, config = _client_config(
        bootstrap_server, producer_config, "--producer.config", producer_props
    )
    errors = client.ErrorSink()
    p = client.producer(bootstrap, {**config, "error_cb": errors})
    client.topic_partitions(p, topic)
    # Random bytes as Kafka's tool does (by default), so compression has no easy win.
    payload = os.urandom(record_size)
    stats = Stats()

    def on_delivery(sent_at: float) -> Any:
        def report(err: Any, _msg: Any) -> None:
            if err is not None:
                stats.errors += 1
                return
            stats.record((time.monotonic() - sent_at) * 1000, record_size)

        return report

    for i in range(num_records):
        sent_at = time.monotonic()
        while True:
            try:
                p.produce(topic, value=payload, on_delivery=on_delivery(sent_at))
                break
            except BufferError:
                p.poll(0.01)
                errors.check()
        p.poll(0)
        if (line := stats.window_line()) is not None:
            click.echo(line)
        if throughput > 0:
            ahead = (i + 1) / throughput - (time.monotonic() - stats.start)
            if ahead > 0:
                time.sleep(ahead)
    while p.flush(0.5):
        errors.check()
    click.echo(stats.final_line())
    if stats.errors:
        raise click.ClickException(f"{stats.errors} record(s) failed")


@main.command(greedy=["--consumer-props"])
@click.option("-b", "--bootstrap-server", help="Default: bootstrap.servers, or 127.0.0.1:9092.")
@click.option("--topic", required=True)
@click.option("--messages", type=click.IntRange(min=1), required=True, help="Records to consume.")
@click.option("--group", default=None, help="Default: a new perf-consumer-* group.")
@click.option(
    "--timeout",
    type=click.IntRange(min=1),
    default=10000,
    show_default=True,
    help="ms without records.",
)
@click.option("--consumer-props", multiple=True, help="key=value consumer configs (any number).")
@click.option("--consumer.config", "consumer_config", help="Consumer properties file.")
def consumer(
    bootstrap_server: str | None,
    topic: str,
    messages: int,
    group: str | None,
    timeout: int,
    consumer_props: tuple[str, ...],
    consumer_config: str | None,
) -> None:
    """Consumes from the beginning and reports MB/s and records/s."""
    bootstrap, props = _client_config(
        bootstrap_server, consumer_config, "--consumer.config", consumer_props
    )
    config = {"auto.offset.reset": "earliest", **props}
    c = client.consumer(bootstrap, group or f"perf-consumer-{uuid.uuid4().hex[:8]}", config)
    client.topic_partitions(c, topic)
    start_wall = time.time()
    start = time.monotonic()
    c.subscribe([topic])
    count = size = 0
    first_at: float | None = None
    last = time.monotonic()
    try:
        while count < messages and (time.monotonic() - last) * 1000 < timeout:
            batch = c.consume(num_messages=min(10_000, messages - count), timeout=0.5)
            for m in batch:
                if m.error() is None:
                    count += 1
                    size += len(m.value() or b"") + len(m.key() or b"")
            if batch:
                last = time.monotonic()
                first_at = first_at or last
    finally:
        c.close()
    end = time.monotonic()
    elapsed = max(end - start, 1e-9)
    fetch_elapsed = max(end - (first_at or end), 1e-9)
    mb = size / 1024 / 1024
    click.echo(
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    )
    click.echo(
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(start_wall))}, "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {mb:.4f}, {mb / elapsed:.4f}, {count}, "
        f"{count / elapsed:.4f}, {int(((first_at or end) - start) * 1000)}, "
        f"{int(fetch_elapsed * 1000)}, {mb / fetch_elapsed:.4f}, {count / fetch_elapsed:.4f}"
    )
    if count < messages:
        raise click.ClickException(
            f"only {count} of {messages} records arrived within {timeout} ms"
        )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
