"""The fallback load generator when rdkafka_performance is not built: confluent-kafka
(librdkafka underneath, driven from Python) producers and consumers in several processes,
so one interpreter's GIL does not set the figure; latency from one Python producer and
consumer pair."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.harness.clients import ClientError, Latency, Run

# What one Python producer (a produce() call per record, paced by sleeps) and one consumer
# keep up with on a small machine; a latency run offers no more than this.
PYTHON_LATENCY_MAX_RATE = 20_000.0
WARMUP_S = 0.5


def _produce_worker(
    bootstrap: str,
    topic: str,
    records: int,
    size: int,
    acks: int,
    codec: str,
    partition: int | None,
) -> tuple[float, float, int]:
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "compression.type": codec,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    value = b"x" * size
    delivered = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1

    began = time.time()
    for i in range(records):
        while True:
            try:
                if partition is None:
                    p.produce(topic, value=value, on_delivery=on_delivery)
                else:
                    p.produce(topic, value=value, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.005)
        if i % 10_000 == 0:
            p.poll(0)
    p.flush(300)
    return began, time.time(), delivered


def _consume_worker(
    bootstrap: str, topic: str, partitions: list[int], records: int
) -> tuple[float, float, int, int]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
        }
    )
    want = sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions)
    # The record source has no end (its high watermark is 0): read the records asked for.
    want = want or records
    # From the assignment on (fetches start with it), connecting included: a first batch
    # can hold a whole small topic, so timing from it would measure nothing.
    began = time.time()
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    got = payload = 0
    deadline = time.time() + 600
    while got < want and time.time() < deadline:
        for m in c.consume(num_messages=100_000, timeout=1.0):
            if m.error() is None:
                got += 1
                payload += len(m.value() or b"")
    ended = time.time()
    c.close()
    return began, ended, got, payload


class PythonClients:
    """The Client of clients.py with confluent-kafka in `processes` processes."""

    max_latency_rate: float | None = PYTHON_LATENCY_MAX_RATE

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes or max(2, os.cpu_count() or 2)
        self.name = f"confluent-kafka Python clients ({self.processes} processes)"
        # spawn: the parent holds librdkafka threads, which a fork would copy half-way.
        self._context = multiprocessing.get_context("spawn")

    def produce(
        self,
        bootstrap: str,
        topic: str,
        *,
        records: int,
        size: int,
        acks: int,
        codec: str,
        partition: int | None,
    ) -> Run:
        shares = [records // self.processes] * self.processes
        shares[0] += records - sum(shares)
        with ProcessPoolExecutor(self.processes, mp_context=self._context) as pool:
            futures = [
                pool.submit(_produce_worker, bootstrap, topic, n, size, acks, codec, partition)
                for n in shares
            ]
            results = [f.result() for f in futures]
        delivered = sum(r[2] for r in results)
        if delivered < records:
            raise ClientError(f"{records - delivered} records not delivered")
        seconds = max(r[1] for r in results) - min(r[0] for r in results)
        return Run(delivered, delivered * size, seconds)

    def consume(self, bootstrap: str, topic: str, *, partitions: list[int], records: int) -> Run:
        n = min(self.processes, len(partitions))
        groups = [partitions[i::n] for i in range(n)]
        with ProcessPoolExecutor(n, mp_context=self._context) as pool:
            futures = [
                pool.submit(_consume_worker, bootstrap, topic, g, records // n) for g in groups
            ]
            results = [f.result() for f in futures]
        got = sum(r[2] for r in results)
        if got < records:
            raise ClientError(f"consumed {got} of {records} records")
        seconds = max(r[1] for r in results) - min(r[0] for r in results)
        return Run(got, sum(r[3] for r in results), seconds)

    def latency(
        self, bootstrap: str, topic: str, *, rate: float, seconds: float, size: int, linger_ms: int
    ) -> Latency:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": 1})
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-lat-{uuid.uuid4().hex[:8]}",
                "fetch.wait.max.ms": 100,
                "enable.auto.commit": False,
            }
        )
        c.assign([TopicPartition(topic, 0, 0)])
        # The consumer is connected and fetching once a first record comes back, so start-up
        # does not count as latency.
        p.produce(topic, value=b"warmup", partition=0)
        p.flush(10)
        deadline = time.monotonic() + 30
        while (m := c.poll(0.5)) is None or m.error() is not None:
            if time.monotonic() > deadline:
                raise ClientError("the latency consumer got nothing in 30 s")
        samples: list[float] = []
        stop = time.perf_counter() + seconds
        pad = b" " * max(0, size - 24)

        def consumer_loop() -> None:
            # poll() hands over each record as it arrives; consume() would wait out its
            # timeout to fill a batch and add that to every sample.
            while time.perf_counter() < stop + 2:
                msg = c.poll(0.05)
                if msg is None or msg.error() is not None:
                    continue
                now = time.perf_counter()
                value = msg.value()
                if value and value != b"warmup":
                    samples.append((now - float(value[:24])) * 1000)

        t = threading.Thread(target=consumer_loop)
        t.start()
        sent = 0
        began = time.perf_counter()
        next_send = began
        interval = 1.0 / rate
        while next_send < stop:
            p.produce(topic, value=f"{time.perf_counter():<24.9f}".encode() + pad, partition=0)
            sent += 1
            p.poll(0)
            next_send += interval
            delay = next_send - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        elapsed = time.perf_counter() - began
        p.flush(10)
        t.join()
        c.close()
        return Latency(rate, sent / elapsed, samples[int(rate * WARMUP_S) :])
