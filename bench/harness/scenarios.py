"""The scenario groups and the plan that runs them: every group is a list of steps, each
step runs once per target (our broker, then each peer) so the figures sit side by side.

Groups: limits, ceiling (the client against a null sink), produce, consume (from the page
cache), lag (from offset 0 of a big topic, page cache dropped), latency (at 10/50/80 % of
the measured maximum), partitions (1,000), connections (1,000), startup, cluster (acks=all
on 3 brokers against acks=1 on one) and failover (the leader SIGKILLed 20 times); the last
two are in cluster.py."""

from __future__ import annotations

import math
import os
import shutil
import socket
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import cluster, cost, limits, targets, wire
from bench.harness.clients import Client, Latency, Run
from bench.harness.e2e import E2eLatency, Measured
from bench.harness.nullsink import NullSink, RecordSource
from bench.harness.progress import Progress
from bench.harness.targets import Target
from kafkars.broker import Broker
from kafkars.testing.reference_kafka import ReferenceKafka

GROUPS = (
    "limits",
    "ceiling",
    "produce",
    "consume",
    "lag",
    "latency",
    "partitions",
    "connections",
    "startup",
    "cluster",
    "failover",
)
QUICK_GROUPS = ("limits", "ceiling", "produce", "consume", "lag", "latency")
LOADS = (0.1, 0.5, 0.8)
# Latency runs linger 1 ms: records still batch at high rates (as in the throughput runs,
# which linger 5 ms), and the wait adds at most 1 ms to what the broker takes.
LATENCY_LINGER_MS = 1
# One request per record (linger.ms=0 at a rate where nothing is in flight to batch behind):
# the broker's per-request cost rather than its bytes.
UNBATCHED_RATE = 10_000
# The file descriptors a partition holds open in kafkars: its active .log (indexes are
# mapped and keep none).
FDS_PER_PARTITION = 1


@dataclass(frozen=True)
class Case:
    """One produce configuration."""

    acks: int
    size: int
    partitions: int
    codec: str

    @property
    def label(self) -> str:
        return f"acks={self.acks:<2} {size_label(self.size):>6} {self.partitions}p {self.codec}"


def size_label(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


BASELINE = Case(1, 100, 1, "none")  # the latency scenario's configuration, and its maximum


@dataclass
class Settings:
    quick: bool
    groups: tuple[str, ...]
    cases: list[Case]
    consume_cases: list[Case]
    bytes_per_run: int
    max_records: int
    limit_bytes: int
    lag_bytes: int
    latency_seconds: float
    connections: int
    many_partitions: int
    startup_partitions: list[int]
    recovery_flushed_bytes: int
    cluster_bytes: int
    failover_kills: int
    failover_terms: int
    # Runs of each produce, consume and latency step; the median one is reported.
    repeat: int = 1
    # Stop (SIGSTOP) the other brokers this run started while one broker's step runs.
    pause_others: bool = True

    def records(self, size: int) -> int:
        return max(1000, min(self.max_records, self.bytes_per_run // size))

    def scale_to(self, bytes_per_run: int) -> None:
        """Runs of `bytes_per_run` (--mb-per-run), the big topics at most twice that."""
        self.bytes_per_run = bytes_per_run
        self.max_records = max(1000, bytes_per_run // 100)
        self.lag_bytes = min(self.lag_bytes, 2 * bytes_per_run)
        self.cluster_bytes = min(self.cluster_bytes, 2 * bytes_per_run)
        self.limit_bytes = min(self.limit_bytes, 2 * bytes_per_run)


def settings(quick: bool, groups: tuple[str, ...], startup_partitions: list[int]) -> Settings:
    sizes = (100, 1024, 65536)
    if quick:
        cases = [
            BASELINE,
            Case(0, 100, 1, "none"),
            Case(-1, 100, 1, "none"),
            Case(1, 65536, 1, "none"),
            Case(1, 1024, 8, "none"),
            Case(1, 1024, 1, "lz4"),
        ]
    else:
        cases = [Case(a, s, 1, "none") for a in (0, 1, -1) for s in sizes]
        cases += [Case(1, s, 8, "none") for s in sizes]
        cases += [Case(1, s, 1, c) for c in ("lz4", "zstd") for s in sizes]
    consume = [c for c in cases if c.acks == 1 and c.codec == "none"]
    return Settings(
        quick=quick,
        groups=groups,
        cases=cases,
        consume_cases=consume,
        # About a second a run (quick) or a few (full) at this machine's rates.
        bytes_per_run=300_000_000 if quick else 1_500_000_000,
        max_records=3_000_000 if quick else 15_000_000,
        limit_bytes=(512 if quick else 2048) * 2**20,
        lag_bytes=(256 if quick else 2048) * 2**20,
        latency_seconds=3.0 if quick else 10.0,
        connections=1000,
        many_partitions=1000,
        startup_partitions=startup_partitions,
        recovery_flushed_bytes=(128 if quick else 512) * 2**20,
        cluster_bytes=(256 if quick else 2048) * 2**20,
        failover_kills=2 if quick else 20,
        failover_terms=1 if quick else 5,
    )


@dataclass
class State:
    """What one target's steps hand each other, and its share of the results."""

    target: Target
    results: dict[str, Any]
    produced: dict[Case, tuple[str, int]] = field(default_factory=dict)
    max_rate: float | None = None
    sampler: cost.RssSampler | None = None


Step = tuple[str, Callable[[], None]]


class Bench:
    def __init__(
        self,
        cfg: Settings,
        client: Client,
        targets_: list[Target],
        results: dict[str, Any],
        progress_total: Callable[[int], Progress],
        latency_client: E2eLatency | None = None,
    ) -> None:
        self.cfg = cfg
        self.client = client
        self.latency_client = latency_client
        self.results = results
        self.run_id = uuid.uuid4().hex[:6]
        self.states = [State(t, results["targets"].setdefault(t.name, {})) for t in targets_]
        self._each_calls = 0
        self.limits: dict[str, Any] = results.setdefault("limits", {})
        self.ceiling: dict[str, Any] = results.setdefault("ceiling", {})
        self._progress_total = progress_total
        self.progress: Progress | None = None
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-harness-"))
        # Run at the end whatever happened (clusters a group started).
        self.cleanups: list[Callable[[], None]] = []

    # --- the plan --------------------------------------------------------------------

    def plan(self) -> list[Step]:
        g = self.cfg.groups
        steps: list[Step] = []
        if "limits" in g:
            steps += [
                ("limits: socket write→read", self.limit_socket),
                ("limits: file write → page cache", self.limit_file_write),
                ("limits: sendfile from page cache", self.limit_sendfile),
                ("limits: sendfile from disk (caches dropped)", self.limit_sendfile_cold),
            ]
        if "ceiling" in g:
            for size, codec in sorted({(c.size, c.codec) for c in self.cfg.cases}):
                steps.append(
                    (
                        f"client ceiling: {size_label(size)} {codec} → null sink",
                        _bind(self.client_ceiling, size, codec),
                    )
                )
            if "consume" in g:
                for size in sorted({c.size for c in self.cfg.consume_cases}):
                    steps.append(
                        (
                            f"client ceiling: consume {size_label(size)} ← record source",
                            _bind(self.client_consume_ceiling, size),
                        )
                    )
        for st in self.states:
            steps.append((f"{st.target.name}: idle", _bind(self.idle, st)))
        n = self.cfg.repeat
        runs = [f" [{i + 1}/{n}]" if n > 1 else "" for i in range(n)]
        if "produce" in g:
            for case in self.cfg.cases:
                for run in runs:
                    steps += self._each(f"produce {case.label}{run}", self.produce, case)
        if "consume" in g:
            for case in self.cfg.consume_cases:
                if "produce" in g:
                    for i, run in enumerate(runs):
                        last = i == n - 1
                        steps += self._each(f"consume {case.label}{run}", self.consume, case, last)
        if "lag" in g:
            steps += self._each("lag: fill a big topic", self.lag_fill)
            steps += self._each("lag: consume from offset 0", self.lag_consume)
        if "latency" in g:
            steps += self._each("latency: maximum rate", self.latency_max)
            for load in LOADS:
                for run in runs:
                    label = f"latency at {load:.0%} of maximum{run}"
                    steps += self._each(label, self.latency, load)
            for run in runs:
                label = f"latency at {UNBATCHED_RATE:,}/s unbatched{run}"
                steps += self._each(label, self.latency, None)
        if "partitions" in g:
            steps += self._each(
                f"produce to {self.cfg.many_partitions:,} partitions", self.many_partitions
            )
        if "connections" in g:
            steps += self._each(f"{self.cfg.connections:,} connections", self.connections)
        if "startup" in g:
            for n in self.cfg.startup_partitions:
                steps.append((f"start-up with {n:,} partitions", _bind(self.startup, n)))
            steps.append(("start-up after SIGKILL by unflushed bytes", self.recovery))
        if "cluster" in g:
            own = next(
                (st.target.own for st in self.states if isinstance(st.target.own, Broker)), None
            )
            steps += cluster.ClusterThroughput(
                self.client,
                max(1000, self.cfg.cluster_bytes // cluster.THROUGHPUT_SIZE),
                own,
                self.results,
                self.note,
                self.cleanups,
            ).steps()
        if "failover" in g:
            steps += cluster.Failover(
                self.cfg.failover_kills,
                self.cfg.failover_terms,
                self.results,
                self.note,
                self.cleanups,
            ).steps()
        for st in self.states:
            steps.append((f"{st.target.name}: summary", _bind(self.summary, st)))
        return steps

    def _each(self, label: str, fn: Callable[..., None], *args: Any) -> list[Step]:
        # Every other step the order of the brokers turns round, so neither always runs
        # right after the other's step (and the writeback and deletions it leaves).
        self._each_calls += 1
        states = self.states if self._each_calls % 2 else list(reversed(self.states))
        return [(f"{label} ({st.target.name})", _bind(self._alone, st, fn, *args)) for st in states]

    def _alone(self, st: State, fn: Callable[..., None], *args: Any) -> None:
        """`fn(st, *args)` with the other brokers this run started stopped meanwhile: an
        idle JVM still collects and compiles after its own step (up to 1.5 CPU seconds
        during a 1.5 GB produce step of the other broker, on 2 CPUs), which would be
        charged to whichever broker runs next. Brokers measured by address are left alone."""
        others = [
            s.target.pid
            for s in self.states
            if s is not st and s.target.own is not None and s.target.pid is not None
        ]
        with cost.paused(others if self.cfg.pause_others else []):
            fn(st, *args)

    def run(self) -> None:
        try:
            self._run()
        finally:
            for cleanup in self.cleanups:
                try:
                    cleanup()
                except Exception as e:
                    self.note(f"cleanup failed: {type(e).__name__}: {e}")
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _run(self) -> None:
        steps = self.plan()
        with self._progress_total(len(steps)) as progress:
            self.progress = progress
            for label, fn in steps:
                progress.step(label)
                try:
                    # Dirty pages an earlier step left (deleted topics are removed later)
                    # are written back now, not during this step's measurement.
                    os.sync()
                    fn()
                except KeyboardInterrupt:
                    raise
                except Exception as e:
                    progress.note(f"   {label}: failed: {type(e).__name__}: {e}")
                    self.results["errors"].append(
                        {
                            "step": label,
                            "error": f"{type(e).__name__}: {e}",
                            "traceback": traceback.format_exc(),
                        }
                    )
                progress.finish_step()
        for st in self.states:
            if st.sampler is not None:
                st.sampler.__exit__(None, None, None)

    def note(self, text: str) -> None:
        self.results["notes"].append(text)
        if self.progress is not None:
            self.progress.note(f"   note: {text}")

    # --- limits ------------------------------------------------------------------------

    def limit_socket(self) -> None:
        self.limits["socket_write_MBps"] = limits.socket_write(self.cfg.limit_bytes)

    def limit_file_write(self) -> None:
        # As much as one produce run writes, into a new file in the broker's file system.
        path = self.workdir / "file-write.bin"
        self.limits["file_write_MBps"] = limits.file_write(path, self.cfg.bytes_per_run)
        self.limits["socket_to_file_MBps"] = limits.socket_to_file(path, self.cfg.bytes_per_run)
        # The run's start recorded what was done about host memory (hostmem.steady).
        if self.limits.get("host_memory_steady"):
            self.note(f"host memory {self.limits['host_memory']}")
        elif self.limits.get("free_page_reporting"):
            self.note(
                "this virtual machine hands free memory back to its host (virtio-balloon "
                "free page reporting) and it was left so: page cache taken from memory "
                "that was free is faulted in anew by the host, so writing new data runs at "
                "the file write limit, not at memory speed, for whichever broker's step "
                "draws it; produce is also shown as a share of it"
            )

    def _limit_file(self) -> Path:
        path = self.workdir / "sendfile.bin"
        if not path.exists():
            limits.make_file(path, self.cfg.limit_bytes // 2)
        return path

    def limit_sendfile(self) -> None:
        path = self._limit_file()
        limits.sendfile(path)  # a first pass: the whole file is in the page cache after it
        self.limits["sendfile_MBps"] = limits.sendfile(path, passes=2)

    def limit_sendfile_cold(self) -> None:
        path = self._limit_file()
        why_not = limits.drop_caches()
        if why_not:
            self.limits["drop_caches"] = why_not
            self.note(f"{why_not}: no from-disk figures (lag reads from the page cache)")
            return
        self.limits["drop_caches"] = "allowed"
        self.limits["sendfile_cold_MBps"] = limits.sendfile(path)

    # --- the client's ceiling ------------------------------------------------------------

    def client_ceiling(self, size: int, codec: str) -> None:
        records = self.cfg.records(size)
        with NullSink() as sink:
            run = self.client.produce(
                sink.bootstrap, "null", records=records, size=size, acks=0, codec=codec, partition=0
            )
        self.ceiling[f"{size} {codec}"] = _run_dict(run)

    def client_consume_ceiling(self, size: int) -> None:
        records = self.cfg.records(size)
        with RecordSource(size) as source:
            run = self.client.consume(source.bootstrap, "source", partitions=[0], records=records)
        self.ceiling[f"consume {size}"] = _run_dict(run)

    # --- produce and consume -------------------------------------------------------------

    def idle(self, st: State) -> None:
        pid = st.target.pid
        st.results.update(bootstrap=st.target.bootstrap, pid=pid)
        if pid is None:
            self.note(f"{st.target.name}: its process is not visible here: no RSS or CPU figures")
            return
        time.sleep(1.0)
        st.results["rss_idle_MiB"] = (cost.rss_bytes(pid) or 0) / 2**20
        st.sampler = cost.RssSampler(pid).__enter__()

    def _topic(self, st: State, what: str, partitions: int) -> str:
        name = f"bench-{self.run_id}-{what}"
        targets.create_topic(st.target.bootstrap, name, partitions)
        return name

    def _measured(self, st: State, fn: Callable[[], Run]) -> tuple[Run, dict[str, Any]]:
        """Run `fn`; with it, the broker's CPU seconds spent meanwhile, the other brokers'
        (work an earlier step left them, on the same two CPUs) and the whole machine's."""
        pids = {s.target.name: s.target.pid for s in self.states if s.target.pid}
        before = {name: cost.cpu_seconds(pid) for name, pid in pids.items()}
        busy = cost.machine_busy_seconds()
        run = fn()
        machine = cost.machine_busy_seconds() - busy
        spent = {}
        for name, pid in pids.items():
            after, earlier = cost.cpu_seconds(pid), before[name]
            if earlier is not None and after is not None:
                spent[name] = after - earlier
        cpu = spent.pop(st.target.name, None)
        gb = run.payload_bytes / 1e9
        return run, {
            "cpu_s": cpu,
            "cpu_s_per_GB": cpu / gb if cpu is not None and gb else None,
            "others_cpu_s": sum(spent.values()),
            "machine_cpu_s": machine,
        }

    def produce(self, st: State, case: Case) -> None:
        # A repeated run gets a topic of its own: the previous one may still be kept for
        # the consume steps.
        earlier = sum(r["case"] == case.label for r in st.results.get("produce", []))
        name = f"p{case.partitions}-{case.size}-a{case.acks}-{case.codec}"
        topic = self._topic(st, f"{name}-r{earlier}" if earlier else name, case.partitions)
        records = self.cfg.records(case.size)
        run, costs = self._measured(
            st,
            lambda: self.client.produce(
                st.target.bootstrap,
                topic,
                records=records,
                size=case.size,
                acks=case.acks,
                codec=case.codec,
                partition=0 if case.partitions == 1 else None,
            ),
        )
        row = {"case": case.label, **case.__dict__, **_run_dict(run), **costs}
        row["vs_socket"] = _ratio(run.mb_per_s, self.limits.get("socket_write_MBps"))
        row["vs_file_write"] = _ratio(run.mb_per_s, self.limits.get("file_write_MBps"))
        row["vs_pump"] = _ratio(run.mb_per_s, self.limits.get("socket_to_file_MBps"))
        ceiling = self.ceiling.get(f"{case.size} {case.codec}")
        row["vs_ceiling"] = _ratio(run.mb_per_s, ceiling["MBps"] if ceiling else None)
        st.results.setdefault("produce", []).append(row)
        if case == BASELINE:
            # The median of the runs so far: the latency levels are shares of it.
            rates = [r["records_per_s"] for r in st.results["produce"] if r["case"] == case.label]
            st.max_rate = _median(rates)
        if case in self.cfg.consume_cases and "consume" in self.cfg.groups:
            # A repeated step keeps its last run's topic for the consume steps.
            earlier = st.produced.get(case)
            if earlier is not None:
                targets.delete_topics(st.target, [earlier[0]])
            st.produced[case] = (topic, run.records)
        else:
            targets.delete_topics(st.target, [topic])

    def consume(self, st: State, case: Case, last: bool = True) -> None:
        if case not in st.produced:
            raise RuntimeError("its produce step did not leave a topic")
        topic, records = st.produced[case]
        run, costs = self._measured(
            st,
            lambda: self.client.consume(
                st.target.bootstrap, topic, partitions=list(range(case.partitions)), records=records
            ),
        )
        row = {"case": case.label, **case.__dict__, **_run_dict(run), **costs}
        row["vs_sendfile"] = _ratio(run.mb_per_s, self.limits.get("sendfile_MBps"))
        ceiling = self.ceiling.get(f"consume {case.size}")
        row["vs_ceiling"] = _ratio(run.mb_per_s, ceiling["MBps"] if ceiling else None)
        st.results.setdefault("consume", []).append(row)
        if last:
            del st.produced[case]
            targets.delete_topics(st.target, [topic])

    # --- lag: offset 0 of a big topic ----------------------------------------------------------

    def lag_fill(self, st: State) -> None:
        size = 1024
        topic = self._topic(st, "lag", 1)
        records = self.cfg.lag_bytes // size
        run, costs = self._measured(
            st,
            lambda: self.client.produce(
                st.target.bootstrap,
                topic,
                records=records,
                size=size,
                acks=1,
                codec="none",
                partition=0,
            ),
        )
        st.produced[Case(1, size, 1, "lag")] = (topic, run.records)
        st.results["lag"] = {"fill": {**_run_dict(run), **costs}}

    def lag_consume(self, st: State) -> None:
        key = Case(1, 1024, 1, "lag")
        if key not in st.produced:
            raise RuntimeError("the fill step did not leave a topic")
        topic, records = st.produced.pop(key)
        why_not = limits.drop_caches()
        lag = st.results.setdefault("lag", {})
        lag["page_cache_dropped"] = why_not is None
        if why_not:
            self.note(f"{st.target.name} lag: {why_not}: read from the page cache")
        run, costs = self._measured(
            st,
            lambda: self.client.consume(
                st.target.bootstrap, topic, partitions=[0], records=records
            ),
        )
        lag["consume"] = {**_run_dict(run), **costs}
        limit = self.limits.get("sendfile_cold_MBps") if why_not is None else None
        lag["consume"]["limit"] = "sendfile_cold_MBps" if limit else "sendfile_MBps"
        lag["consume"]["vs_sendfile"] = _ratio(
            run.mb_per_s, limit or self.limits.get("sendfile_MBps")
        )
        targets.delete_topics(st.target, [topic])

    # --- latency -----------------------------------------------------------------------------

    def latency_max(self, st: State) -> None:
        if st.max_rate is None:
            topic = self._topic(st, "latency-max", 1)
            run = self.client.produce(
                st.target.bootstrap,
                topic,
                records=self.cfg.records(BASELINE.size),
                size=BASELINE.size,
                acks=BASELINE.acks,
                codec=BASELINE.codec,
                partition=0,
            )
            st.max_rate = run.records_per_s
            targets.delete_topics(st.target, [topic])
        st.results["latency_max_records_per_s"] = st.max_rate

    def _reference_max(self, st: State) -> float | None:
        """The maximum the load levels are shares of: Apache Kafka's when the run measures
        it (every broker then gets the same offered rates), else the target's own."""
        for other in self.states:
            if isinstance(other.target.own, ReferenceKafka) and other.max_rate:
                return other.max_rate
        return st.max_rate

    def latency(self, st: State, load: float | None) -> None:
        """At `load` × the maximum rate, or (load None) unbatched: a fixed rate with
        linger.ms=0, where every record is a request of its own. The load levels use the
        e2e_latency client when it builds, else the throughput client with a 1 ms linger."""
        base = self._reference_max(st)
        if load is None:
            wanted, linger, level = float(UNBATCHED_RATE), 0, f"{UNBATCHED_RATE:,}/s unbatched"
        elif not base:
            raise RuntimeError("no maximum produce rate to take a share of")
        else:
            wanted, linger, level = load * base, LATENCY_LINGER_MS, f"{load:.0%}"
        topic = self._topic(st, f"latency-{int(load * 100) if load else 'unbatched'}", 1)
        if load is not None and self.latency_client is not None:
            measured = self.latency_client.latency(
                st.target.bootstrap,
                topic,
                rate=wanted,
                seconds=self.cfg.latency_seconds,
                size=BASELINE.size,
            )
            self._latency_row(st, level, load, None, wanted, wanted, measured)
            targets.delete_topics(st.target, [topic])
            return
        rate = wanted
        cap = self.client.max_latency_rate
        if cap is not None and rate > cap:
            self.note(
                f"{st.target.name} latency at {level}: {rate:,.0f} records/s is more than one "
                f"Python client offers; capped at {cap:,.0f}/s"
            )
            rate = cap
        lat = self.client.latency(
            st.target.bootstrap,
            topic,
            rate=rate,
            seconds=self.cfg.latency_seconds,
            size=BASELINE.size,
            linger_ms=linger,
        )
        self._latency_row(st, level, load, linger, rate, wanted, lat)
        targets.delete_topics(st.target, [topic])

    def _latency_row(
        self,
        st: State,
        level: str,
        load: float | None,
        linger: int | None,
        rate: float,
        wanted: float,
        lat: Latency | Measured,
    ) -> None:
        row: dict[str, Any] = {"level": level, "load": load, "linger_ms": linger}
        row["client"] = "e2e_latency" if isinstance(lat, Measured) else self.client.name
        row.update(lat.summary())
        row["capped"] = rate < wanted
        if lat.achieved_per_s < 0.9 * rate:
            self.note(
                f"{st.target.name} latency at {level}: {lat.achieved_per_s:,.0f} of "
                f"{rate:,.0f} records/s offered; the client or this machine's CPUs kept it lower"
            )
        row["cdf"] = lat.cdf()
        if isinstance(lat, Measured):
            row["max_per_100ms"] = lat.out.get("max_per_100ms")
        st.results.setdefault("latency", []).append(row)

    # --- 1,000 partitions and 1,000 connections ------------------------------------------------

    def many_partitions(self, st: State) -> None:
        n = self.cfg.many_partitions
        began = time.perf_counter()
        topic = self._topic(st, f"many-{n}", n)
        created = time.perf_counter() - began
        size = 1024
        run, costs = self._measured(
            st,
            lambda: self.client.produce(
                st.target.bootstrap,
                topic,
                records=self.cfg.records(size),
                size=size,
                acks=1,
                codec="none",
                partition=None,
            ),
        )
        st.results["partitions"] = {
            "partitions": n,
            "size": size,
            "create_s": created,
            **_run_dict(run),
            **costs,
            "vs_socket": _ratio(run.mb_per_s, self.limits.get("socket_write_MBps")),
            "rss_MiB": _rss_mib(st.target.pid),
        }
        targets.delete_topics(st.target, [topic])

    def connections(self, st: State) -> None:
        host, port = st.target.host_port
        n = self.cfg.connections
        out: dict[str, Any] = {"connections": n, "rss_before_MiB": _rss_mib(st.target.pid)}
        socks: list[socket.socket] = []
        pinger = Pinger(socks)
        try:
            began = time.perf_counter()
            for i in range(n):
                s = socket.create_connection((host, port), timeout=10)
                socks.append(s)
                wire.round_trip(s, wire.api_versions_request(i))
                wire.round_trip(s, wire.metadata_request(i))
            out["open_s"] = time.perf_counter() - began
            time.sleep(1.0)
            out["rss_open_MiB"] = _rss_mib(st.target.pid)
            pinger.start()
            case = Case(1, 1024, 1, "none")
            topic = self._topic(st, "connections", 1)
            run, costs = self._measured(
                st,
                lambda: self.client.produce(
                    st.target.bootstrap,
                    topic,
                    records=self.cfg.records(case.size),
                    size=case.size,
                    acks=case.acks,
                    codec=case.codec,
                    partition=0,
                ),
            )
            out["produce"] = {**_run_dict(run), **costs}
            out["produce"]["vs_socket"] = _ratio(run.mb_per_s, self.limits.get("socket_write_MBps"))
            if st.max_rate:
                rate = LOADS[0] * st.max_rate
                if self.client.max_latency_rate is not None:
                    rate = min(rate, self.client.max_latency_rate)
                lat_topic = self._topic(st, "connections-latency", 1)
                lat = self.client.latency(
                    st.target.bootstrap,
                    lat_topic,
                    rate=rate,
                    seconds=self.cfg.latency_seconds / 2,
                    size=BASELINE.size,
                    linger_ms=LATENCY_LINGER_MS,
                )
                out["latency"] = {"load": LOADS[0], **lat.summary()}
                targets.delete_topics(st.target, [lat_topic])
            out["rss_load_MiB"] = _rss_mib(st.target.pid)
            targets.delete_topics(st.target, [topic])
        finally:
            pinger.stop()
            for s in socks:
                s.close()
        out["pings"] = len(pinger.rtts_ms)
        out["ping_p99_ms"] = _pct(pinger.rtts_ms, 0.99)
        out["ping_errors"] = pinger.errors
        st.results["connections"] = out

    # --- start-up ------------------------------------------------------------------------------

    def startup(self, partitions: int) -> None:
        hard = cost.raise_fd_limit()
        needed = FDS_PER_PARTITION * partitions + 500
        measured = partitions
        if needed > hard:
            measured = (hard - 500) // FDS_PER_PARTITION // 1000 * 1000
            self.note(
                f"start-up with {partitions:,} partitions needs ~{needed:,} open files, the hard "
                f"limit here is {hard:,} (ulimit -Hn): measured with {measured:,} instead"
            )

        def fill(bootstrap: str, topic: str, n: int) -> None:
            # About ten records in every partition: each has a segment and index entries.
            self.client.produce(
                bootstrap, topic, records=10 * n, size=100, acks=1, codec="none", partition=None
            )

        result = cost.startup(measured, targets.create_topic, fill)
        result["requested_partitions"] = partitions
        self.results.setdefault("startup", []).append(result)

    def recovery(self) -> None:
        def produce(bootstrap: str, topic: str, size: int) -> None:
            self.client.produce(
                bootstrap, topic, records=size // 1024, size=1024, acks=1, codec="none", partition=0
            )

        flushed = self.cfg.recovery_flushed_bytes
        self.results["recovery"] = cost.recovery(
            flushed, [0, flushed // 32, flushed // 4], targets.create_topic, produce
        )

    # --- per-target summary ------------------------------------------------------------------

    def summary(self, st: State) -> None:
        res = st.results
        if st.sampler is not None:
            st.sampler.__exit__(None, None, None)
            res["rss_peak_MiB"] = st.sampler.peak / 2**20
            st.sampler = None
        # CPU per GB from the runs without compression (compression moves the cost to the
        # client and changes what a "byte" is).
        for key, rows in (("in", res.get("produce", [])), ("out", res.get("consume", []))):
            usable = [r for r in rows if r.get("cpu_s") is not None and r["codec"] == "none"]
            gb = sum(r["payload_bytes"] for r in usable) / 1e9
            if gb:
                res[f"cpu_s_per_GB_{key}"] = sum(r["cpu_s"] for r in usable) / gb
        for st_topic, _ in list(st.produced.values()):
            targets.delete_topics(st.target, [st_topic])
        # Repeated steps: the median run of each stands for it (after the CPU per GB
        # above, which takes every run).
        for key, name, metric in (
            ("produce", "case", "MBps"),
            ("consume", "case", "MBps"),
            ("latency", "level", "p99"),
        ):
            if key in res:
                res[key] = _median_runs(res[key], name, metric)


class Pinger:
    """Low-rate traffic on the idle connections: an ApiVersions round trip on the next one
    every 5 ms (200 requests/s, each connection every few seconds)."""

    def __init__(self, socks: list[socket.socket]) -> None:
        self.socks = socks
        self.rtts_ms: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pinger", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(0.005):
            s = self.socks[i % len(self.socks)]
            i += 1
            began = time.perf_counter()
            try:
                wire.round_trip(s, wire.api_versions_request(i))
                self.rtts_ms.append((time.perf_counter() - began) * 1000)
            except OSError:
                self.errors += 1


def _bind(fn: Callable[..., None], *args: Any) -> Callable[[], None]:
    return lambda: fn(*args)


def _median(values: list[float]) -> float:
    """The middle value; of an even count, the lower of the two middle ones (a run that
    happened, not an average of two)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def _median_runs(rows: list[dict[str, Any]], name: str, metric: str) -> list[dict[str, Any]]:
    """One row per `name`: the run whose `metric` is the median, with every run's `metric`
    in run order as "runs"."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[name], []).append(row)
    out = []
    for runs in groups.values():
        if len(runs) == 1:
            out.append(runs[0])
            continue
        values = [r[metric] for r in runs]
        middle = _median(values)
        row = dict(next(r for r in runs if r[metric] == middle))
        row["runs"] = values
        out.append(row)
    return out


def _run_dict(run: Run) -> dict[str, Any]:
    return {
        "records": run.records,
        "payload_bytes": run.payload_bytes,
        "seconds": run.seconds,
        "records_per_s": run.records_per_s,
        "MBps": run.mb_per_s,
    }


def _ratio(value: float, limit: float | None) -> float | None:
    return value / limit if limit else None


def _rss_mib(pid: int | None) -> float | None:
    rss = cost.rss_bytes(pid) if pid else None
    return rss / 2**20 if rss is not None else None


def _pct(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
