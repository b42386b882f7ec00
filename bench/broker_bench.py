"""End-to-end broker figures: produce/consume MB/s with confluent-kafka (librdkafka), the
loopback socket limit measured the same way, idle RSS and embedded start-up time.

    python bench/broker_bench.py [--records 1000000] [--size 100] [--peer HOST:PORT]
                                 [--json bench/results/broker.json]
                                 [--png bench/results/broker.png]

Benchmarks measure; they are not tests. `make bench` runs this after the Criterion and
pytest-benchmark suites.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkars.broker import Broker


def loopback_limit(total_bytes: int, chunk: int = 1 << 20) -> float:
    """MB/s one TCP connection on loopback carries, reader and writer in this process."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received = 0

    def sink() -> None:
        nonlocal received
        conn, _ = server.accept()
        buf = bytearray(chunk)
        # Read to EOF: the writer may send past total_bytes to finish its last chunk.
        while n := conn.recv_into(buf):
            received += n
        conn.close()

    t = threading.Thread(target=sink)
    t.start()
    client = socket.create_connection(("127.0.0.1", port))
    payload = b"x" * chunk
    start = time.perf_counter()
    sent = 0
    while sent < total_bytes:
        client.sendall(payload)
        sent += chunk
    client.shutdown(socket.SHUT_WR)
    t.join()
    elapsed = time.perf_counter() - start
    client.close()
    server.close()
    return received / elapsed / 1e6


def produce(
    bootstrap: str, topic: str, records: int, size: int, client: dict[str, str] | None = None
) -> tuple[float, float]:
    p = Producer(
        {
            **(client or {}),
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "acks": 1,
        }
    )
    value = os.urandom(size)
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=i % 4)
                break
            except BufferError:
                p.poll(0.01)
        if i % 50_000 == 0:
            p.poll(0)
    p.flush(120)
    elapsed = time.perf_counter() - start
    return records / elapsed, records * size / elapsed / 1e6


def consume(
    bootstrap: str, topic: str, records: int, size: int, client: dict[str, str] | None = None
) -> tuple[float, float]:
    c = Consumer(
        {
            **(client or {}),
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(4)])
    got = 0
    start = time.perf_counter()
    while got < records:
        got += len(c.consume(num_messages=100_000, timeout=1.0))
    elapsed = time.perf_counter() - start
    c.close()
    return records / elapsed, records * size / elapsed / 1e6


def latency(bootstrap: str, topic: str, rate: int, seconds: float) -> dict[str, float]:
    """End-to-end latency at a fixed offered load (records/s), in ms."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lat", "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, 0)])
    samples: list[float] = []
    # Warm up: the first record is consumed only once the consumer has connected and is
    # fetching, so start-up time does not count as latency.
    p.produce(topic, value=b"warmup", partition=0)
    p.flush(10)
    while (m := c.poll(1.0)) is None or m.error() is not None:
        pass
    stop = time.perf_counter() + seconds

    def consumer_loop() -> None:
        # poll() hands over each message as soon as it arrives (consume() would wait to
        # fill a batch and add its own delay to every sample).
        while time.perf_counter() < stop + 2:
            m = c.poll(0.05)
            if m is not None and m.error() is None and m.value() != b"warmup":
                sent = float(m.value().decode())
                samples.append((time.perf_counter() - sent) * 1000)

    t = threading.Thread(target=consumer_loop)
    t.start()
    interval = 1.0 / rate
    next_send = time.perf_counter()
    while next_send < stop:
        p.produce(topic, value=repr(time.perf_counter()).encode(), partition=0)
        p.poll(0)
        next_send += interval
        delay = next_send - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    p.flush(10)
    t.join()
    c.close()
    samples.sort()

    def pct(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] if samples else float("nan")

    return {
        "rate": rate,
        "count": len(samples),
        "p50": pct(0.50),
        "p99": pct(0.99),
        "p99.9": pct(0.999),
        "max": samples[-1] if samples else float("nan"),
        "mean": statistics.fmean(samples) if samples else float("nan"),
    }


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def plot(results: dict[str, object], targets: list[str], path: Path) -> None:
    """Throughput beside the loopback limit, and latency percentiles per offered load."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'kafkars-broker[bench]'): no plot")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = ["loopback limit"]
    mbps = [float(results["loopback_MBps"])]  # type: ignore[arg-type]
    for name in targets:
        r = results[name]
        assert isinstance(r, dict)
        names += [f"{name} produce", f"{name} consume"]
        mbps += [r["produce_MBps"], r["consume_MBps"]]
    left.barh(names, mbps, color=["grey"] + ["tab:blue", "tab:orange"] * len(targets))
    left.set_xscale("log")
    left.set_xlim(left=1)
    left.set_xlabel("MB/s (log scale)")
    left.set_title(f"throughput, {results['records']:,} records of {results['size']} B")
    quantiles = ["p50", "p99", "p99.9", "max"]
    width = 0.8 / max(1, 2 * len(targets))
    bar = 0
    for name in targets:
        r = results[name]
        assert isinstance(r, dict)
        for lat in r["latency_ms"]:
            xs = [i + bar * width for i in range(len(quantiles))]
            right.bar(xs, [lat[q] for q in quantiles], width, label=f"{name} @ {lat['rate']}/s")
            bar += 1
    right.set_xticks([i + (bar - 1) * width / 2 for i in range(len(quantiles))], quantiles)
    right.set_yscale("log")
    right.set_ylabel("end-to-end latency, ms (log scale)")
    right.set_title("latency at fixed offered loads")
    right.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--peer", help="bootstrap of another broker to measure the same way")
    ap.add_argument("--json", default="bench/results/broker.json")
    ap.add_argument("--png", default="bench/results/broker.png")
    args = ap.parse_args()

    results: dict[str, object] = {"records": args.records, "size": args.size}
    starts = []
    for _ in range(5):
        t0 = time.perf_counter()
        with Broker():
            starts.append((time.perf_counter() - t0) * 1000)
    results["embedded_start_ms"] = statistics.median(starts)
    results["loopback_MBps"] = loopback_limit(2_000_000_000)

    targets = {"kafkars": None}
    if args.peer:
        targets[f"peer {args.peer}"] = args.peer
    with Broker(process=True, config={"num.partitions": 4}) as broker:
        time.sleep(1)
        results["idle_rss_MiB"] = rss_mib(broker._child.pid)  # type: ignore[union-attr]
        for name, peer in targets.items():
            bootstrap = peer or broker.bootstrap_servers
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            rps, mbps = produce(bootstrap, topic, args.records, args.size)
            crps, cmbps = consume(bootstrap, topic, args.records, args.size)
            lat = [latency(bootstrap, f"lat-{uuid.uuid4().hex[:8]}", r, 5) for r in (1000, 10000)]
            results[name] = {
                "produce_records_per_s": rps,
                "produce_MBps": mbps,
                "consume_records_per_s": crps,
                "consume_MBps": cmbps,
                "latency_ms": lat,
            }
        results["busy_rss_MiB"] = rss_mib(broker._child.pid)  # type: ignore[union-attr]

    print(f"embedded broker start-up (median of 5): {results['embedded_start_ms']:.1f} ms")
    print(f"idle broker RSS: {results['idle_rss_MiB']:.1f} MiB")
    print(f"loopback socket limit (1 connection): {results['loopback_MBps']:.0f} MB/s")
    print(f"{'target':<22}{'produce rec/s':>15}{'MB/s':>9}{'consume rec/s':>15}{'MB/s':>9}")
    for name in targets:
        r = results[name]
        assert isinstance(r, dict)
        print(
            f"{name:<22}{r['produce_records_per_s']:>15,.0f}{r['produce_MBps']:>9.1f}"
            f"{r['consume_records_per_s']:>15,.0f}{r['consume_MBps']:>9.1f}"
        )
        for lat in r["latency_ms"]:
            print(
                f"  e2e latency @ {lat['rate']:>6} rec/s: p50 {lat['p50']:.2f} ms, "
                f"p99 {lat['p99']:.2f} ms, p99.9 {lat['p99.9']:.2f} ms, max {lat['max']:.2f} ms"
            )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")
    plot(results, list(targets), Path(args.png))


if __name__ == "__main__":
    main()
