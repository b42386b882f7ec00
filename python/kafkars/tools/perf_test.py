"""`kafkars-perf-test`: Kafka's kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh.

    kafkars-perf-test producer -b 127.0.0.1:9092 --topic T --num-records 1000000 \\
        --record-size 100 --throughput -1 --producer-props acks=1 --producer-props linger.ms=5
    kafkars-perf-test consumer -b 127.0.0.1:9092 --topic T --messages 1000000

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


@main.command()
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--topic", required=True)
@click.option("--num-records", type=int, required=True)
@click.option("--record-size", type=int, default=100, show_default=True)
@click.option("--throughput", type=int, default=-1, help="Records/s to offer; -1: no limit.")
@click.option("--producer-props", multiple=True, help="key=value producer configs.")
def producer(
    bootstrap_server: str,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: int,
    producer_props: tuple[str, ...],
) -> None:
    """Sends records as fast as allowed and reports throughput and latency."""
    p = client.producer(bootstrap_server, client.parse_properties(producer_props, "props"))
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
        p.poll(0)
        if (line := stats.window_line()) is not None:
            click.echo(line)
        if throughput > 0:
            ahead = (i + 1) / throughput - (time.monotonic() - stats.start)
            if ahead > 0:
                time.sleep(ahead)
    p.flush()
    click.echo(stats.final_line())
    if stats.errors:
        raise click.ClickException(f"{stats.errors} record(s) failed")


@main.command()
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--topic", required=True)
@click.option("--messages", type=int, required=True, help="Records to consume.")
@click.option("--group", default=None, help="Default: a new perf-consumer-* group.")
@click.option("--timeout", type=int, default=10000, show_default=True, help="ms without records.")
@click.option("--consumer-props", multiple=True, help="key=value consumer configs.")
def consumer(
    bootstrap_server: str,
    topic: str,
    messages: int,
    group: str | None,
    timeout: int,
    consumer_props: tuple[str, ...],
) -> None:
    """Consumes from the beginning and reports MB/s and records/s."""
    config = {
        "auto.offset.reset": "earliest",
        **client.parse_properties(consumer_props, "props"),
    }
    c = client.consumer(bootstrap_server, group or f"perf-consumer-{uuid.uuid4().hex[:8]}", config)
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
