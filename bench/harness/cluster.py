"""The cluster groups (issue 15), on ZooKeeper and three local kafkars broker processes of
this checkout (`kafkars.testing.Cluster`):

- `cluster`: produce throughput with acks=all to a topic of replication factor 3 and
  min.insync.replicas=2, beside acks=1 on one broker (the same record size, partitions and
  client, alternating in the same run), as a ratio of it.
- `failover`: a producer (acks=all, idempotent) writes steadily while the partition's
  leader is SIGKILLed (and a few times stopped with SIGTERM, a controlled shutdown); the
  time from the signal to the first record the new leader acknowledges, then the broker
  is restarted and must rejoin the ISR before the next round. At the end every
  acknowledged record must be in the partition exactly once.

A SIGKILLed broker is noticed only when its ZooKeeper session expires, so the SIGKILL
figures are bounded below by `zookeeper.session.timeout.ms`.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import cost
from bench.harness.clients import Client, Run
from kafkars.broker import Broker
from kafkars.testing.cluster import Cluster
from kafkars.testing.zookeeper import ZOOKEEPER_JAR
from kafkars.zk import KafkaZkClient

BROKERS = 3
REPLICATION = 3
MIN_ISR = 2
# As the cluster tests: a SIGKILLed broker's session expires (and the controller acts) after it.
SESSION_TIMEOUT_MS = 6000
CLUSTER_CONFIG: dict[str, Any] = {"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS}
THROUGHPUT_SIZE = 1024
THROUGHPUT_PARTITIONS = (1, 3)
# Each configuration runs this many times, the three alternating; the figure is the median.
REPEATS = 3

FAILOVER_RATE = 1000  # records/s, so an acknowledgement time is known to about 1 ms
FAILOVER_SIZE = 100
# Beyond the session timeout: how long a failover may take before it counts as failed.
FAILOVER_TIMEOUT_S = 60.0
REJOIN_TIMEOUT_S = 60.0
SETTLE_S = 1.0
PRODUCER_CONFIG: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 1,
    # Long enough that no record times out while the partition has no leader.
    "message.timeout.ms": 120_000,
}

Step = tuple[str, Callable[[], None]]


def zookeeper_missing() -> str | None:
    if not ZOOKEEPER_JAR.exists():
        return f"{ZOOKEEPER_JAR} is missing (Debian's zookeeper package: make system-deps)"
    return None


def _quiet(conf: dict[str, Any]) -> dict[str, Any]:
    return {**conf, "log_level": 0, "logger": lambda *a: None}


def create_topic(bootstrap: str, partitions: int, configs: dict[str, str]) -> str:
    name = f"bench-cluster-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_quiet({"bootstrap.servers": bootstrap}))
    futures = admin.create_topics(
        [NewTopic(name, partitions, REPLICATION, config=configs)], operation_timeout=60
    )
    futures[name].result(90)
    return name


def wait_for_topic(cluster: Cluster, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Until every running broker's metadata has the topic with a leader and a full ISR for
    each partition: CreateTopics answers once the controller has it, before the brokers do,
    and a client that asks a broker too early gets UNKNOWN_TOPIC_OR_PARTITION."""
    from kafkars.controller.channel_manager import call_broker

    body = {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
        "allow_auto_topic_creation": False,
    }
    deadline = time.monotonic() + timeout
    for broker in cluster.brokers.values():
        if not broker.running:
            continue
        _, _, host, port = broker.listeners[0]
        while True:
            try:
                found = call_broker((host, port), 3, 12, body, client_id="bench-harness")
                parts = found["topics"][0]["partitions"] if found["topics"] else []
                if len(parts) == partitions and all(
                    p["error_code"] == 0
                    and p["leader_id"] >= 0
                    and len(p["isr_nodes"]) == REPLICATION
                    for p in parts
                ):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"not every broker has topic {topic} after {timeout:.0f} s")
            time.sleep(0.05)


def delete_topic(bootstrap: str, name: str) -> None:
    """Best effort: the data should leave the disk, nothing depends on it."""
    admin = AdminClient(_quiet({"bootstrap.servers": bootstrap}))
    with contextlib.suppress(Exception):
        admin.delete_topics([name], operation_timeout=60)[name].result(90)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest rank: the smallest sample with at least q of the samples at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered) - 1e-9))
    return ordered[min(len(ordered), rank) - 1]


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "count": len(values),
        "p50": percentile(values, 0.5),
        "p90": percentile(values, 0.9),
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "samples_s": values,
    }


def _run_row(run: Run, cpu: float | None) -> dict[str, Any]:
    return {
        "records": run.records,
        "payload_bytes": run.payload_bytes,
        "seconds": run.seconds,
        "records_per_s": run.records_per_s,
        "MBps": run.mb_per_s,
        "cpu_s": cpu,
    }


def _cpu_total(pids: list[int]) -> float | None:
    values = [cost.cpu_seconds(p) for p in pids]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _pids(cluster: Cluster) -> list[int]:
    return [b._child.pid for b in cluster.brokers.values() if b._child is not None]


# --- cluster: acks=all on three brokers as a ratio of acks=1 on one ----------------------------


class ClusterThroughput:
    def __init__(
        self,
        client: Client,
        records: int,
        single: Broker | None,
        results: dict[str, Any],
        note: Callable[[str], None],
        cleanups: list[Callable[[], None]],
    ) -> None:
        self.client = client
        self.records = records
        # The one broker of the baseline: the harness's own broker when it started one.
        self.single = single
        self._own_single = single is None
        self.cluster: Cluster | None = None
        self.note = note
        self.out: dict[str, Any] = results.setdefault(
            "cluster",
            {
                "brokers": BROKERS,
                "replication_factor": REPLICATION,
                "min_insync_replicas": MIN_ISR,
                "size": THROUGHPUT_SIZE,
                "records_per_run": records,
                "repeats": REPEATS,
                "zookeeper_session_timeout_ms": SESSION_TIMEOUT_MS,
                "rows": [],
            },
        )
        cleanups.append(self.stop)

    def steps(self) -> list[Step]:
        steps: list[Step] = [("cluster: start ZooKeeper and 3 brokers", self.start)]
        for partitions in THROUGHPUT_PARTITIONS:
            for rep in range(1, REPEATS + 1):
                for kind in ("single", "acks1", "acksall"):
                    label = {
                        "single": "1 broker, acks=1",
                        "acks1": "3 brokers RF=3, acks=1",
                        "acksall": "3 brokers RF=3 min.isr=2, acks=all",
                    }[kind]
                    steps.append(
                        (
                            f"cluster: {label}, 1 KiB, {partitions}p (run {rep}/{REPEATS})",
                            _bind(self.produce, kind, partitions),
                        )
                    )
        steps.append(("cluster: stop", self.stop))
        return steps

    def start(self) -> None:
        missing = zookeeper_missing()
        if missing:
            raise RuntimeError(missing)
        if self.single is None:
            self.single = Broker(process=True, config={"num.partitions": 1}, startup_timeout=120)
            self.single.start()
        self.cluster = Cluster(BROKERS, config=CLUSTER_CONFIG)
        try:
            self.cluster.start()
        except BaseException:
            self.cluster.stop()
            self.cluster = None
            raise

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self._own_single and self.single is not None:
            self.single.stop()
            self.single = None
        self._summarise()

    def _row(self, partitions: int) -> dict[str, Any]:
        for row in self.out["rows"]:
            if row["partitions"] == partitions:
                return row  # type: ignore[no-any-return]
        row = {"case": f"1 KiB, {partitions}p", "partitions": partitions, "runs": {}}
        self.out["rows"].append(row)
        return row

    def produce(self, kind: str, partitions: int) -> None:
        if self.cluster is None or self.single is None:
            raise RuntimeError("the cluster did not start")
        if kind == "single":
            bootstrap = self.single.bootstrap_servers
            pids = [self.single._child.pid] if self.single._child is not None else []
            acks = 1
            admin = AdminClient(_quiet({"bootstrap.servers": bootstrap}))
            topic = f"bench-single-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
        else:
            bootstrap = self.cluster.bootstrap_servers
            pids = _pids(self.cluster)
            acks = 1 if kind == "acks1" else -1
            topic = create_topic(bootstrap, partitions, {"min.insync.replicas": str(MIN_ISR)})
            wait_for_topic(self.cluster, topic, partitions)
        try:
            before = _cpu_total(pids)
            run = self.client.produce(
                bootstrap,
                topic,
                records=self.records,
                size=THROUGHPUT_SIZE,
                acks=acks,
                codec="none",
                partition=0 if partitions == 1 else None,
            )
            if kind != "single":
                time.sleep(0.5)  # with acks=1 the followers may still be fetching the tail
            after = _cpu_total(pids)
        finally:
            delete_topic(bootstrap, topic)
        cpu = after - before if before is not None and after is not None else None
        self._row(partitions)["runs"].setdefault(kind, []).append(_run_row(run, cpu))
        self._summarise()

    def _summarise(self) -> None:
        for row in self.out["rows"]:
            for kind, runs in row["runs"].items():
                mbps = statistics.median(r["MBps"] for r in runs)
                rps = statistics.median(r["records_per_s"] for r in runs)
                cpus = [
                    r["cpu_s"] / (r["payload_bytes"] / 1e9)
                    for r in runs
                    if r["cpu_s"] and r["payload_bytes"]
                ]
                row[kind] = {
                    "MBps": mbps,
                    "records_per_s": rps,
                    "cpu_s_per_GB": statistics.median(cpus) if cpus else None,
                }
            single = row.get("single", {}).get("MBps")
            for kind in ("acks1", "acksall"):
                if single and kind in row:
                    row[f"{kind}_vs_single"] = row[kind]["MBps"] / single


# --- failover: SIGKILL (and SIGTERM) the leader under a steady producer -------------------------


@dataclass
class SteadyProducer:
    """One idempotent acks=all producer at a fixed rate on partition 0, on its own thread;
    each record's value starts with its sequence number, each acknowledgement's time
    (time.monotonic) and offset are kept by sequence number."""

    bootstrap: str
    topic: str
    rate: float = FAILOVER_RATE
    size: int = FAILOVER_SIZE
    acked_at: dict[int, float] = field(default_factory=dict)
    acked_offset: dict[int, int] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    sent: int = 0
    unflushed: int = 0
    last_ack: float = 0.0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steady-producer", daemon=True)
        self.failure: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        value = msg.value() or b""
        seq = int(value[:12])
        if err is None:
            now = time.monotonic()
            self.acked_at[seq] = now
            self.acked_offset[seq] = msg.offset() or 0
            self.last_ack = now
        else:
            self.errors[seq] = str(err)

    def _run(self) -> None:
        try:
            p = Producer(_quiet({"bootstrap.servers": self.bootstrap, **PRODUCER_CONFIG}))
            pad = b"." * max(0, self.size - 12)
            began = time.monotonic()
            while not self._stop.is_set():
                wait = began + self.sent / self.rate - time.monotonic()
                if wait > 0:
                    p.poll(min(wait, 0.01))
                    continue
                try:
                    p.produce(
                        self.topic,
                        value=b"%012d" % self.sent + pad,
                        partition=0,
                        on_delivery=self._on_delivery,
                    )
                except BufferError:
                    p.poll(0.01)
                    continue
                self.sent += 1
                p.poll(0)
            self.unflushed = p.flush(150)
        except BaseException as e:
            self.failure = e


class Failover:
    def __init__(
        self,
        kills: int,
        terms: int,
        results: dict[str, Any],
        note: Callable[[str], None],
        cleanups: list[Callable[[], None]],
    ) -> None:
        self.kills = kills
        self.terms = terms
        self.note = note
        self.cluster: Cluster | None = None
        self.zk: KafkaZkClient | None = None
        self.producer: SteadyProducer | None = None
        self.topic = ""
        self.cycles: list[dict[str, Any]] = []
        self.out: dict[str, Any] = results.setdefault(
            "failover",
            {
                "brokers": BROKERS,
                "replication_factor": REPLICATION,
                "min_insync_replicas": MIN_ISR,
                "zookeeper_session_timeout_ms": SESSION_TIMEOUT_MS,
                "producer": {
                    **PRODUCER_CONFIG,
                    "records_per_s": FAILOVER_RATE,
                    "record_size": FAILOVER_SIZE,
                    "client": "confluent-kafka (Python)",
                },
                "cycles": self.cycles,
            },
        )
        cleanups.append(self.stop)

    def steps(self) -> list[Step]:
        steps: list[Step] = [("failover: start ZooKeeper, 3 brokers and a producer", self.start)]
        steps += [
            (f"failover: SIGKILL the leader ({i}/{self.kills})", _bind(self.cycle, "SIGKILL"))
            for i in range(1, self.kills + 1)
        ]
        steps += [
            (f"failover: SIGTERM the leader ({i}/{self.terms})", _bind(self.cycle, "SIGTERM"))
            for i in range(1, self.terms + 1)
        ]
        steps.append(("failover: read back every record and check", self.check))
        steps.append(("failover: stop", self.stop))
        return steps

    def start(self) -> None:
        missing = zookeeper_missing()
        if missing:
            raise RuntimeError(missing)
        self.cluster = Cluster(BROKERS, config=CLUSTER_CONFIG)
        try:
            self.cluster.start()
        except BaseException:
            self.cluster.stop()
            self.cluster = None
            raise
        self.zk = KafkaZkClient(f"{self.cluster.zookeeper.connect}/kafkars")
        self.topic = create_topic(
            self.cluster.bootstrap_servers, 1, {"min.insync.replicas": str(MIN_ISR)}
        )
        self.out["topic"] = self.topic
        wait_for_topic(self.cluster, self.topic, 1)
        self.out["log_dirs"] = {str(i): str(b.log_dir) for i, b in self.cluster.brokers.items()}
        self._wait(lambda: self._state()[2] == [1, 2, 3], 30, "the topic's ISR [1, 2, 3]")
        self.producer = SteadyProducer(self.cluster.bootstrap_servers, self.topic)
        self.producer.start()
        self._wait(lambda: len(self._p().acked_at) >= FAILOVER_RATE, 30, "the first second")

    def _p(self) -> SteadyProducer:
        if self.producer is None:
            raise RuntimeError("no producer: the start step failed")
        if self.producer.failure is not None:
            raise RuntimeError(f"the producer failed: {self.producer.failure!r}")
        return self.producer

    def _state(self) -> tuple[int, int, list[int]]:
        """(leader, leader epoch, sorted ISR) of partition 0 as ZooKeeper has it."""
        if self.zk is None:
            raise RuntimeError("no ZooKeeper client: the start step failed")
        state = self.zk.get_partition_state(self.topic, 0)
        if state is None:
            return -1, -1, []
        return state.leader, state.leader_epoch, sorted(state.isr)

    @staticmethod
    def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> float:
        began = time.monotonic()
        while True:
            if predicate():
                return time.monotonic() - began
            if time.monotonic() - began > timeout:
                raise TimeoutError(f"no {what} after {timeout:.0f} s")
            time.sleep(0.01)

    def cycle(self, how: str) -> None:
        if self.cluster is None or self.zk is None:
            raise RuntimeError("the cluster did not start")
        producer = self._p()
        # A second of steady acknowledgements before the signal.
        time.sleep(SETTLE_S)
        if time.monotonic() - producer.last_ack > 0.5:
            raise RuntimeError("no acknowledgement in the last 0.5 s before the signal")
        leader, epoch, isr = self._state()
        if isr != [1, 2, 3] or leader < 0:
            raise RuntimeError(f"leader {leader}, ISR {isr} before the signal: not a full ISR")
        row: dict[str, Any] = {
            "signal": how,
            "victim": leader,
            "epoch_before": epoch,
            "victim_was_controller": self.zk.get_controller_id() == leader,
            "acked_before": len(producer.acked_at),
        }
        self.cycles.append(row)
        signalled = time.monotonic()
        row["t_signal"] = signalled
        stopping: threading.Thread | None = None
        if how == "SIGKILL":
            self.cluster.kill(leader)
        else:
            # SIGTERM, a controlled shutdown: the broker exits once its leadership has moved.
            # Waited for on a thread so the new leader is watched for meanwhile.
            cluster = self.cluster

            def stop() -> None:
                cluster.stop(leader)
                row["exit_s"] = time.monotonic() - signalled

            stopping = threading.Thread(target=stop, name="controlled-shutdown")
            stopping.start()
        try:
            self._wait(
                lambda: self._state()[0] not in (leader, -1),
                FAILOVER_TIMEOUT_S,
                f"new leader after {how} of broker {leader}",
            )
            row["elected_s"] = time.monotonic() - signalled
            row["new_leader"], row["new_epoch"], _ = self._state()
            # Acknowledgements flowing again: one after the election was seen.
            elected = signalled + row["elected_s"]
            self._wait(
                lambda: producer.last_ack > elected,
                FAILOVER_TIMEOUT_S,
                "acknowledgement from the new leader",
            )
            row["acks_resumed_s"] = producer.last_ack - signalled
        except TimeoutError as e:
            row["error"] = str(e)
            row["broker_logs"] = self._complaints()
        finally:
            if stopping is not None:
                stopping.join()
            restart = time.monotonic()
            self.cluster.start(leader)
            row["restart_s"] = time.monotonic() - restart
        try:
            row["rejoin_s"] = row["restart_s"] + self._wait(
                lambda: self._state()[2] == [1, 2, 3],
                REJOIN_TIMEOUT_S,
                f"broker {leader} back in the ISR",
            )
        except TimeoutError as e:
            row["error"] = f"{row.get('error', '')}; {e}".lstrip("; ")
            row["broker_logs"] = self._complaints()
            raise
        if "error" in row:
            raise RuntimeError(row["error"])

    def _complaints(self) -> dict[str, list[str]]:
        """The last WARNING and ERROR lines of each broker's log."""
        out: dict[str, list[str]] = {}
        if self.cluster is None:
            return out
        for i, broker in self.cluster.brokers.items():
            path = broker.log_dir / ".kafkars-server.log"
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            out[str(i)] = [x for x in lines if " WARNING " in x or " ERROR " in x][-10:]
        return out

    def check(self) -> None:
        if self.cluster is None:
            raise RuntimeError("the cluster did not start")
        producer = self._p()
        producer.stop()
        if producer.failure is not None:
            raise RuntimeError(f"the producer failed: {producer.failure!r}")
        records = self._read_all()
        seqs = [seq for _, seq, _ in records]
        seen: dict[int, int] = {}
        for seq in seqs:
            seen[seq] = seen.get(seq, 0) + 1
        acked = set(producer.acked_at)
        duplicated = sorted(s for s, n in seen.items() if n > 1)
        lost = sorted(acked - set(seen))
        offset_of = {seq: off for off, seq, _ in records}
        moved = sorted(
            s for s in acked if s in offset_of and offset_of[s] != producer.acked_offset[s]
        )
        check = {
            "produced": producer.sent,
            "acknowledged": len(acked),
            "delivery_errors": len(producer.errors),
            "delivery_error_samples": sorted(set(producer.errors.values()))[:5],
            "unflushed": producer.unflushed,
            "read": len(records),
            "distinct": len(seen),
            "duplicated": len(duplicated),
            "duplicated_samples": duplicated[:20],
            "acknowledged_missing": len(lost),
            "acknowledged_missing_samples": lost[:20],
            "present_not_acknowledged": len(set(seen) - acked),
            "offset_differs_from_ack": len(moved),
            "offset_differs_samples": moved[:20],
        }
        check["ok"] = not duplicated and not lost and not moved and producer.unflushed == 0
        self.out["check"] = check
        self._attribute(records, producer)
        self._summarise()
        if not check["ok"]:
            self.note(
                f"failover: {len(lost)} acknowledged records missing, {len(duplicated)} "
                f"written more than once, {len(moved)} at another offset than acknowledged"
            )

    def _read_all(self) -> list[tuple[int, int, int]]:
        """(offset, sequence number, leader epoch) of every record of partition 0."""
        assert self.cluster is not None
        c = Consumer(
            _quiet(
                {
                    "bootstrap.servers": self.cluster.bootstrap_servers,
                    "group.id": "bench-failover-check",
                    "enable.auto.commit": False,
                    "fetch.max.bytes": 8 * 2**20,
                }
            )
        )
        try:
            low, high = c.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=30)
            c.assign([TopicPartition(self.topic, 0, low)])
            out: list[tuple[int, int, int]] = []
            idle = time.monotonic()
            while (not out or out[-1][0] < high - 1) and time.monotonic() - idle < 30:
                for m in c.consume(10_000, 1.0):
                    if m.error() is not None:
                        continue
                    epoch = m.leader_epoch()
                    out.append(
                        (
                            m.offset() or 0,
                            int((m.value() or b"")[:12]),
                            -1 if epoch is None else epoch,
                        )
                    )
                    idle = time.monotonic()
            self.out["high_watermark"] = high
            return out
        finally:
            c.close()

    def _attribute(self, records: list[tuple[int, int, int]], producer: SteadyProducer) -> None:
        """Each round's figure: the first record (by offset) the new leader wrote, in its
        leader epoch; the time from the signal to that record's acknowledgement."""
        for row in self.cycles:
            new_epoch = row.get("new_epoch")
            if new_epoch is None:
                continue
            first = next(
                (
                    seq
                    for _, seq, epoch in records
                    if epoch >= new_epoch and seq in producer.acked_at
                ),
                None,
            )
            if first is None:
                row["attribution"] = f"no acknowledged record in leader epoch {new_epoch}"
                continue
            row["first_seq_new_leader"] = first
            row["failover_s"] = producer.acked_at[first] - row["t_signal"]

    def _summarise(self) -> None:
        for how in ("SIGKILL", "SIGTERM"):
            rows = [r for r in self.cycles if r["signal"] == how]
            self.out[how.lower()] = {
                "rounds": len(rows),
                "failed": sum(1 for r in rows if "failover_s" not in r),
                "first_ack_by_new_leader": summary(
                    [r["failover_s"] for r in rows if "failover_s" in r]
                ),
                "leader_in_zookeeper": summary([r["elected_s"] for r in rows if "elected_s" in r]),
                "back_in_isr_after_restart": summary(
                    [r["rejoin_s"] for r in rows if "rejoin_s" in r]
                ),
            }

    def stop(self) -> None:
        if self.producer is not None and self.producer._thread.is_alive():
            self.producer.stop()
        if self.zk is not None:
            self.zk.close()
            self.zk = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


def _bind(fn: Callable[..., None], *args: Any) -> Callable[[], None]:
    return lambda: fn(*args)
