"""Soak (`make soak MINUTES=N`): one kafkars broker process under everything at once for N
minutes, restarted now and then, sampled every few seconds, and checked at the end.

Running together, each on its own thread:

- an idempotent acks=all producer at `--rate` records/s on a 6-partition topic, its
  delivery latency measured per record (librdkafka's own `latency()`);
- a consumer group of two members reading that topic, committing automatically;
- a transactional producer: batches of 20 records on a 2-partition topic, committed
  and aborted in turn;
- admin churn: topics created, described, reconfigured, grown and deleted in a loop,
  groups listed and described (in a child process, see `Soak.churn`);
- broker restarts every `--restart-every` seconds (by default a third of the run),
  SIGTERM (clean, controlled) and SIGKILL in turn, on the same port and data.

A single broker rather than a cluster: on a small machine three brokers and ZooKeeper
would measure the machine, and a single broker keeps every number (RSS, descriptors,
threads) about one process. The cluster's failover has its own tests and bench.

Every `--interval` seconds a row goes to the CSV: the broker's RSS, open descriptors and
threads (/proc), produce and consume throughput, the window's p99 produce latency,
transactions and admin operations done, restarts. At the end:

- nothing the idempotent producer had acknowledged is missing from the topic, and no
  record is there twice;
- every committed transaction's records are readable with read_committed, no aborted
  one's;
- the group caught up with the end of the topic;
- RSS and descriptors do not keep growing: the least-squares slope over the second half
  of each broker lifetime of at least two minutes stays under `--max-rss-slope` MiB/min
  and `--max-fd-slope` descriptors/min (printed either way);

and a plot of the samples (matplotlib PNG) is written beside the CSV and a JSON summary.
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from kafkars.broker import Broker

TOPIC, TXN_TOPIC, GROUP = "soak", "soak-txn", "soak-group"
PARTITIONS, TXN_PARTITIONS, TXN_BATCH = 6, 2, 20
VALUE_SIZE = 200
QUIET: dict[str, Any] = {"log_level": 0, "logger": lambda *a: None}


def proc_status(pid: int) -> tuple[float, int, int]:
    """(RSS in MiB, open descriptors, threads) of `pid`."""
    rss_kib = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kib = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss_kib / 1024, fds, threads


@dataclass
class Window:
    """What the workers did since the last sample (swapped out by the sampler)."""

    acked: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    consumed: int = 0
    produce_errors: int = 0
    txn_commits: int = 0
    txn_aborts: int = 0
    txn_errors: int = 0
    admin_ops: int = 0
    admin_errors: int = 0


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.stop = threading.Event()
        self.stop_producing = threading.Event()
        # Set while the broker stops and starts: no process to sample meanwhile.
        self.restarting = threading.Event()
        self.lock = threading.Lock()
        self.window = Window()
        self.totals = Window()
        # acked[i] is 1 once record i was acknowledged (a bytearray: millions of records).
        self.acked = bytearray()
        self.produced = 0
        self.committed_batches: list[int] = []
        self.aborted_batches: list[int] = []
        self.restarts: list[tuple[float, str]] = []
        self.client_crashes = 0
        self.rows: list[dict[str, Any]] = []
        self.data_dir = Path(tempfile.mkdtemp(prefix="kafkars-soak-"))
        self.broker = Broker(
            process=True,
            log_dir=self.data_dir,
            config={
                "group.initial.rebalance.delay.ms": 0,
                "log.retention.check.interval.ms": 10000,
            },
        )
        self.started = 0.0

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap_servers

    def add(self, **counts: Any) -> None:
        with self.lock:
            for name, value in counts.items():
                if name == "latencies_ms":
                    self.window.latencies_ms.append(value)
                else:
                    setattr(self.window, name, getattr(self.window, name) + value)
                    setattr(self.totals, name, getattr(self.totals, name) + value)

    # -- workers -------------------------------------------------------------------------
    def produce(self) -> None:
        producer = Producer(
            {
                **QUIET,
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                # Long enough to ride out a restart: nothing is given up on.
                "message.timeout.ms": 300000,
            }
        )

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                self.add(produce_errors=1)
                return
            i = int(msg.key())
            self.acked[i] = 1
            self.add(acked=1, latencies_ms=msg.latency() * 1000)

        pad = b"x" * VALUE_SIZE
        step = 0.02
        per_step = max(1, round(self.args.rate * step))
        next_at = time.monotonic()
        while not self.stop_producing.is_set():
            for _ in range(per_step):
                i = self.produced
                self.acked.append(0)
                while True:
                    try:
                        producer.produce(
                            TOPIC,
                            key=b"%d" % i,
                            value=pad,
                            partition=i % PARTITIONS,
                            on_delivery=delivered,
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                self.produced += 1
            producer.poll(0)
            next_at += step
            self.stop_producing.wait(max(0.0, next_at - time.monotonic()))
        remaining = producer.flush(120)
        if remaining:
            print(f"  {remaining} records still undelivered after 120 s")

    def consume(self, member: int) -> None:
        consumer = Consumer(
            {
                **QUIET,
                "bootstrap.servers": self.bootstrap,
                "group.id": GROUP,
                "client.id": f"soak-member-{member}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 1000,
                "session.timeout.ms": 10000,
            }
        )
        consumer.subscribe([TOPIC])
        try:
            while not self.stop.is_set():
                messages = consumer.consume(500, 0.5)
                ok = sum(1 for m in messages if m.error() is None)
                if ok:
                    self.add(consumed=ok)
        finally:
            consumer.close()

    def transact(self) -> None:
        batch = 0
        while not self.stop.is_set():
            producer = Producer(
                {
                    **QUIET,
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": "soak-txn",
                    "transaction.timeout.ms": 60000,
                }
            )
            try:
                producer.init_transactions(60)
            except KafkaException:
                self.add(txn_errors=1)
                self.stop.wait(1)
                continue
            while not self.stop.is_set():
                batch += 1
                commit = batch % 2 == 0
                try:
                    producer.begin_transaction()
                    for j in range(TXN_BATCH):
                        producer.produce(
                            TXN_TOPIC, value=b"%d-%d" % (batch, j), partition=j % TXN_PARTITIONS
                        )
                    if commit:
                        producer.commit_transaction(60)
                        self.committed_batches.append(batch)
                        self.add(txn_commits=1)
                    else:
                        producer.abort_transaction(60)
                        self.aborted_batches.append(batch)
                        self.add(txn_aborts=1)
                except KafkaException as e:
                    # The batch's outcome is unknown (a restart came between): neither
                    # list claims it.
                    self.add(txn_errors=1)
                    error = e.args[0]
                    if error.txn_requires_abort():
                        try:
                            producer.abort_transaction(60)
                        except KafkaException:
                            break
                    elif not error.retriable():
                        break
                self.stop.wait(0.2)

    def churn(self) -> None:
        """Runs the admin churn in a child process, started again if it dies: librdkafka's
        admin client can abort the process on an assertion (enq_once refcnt) when a
        broker is killed under its requests; that is the client's, not the broker's."""
        context = multiprocessing.get_context("spawn")
        ops, errors = context.Value("q", 0), context.Value("q", 0)
        stop = context.Event()
        seen = (0, 0)
        child = None
        while True:
            if child is None or not child.is_alive():
                if child is not None and child.exitcode:
                    self.client_crashes += 1
                child = context.Process(
                    target=churn_loop, args=(self.bootstrap, stop, ops, errors), daemon=True
                )
                child.start()
            now = (ops.value, errors.value)
            self.add(admin_ops=now[0] - seen[0], admin_errors=now[1] - seen[1])
            seen = now
            if self.stop.wait(1):
                break
        stop.set()
        child.join(30)

    def restart_loop(self) -> None:
        kill = False
        while not self.stop_producing.wait(self.args.restart_every):
            kind = "SIGKILL" if kill else "SIGTERM"
            at = time.monotonic() - self.started
            self.restarting.set()
            if kill:
                self.broker.kill()
            else:
                self.broker.stop(remove=False)
            self.broker.start()
            self.restarting.clear()
            self.restarts.append((at, kind))
            down = time.monotonic() - self.started - at
            print(f"  {at:6.0f} s  broker restarted ({kind}), down {down:.1f} s")
            kill = not kill

    # -- sampling ------------------------------------------------------------------------
    def sample(self, writer: Any, f: Any) -> None:
        last = time.monotonic()
        while not self.stop.wait(self.args.interval):
            now = time.monotonic()
            with self.lock:
                window, self.window = self.window, Window()
            child = None if self.restarting.is_set() else self.broker._child
            try:
                rss, fds, threads = proc_status(child.pid) if child else (np.nan, np.nan, np.nan)
            except OSError:  # the broker is restarting
                rss, fds, threads = np.nan, np.nan, np.nan
            dt = now - last
            last = now
            row = {
                "t_s": round(now - self.started, 1),
                "pid": child.pid if child else 0,
                "rss_mib": round(rss, 1),
                "fds": fds,
                "threads": threads,
                "produce_rps": round(window.acked / dt, 1),
                "consume_rps": round(window.consumed / dt, 1),
                "p99_ms": round(float(np.percentile(window.latencies_ms, 99)), 2)
                if window.latencies_ms
                else np.nan,
                "txn_commits": window.txn_commits,
                "txn_aborts": window.txn_aborts,
                "admin_ops": window.admin_ops,
                "errors": window.produce_errors + window.txn_errors + window.admin_errors,
                "restarts": len(self.restarts),
            }
            self.rows.append(row)
            writer.writerow(row)
            f.flush()

    # -- the run -------------------------------------------------------------------------
    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        self.broker.start()
        admin = AdminClient({**QUIET, "bootstrap.servers": self.bootstrap})
        for topic, partitions in ((TOPIC, PARTITIONS), (TXN_TOPIC, TXN_PARTITIONS)):
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
        self.started = time.monotonic()
        csv_path = self.out / "soak.csv"
        columns = [
            "t_s", "pid", "rss_mib", "fds", "threads", "produce_rps", "consume_rps", "p99_ms",
            "txn_commits", "txn_aborts", "admin_ops", "errors", "restarts",
        ]  # fmt: skip
        print(f"soak: {self.args.minutes} min against {self.bootstrap}, samples in {csv_path}")
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            workers = [
                threading.Thread(target=self.produce, name="produce"),
                threading.Thread(target=self.consume, args=(0,), name="member-0"),
                threading.Thread(target=self.consume, args=(1,), name="member-1"),
                threading.Thread(target=self.transact, name="transactions"),
                threading.Thread(target=self.churn, name="admin-churn"),
                threading.Thread(target=self.restart_loop, name="restarts"),
                threading.Thread(target=self.sample, args=(writer, f), name="sampler"),
            ]
            for w in workers:
                w.start()
            deadline = self.started + self.args.minutes * 60
            while time.monotonic() < deadline:
                time.sleep(min(30.0, max(0.0, deadline - time.monotonic())))
                if self.rows:
                    r = self.rows[-1]
                    print(
                        f"  {r['t_s']:6.0f} s  rss {r['rss_mib']} MiB  fds {r['fds']}  "
                        f"threads {r['threads']}  {r['produce_rps']} rec/s  p99 {r['p99_ms']} ms"
                    )
            # The producer drains first, so the group can catch up with everything.
            self.stop_producing.set()
            workers[0].join()
            caught_up = self.wait_for_group(120)
            self.stop.set()
            for w in workers[1:]:
                w.join(180)
        try:
            summary = self.check(caught_up)
        finally:
            self.broker.stop(remove=False)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.plot(summary)
        (self.out / "soak.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(json.dumps(summary, indent=2))
        return 0 if summary["ok"] else 1

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        c = Consumer({**QUIET, "bootstrap.servers": self.bootstrap, "group.id": "soak-check"})
        try:
            return {
                p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(partitions)
            }
        finally:
            c.close()

    def wait_for_group(self, timeout: float) -> bool:
        """Whether the group's committed offsets reach the end of the topic."""
        ends = self.end_offsets(TOPIC, PARTITIONS)
        c = Consumer({**QUIET, "bootstrap.servers": self.bootstrap, "group.id": GROUP})
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                committed = c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], 30)
                if all(tp.offset >= ends[tp.partition] for tp in committed):
                    return True
                time.sleep(1)
            return False
        finally:
            c.close()

    def read_all(self, topic: str, partitions: int, isolation: str) -> list[Any]:
        ends = self.end_offsets(topic, partitions)
        c = Consumer(
            {
                **QUIET,
                "bootstrap.servers": self.bootstrap,
                "group.id": f"soak-read-{uuid.uuid4().hex[:6]}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
            }
        )
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[Any] = []
        done: set[int] = {p for p, end in ends.items() if end == 0}
        # Done when every partition reached its end, or (read_committed: control records
        # may end the log) nothing came for five seconds.
        idle = 0
        while len(done) < partitions and idle < 5:
            messages = [m for m in c.consume(10000, 1.0) if m.error() is None]
            idle = 0 if messages else idle + 1
            for m in messages:
                out.append(m)
                if m.offset() + 1 >= ends[m.partition()]:
                    done.add(m.partition())
        c.close()
        return out

    def check(self, caught_up: bool) -> dict[str, Any]:
        acked = np.frombuffer(bytes(self.acked), dtype=np.uint8)
        counts = np.zeros(len(acked), dtype=np.uint32)
        for m in self.read_all(TOPIC, PARTITIONS, "read_uncommitted"):
            counts[int(m.key())] += 1
        lost = int(np.sum((acked == 1) & (counts == 0)))
        duplicates = int(np.sum(counts > 1))
        seen: dict[int, int] = {}
        for m in self.read_all(TXN_TOPIC, TXN_PARTITIONS, "read_committed"):
            b = int(m.value().split(b"-")[0])
            seen[b] = seen.get(b, 0) + 1
        txn_missing = sum(1 for b in self.committed_batches if seen.get(b, 0) != TXN_BATCH)
        txn_aborted_visible = sum(1 for b in self.aborted_batches if b in seen)
        slopes = lifetimes(self.rows, self.restarts)
        rss_ok = all(s["rss_mib_per_min"] <= self.args.max_rss_slope for s in slopes if s["judged"])
        fd_ok = all(s["fds_per_min"] <= self.args.max_fd_slope for s in slopes if s["judged"])
        latencies = [r["p99_ms"] for r in self.rows if not np.isnan(r["p99_ms"])]
        rates = [r["produce_rps"] for r in self.rows]
        t = self.totals
        summary = {
            "minutes": self.args.minutes,
            "rate_target": self.args.rate,
            "produced": self.produced,
            "acknowledged": int(acked.sum()),
            "produce_errors": t.produce_errors,
            "lost": lost,
            "duplicates": duplicates,
            "group_caught_up": caught_up,
            "consumed_by_group": t.consumed,
            "txn_committed": len(self.committed_batches),
            "txn_aborted": len(self.aborted_batches),
            "txn_unknown_outcome": t.txn_errors,
            "txn_committed_missing": txn_missing,
            "txn_aborted_visible": txn_aborted_visible,
            "admin_ops": t.admin_ops,
            "admin_errors": t.admin_errors,
            "admin_client_crashes": self.client_crashes,
            "restarts": [{"t_s": round(a, 1), "kind": k} for a, k in self.restarts],
            "produce_rps_median": float(np.median(rates)) if rates else 0.0,
            "p99_ms_median_of_windows": float(np.median(latencies)) if latencies else None,
            "p99_ms_worst_window": float(max(latencies)) if latencies else None,
            "lifetimes": slopes,
            "max_rss_slope_mib_per_min": self.args.max_rss_slope,
            "max_fd_slope_per_min": self.args.max_fd_slope,
        }
        summary["ok"] = (
            lost == 0
            and duplicates == 0
            and caught_up
            and txn_missing == 0
            and txn_aborted_visible == 0
            and rss_ok
            and fd_ok
        )
        return summary

    def plot(self, summary: dict[str, Any]) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        t = np.array([r["t_s"] for r in self.rows]) / 60
        panels = [
            ("RSS (MiB)", [("rss_mib", "RSS")]),
            ("count", [("fds", "open descriptors"), ("threads", "threads")]),
            (
                "records/s",
                [("produce_rps", "produced (acked)"), ("consume_rps", "consumed (group)")],
            ),
            ("p99 produce latency (ms)", [("p99_ms", "p99 per window")]),
        ]
        fig, axes = plt.subplots(len(panels), 1, figsize=(10, 10), sharex=True)
        for ax, (label, series) in zip(axes, panels, strict=True):
            for key, name in series:
                ax.plot(t, [r[key] for r in self.rows], label=name, lw=1)
            for at, kind in self.restarts:
                ax.axvline(at / 60, color="red" if kind == "SIGKILL" else "grey", ls="--", lw=0.8)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
        axes[-1].set_yscale("log")
        axes[-1].set_xlabel("minutes (dashed: restarts; grey SIGTERM, red SIGKILL)")
        verdict = "passed" if summary["ok"] else "FAILED"
        fig.suptitle(
            f"kafkars soak, {summary['minutes']} min: {summary['acknowledged']:,} acked, "
            f"{summary['lost']} lost, {summary['duplicates']} duplicates, "
            f"{summary['txn_committed']} txns committed; {verdict}"
        )
        fig.tight_layout()
        fig.savefig(self.out / "soak.png", dpi=90)


def churn_loop(bootstrap: str, stop: Any, ops: Any, errors: Any) -> None:
    """Admin churn until `stop`: new topics created, described, reconfigured, grown and
    deleted, groups listed and described; `ops` and `errors` count what happened."""
    admin = AdminClient({**QUIET, "bootstrap.servers": bootstrap})
    n = 0
    while not stop.is_set():
        n += 1
        for run in churn_steps(admin, f"churn-{os.getpid()}-{n}"):
            try:
                result = run()
                if isinstance(result, dict):
                    for future in result.values():
                        future.result(15)
                with ops.get_lock():
                    ops.value += 1
            except Exception:
                with errors.get_lock():
                    errors.value += 1
            if stop.wait(0.3):
                return


def churn_steps(admin: AdminClient, name: str) -> list[Callable[[], Any]]:
    """One round of admin churn on a new topic `name`, which it deletes in the end."""
    alter = ConfigResource(
        "topic",
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    return [
        lambda: admin.create_topics([NewTopic(name, 2, 1)])[name].result(15),
        lambda: admin.describe_configs([ConfigResource("topic", name)]),
        lambda: admin.incremental_alter_configs([alter]),
        lambda: admin.create_partitions([NewPartitions(name, 3)])[name].result(15),
        lambda: admin.list_consumer_groups().result(15),
        lambda: admin.describe_consumer_groups([GROUP])[GROUP].result(15),
        lambda: admin.delete_topics([name])[name].result(15),
    ]


def lifetimes(
    rows: list[dict[str, Any]], restarts: list[tuple[float, str]]
) -> list[dict[str, Any]]:
    """Per broker process (rows grouped by pid): RSS and descriptor slopes (least squares,
    per minute) over the second half of its samples; judged when it lived two minutes."""
    out = []
    pids = list(dict.fromkeys(r["pid"] for r in rows if r["pid"] and not np.isnan(r["rss_mib"])))
    for pid in pids:
        own = [r for r in rows if r["pid"] == pid and not np.isnan(r["fds"])]
        if len(own) < 4:
            continue
        span_s = own[-1]["t_s"] - own[0]["t_s"]
        half = own[len(own) // 2 :]
        t = np.array([r["t_s"] for r in half]) / 60
        rss_slope = (
            float(np.polyfit(t, [r["rss_mib"] for r in half], 1)[0]) if len(half) > 1 else 0.0
        )
        fd_slope = float(np.polyfit(t, [r["fds"] for r in half], 1)[0]) if len(half) > 1 else 0.0
        out.append(
            {
                "pid": pid,
                "from_s": own[0]["t_s"],
                "to_s": own[-1]["t_s"],
                "rss_mib_first": own[0]["rss_mib"],
                "rss_mib_last": own[-1]["rss_mib"],
                "rss_mib_max": max(r["rss_mib"] for r in own),
                "fds_first": own[0]["fds"],
                "fds_last": own[-1]["fds"],
                "threads_last": own[-1]["threads"],
                "rss_mib_per_min": round(rss_slope, 3),
                "fds_per_min": round(fd_slope, 3),
                "judged": span_s >= 120,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=int, default=1000, help="idempotent records/s")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    parser.add_argument(
        "--restart-every", type=float, default=None, help="seconds (default: a quarter of the run)"
    )
    parser.add_argument("--max-rss-slope", type=float, default=2.0, help="MiB/min")
    parser.add_argument("--max-fd-slope", type=float, default=2.0, help="descriptors/min")
    parser.add_argument("--out", default="bench/results", help="CSV, PNG and JSON go here")
    args = parser.parse_args()
    if args.restart_every is None:
        args.restart_every = max(30.0, args.minutes * 60 / 3)
    raise SystemExit(Soak(args).run())


if __name__ == "__main__":
    main()
