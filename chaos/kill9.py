"""kill -9 the broker every few seconds under an idempotent acks=all producer and a
committing consumer, then prove nothing acknowledged was lost.

What "acknowledged" means here: the broker answers a Produce only after the batch is in
the log (the page cache, as Kafka does with the default `flush.messages` = Long.MAX:
no fsync per write). kill -9 ends the process, not the kernel, so page-cache data
survives it and every acknowledged record must be read back after the restart. (A power
cut would need `flush.messages=1`; that is not what this checks.) The same holds for
committed offsets: an OffsetCommit is answered after its record is in __consumer_offsets.

Restart time: after kill -9 the broker re-scans every segment from the recovery point in
`recovery-point-offset-checkpoint`, which (as in Kafka) is written every
`log.flush.offset.checkpoint.interval.ms` (60 s) and at shutdown. A broker killed sooner
than that after every start (the task first runs after `log.initial.task.delay.ms`, 30 s)
re-scans all it has written since, so its restarts grow with the data (50 cycles at the
defaults: restarts from 0.6 s to 9 s). The suite therefore checkpoints from one second
after start, every second (`--checkpoint-ms`, 0 keeps the defaults), and the figures show
how many segments the last restart scanned.

The consumer's session (10 s) outlasts a restart: librdkafka drops its member id when no
heartbeat succeeds for session.timeout.ms, and a group whose member keeps coming back new
waits for the old one's session to end after every restart, which kills every few
seconds never allow (as with Kafka).
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.common import BrokerProcess, CheckFailed, check, percentile, report

# Consumer errors that mean a damaged batch reached the client.
TORN = {
    KafkaError._BAD_MSG,
    KafkaError._BAD_COMPRESSION,
    KafkaError.INVALID_MSG,  # CORRUPT_MESSAGE
    KafkaError.INVALID_RECORD,
}


def value_for(key: bytes) -> bytes:
    """The only value a key may carry, so the reader can tell a damaged record."""
    return key + b"|" + hashlib.blake2b(key, digest_size=32).hexdigest().encode() * 2


class ProducerLoad(threading.Thread):
    """Produces numbered records as fast as `rate` allows and keeps every delivery report."""

    def __init__(self, bootstrap: str, topic: str, rate: int):
        super().__init__(daemon=True, name="chaos-producer")
        self.topic = topic
        self.rate = rate
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                # Below segment.bytes: a batch larger than a segment is refused with
                # RECORD_LIST_TOO_LARGE (as Kafka does), and a backlog after a restart
                # would otherwise fill batches up to librdkafka's 1 MB.
                "batch.size": 64 * 1024,
                "message.timeout.ms": 600_000,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
                "error_cb": self._on_error,
                "log_level": 0,
            }
        )
        self.acked: dict[tuple[int, int], bytes] = {}
        self.failed: Counter[str] = Counter()
        self.fatal: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal.append(str(err))

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.failed[err.name()] += 1
        else:
            self.acked[(msg.partition(), msg.offset())] = msg.key()

    def run(self) -> None:
        began = time.monotonic()
        while not self.stopping.is_set() and not self.fatal:
            due = int((time.monotonic() - began) * self.rate)
            while self.sent < due:
                key = f"{self.sent:010d}".encode()
                try:
                    self.producer.produce(
                        self.topic, key=key, value=value_for(key), on_delivery=self._on_delivery
                    )
                except BufferError:
                    break  # the broker is down and the queue is full: wait for it
                self.sent += 1
            self.producer.poll(0.01)

    def finish(self, timeout: float) -> int:
        self.stopping.set()
        self.join()
        return self.producer.flush(timeout)


class CommittingConsumer(threading.Thread):
    """Reads the topic in a group, checks every record and commits synchronously;
    remembers the offsets whose commit the broker acknowledged."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        super().__init__(daemon=True, name="chaos-consumer")
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "check.crcs": True,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
                "log_level": 0,
            }
        )
        self.consumer.subscribe([topic])
        self.lock = threading.Lock()
        self.acked_commits: dict[int, int] = {}
        self.consumed = 0
        # Per partition, the offset after the last record consumed.
        self.positions: dict[int, int] = {}
        self.bad_values = 0
        self.torn: list[str] = []
        self.errors: Counter[str] = Counter()
        self.commits = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        last_commit = time.monotonic()
        while not self.stopping.is_set():
            msg = self.consumer.poll(0.1)
            if msg is not None:
                err = msg.error()
                if err is not None:
                    if err.code() in TORN:
                        self.torn.append(str(err))
                    elif err.code() != KafkaError._PARTITION_EOF:
                        self.errors[err.name()] += 1
                else:
                    self.consumed += 1
                    p, o = msg.partition() or 0, msg.offset() or 0
                    self.positions[p] = max(self.positions.get(p, 0), o + 1)
                    if msg.value() != value_for(msg.key() or b""):
                        self.bad_values += 1
            if time.monotonic() - last_commit >= 0.2:
                last_commit = time.monotonic()
                self._commit()
        self.consumer.close()

    def _commit(self) -> None:
        try:
            done = self.consumer.commit(asynchronous=False)
        except Exception:  # broker down, rebalancing, nothing to commit
            return
        with self.lock:
            self.commits += 1
            for tp in done or []:
                if tp.error is None and tp.offset >= 0:
                    prev = self.acked_commits.get(tp.partition, -1)
                    self.acked_commits[tp.partition] = max(prev, tp.offset)

    def snapshot(self) -> dict[int, int]:
        with self.lock:
            return dict(self.acked_commits)


def committed_offsets(bootstrap: str, group: str, timeout: float = 60.0) -> dict[int, int]:
    """The group's committed offsets as the broker reports them, retried while the
    coordinator loads after a restart."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        # A new client each time: a long-lived librdkafka admin client was seen to stop
        # answering after several broker restarts, while a new one is served at once.
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        try:
            futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
            result = futures[group].result(timeout=10)
            return {
                tp.partition: tp.offset
                for tp in result.topic_partitions
                if tp.error is None and tp.offset >= 0
            }
        except Exception as e:  # COORDINATOR_LOAD_IN_PROGRESS, transport errors
            last = e
            time.sleep(0.2)
    raise CheckFailed(f"could not read the committed offsets of {group}: {last!r}")


def read_back(bootstrap: str, topic: str, partitions: int) -> tuple[dict, list[str], int]:
    """Every record of the topic by (partition, offset), the torn-batch errors met,
    and how many records carried a value that does not match their key."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"chaos-verify-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "check.crcs": True,
            "enable.partition.eof": True,
            "fetch.max.bytes": 8 << 20,
            "log_level": 0,
        }
    )
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        for p in range(partitions)
    }
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: dict[tuple[int, int], bytes] = {}
    torn: list[str] = []
    bad = 0
    done = {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + 300
    while len(done) < partitions and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        err = msg.error()
        partition, offset = msg.partition() or 0, msg.offset() or 0
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                if offset >= ends[partition]:
                    done.add(partition)
            elif err.code() in TORN:
                torn.append(str(err))
            continue
        key = msg.key() or b""
        records[(partition, offset)] = key
        if msg.value() != value_for(key):
            bad += 1
    consumer.close()
    check(
        len(done) == partitions,
        f"read-back did not reach the end of {set(range(partitions)) - done}",
    )
    return records, torn, bad


def behind(positions: dict[int, int], ends: dict[int, int]) -> dict[int, str]:
    """Partitions whose consumed position is short of their last acknowledged record."""
    return {
        p: f"{positions.get(p, 0)}/{end}" for p, end in ends.items() if positions.get(p, 0) < end
    }


def segments_scanned(broker: BrokerProcess) -> int:
    """How many segments the broker's latest start recovered (from its log)."""
    found = re.findall(r"\((\d+) segment\(s\) scanned", broker.server_log.read_text())
    return int(found[-1]) if found else -1


def run(
    workdir: Path,
    cycles: int,
    interval: tuple[float, float],
    rate: int,
    checkpoint_ms: int = 1000,
) -> dict[str, Any]:
    partitions = 3
    config = {
        # Small segments, so kills land across rolls, snapshots and index appends.
        "log.segment.bytes": str(256 * 1024),
        "num.partitions": str(partitions),
    }
    if checkpoint_ms > 0:
        # The checkpoint task starts after log.initial.task.delay.ms (30 s) otherwise.
        config["log.initial.task.delay.ms"] = str(checkpoint_ms)
        config["log.flush.offset.checkpoint.interval.ms"] = str(checkpoint_ms)
    broker = BrokerProcess(workdir / "kill9", config)
    broker.start()
    topic, group = "chaos-kill9", "chaos-kill9-group"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    producer = ProducerLoad(broker.bootstrap, topic, rate)
    consumer = CommittingConsumer(broker.bootstrap, topic, group)
    producer.start()
    consumer.start()
    went_backwards: list[str] = []
    lost_commits: list[str] = []
    seen_committed: dict[int, int] = {}
    rng = random.Random(11)
    began = time.monotonic()
    try:
        for cycle in range(1, cycles + 1):
            time.sleep(rng.uniform(*interval))
            acked_before = consumer.snapshot()
            acked_records = len(producer.acked)
            broker.kill()
            took = broker.start()
            now = committed_offsets(broker.bootstrap, group)
            for p, offset in acked_before.items():
                if now.get(p, -1) < offset:
                    lost_commits.append(f"cycle {cycle} p{p}: acked {offset}, now {now.get(p)}")
            for p, offset in now.items():
                if offset < seen_committed.get(p, -1):
                    went_backwards.append(f"cycle {cycle} p{p}: {seen_committed[p]} -> {offset}")
                seen_committed[p] = max(seen_committed.get(p, -1), offset)
            print(
                f"   cycle {cycle}/{cycles}: restart {took:.2f} s, {acked_records} acked, "
                f"{consumer.consumed} consumed, committed {dict(sorted(now.items()))}",
                flush=True,
            )
            if producer.fatal:
                break
        # Let the clients catch up, then one last crash with everything acknowledged.
        unsent = producer.finish(timeout=120)
        # Once the kills stop, the group settles and the consumer catches up.
        ends: dict[int, int] = {}
        for p, o in producer.acked:
            ends[p] = max(ends.get(p, 0), o + 1)
        deadline = time.monotonic() + 60
        while behind(consumer.positions, ends) and time.monotonic() < deadline:
            time.sleep(0.2)
        lagging = behind(consumer.positions, ends)
        consumer.stopping.set()
        consumer.join(timeout=30)
        broker.kill()
        broker.start()
        records, torn, bad = read_back(broker.bootstrap, topic, partitions)
    finally:
        producer.stopping.set()
        consumer.stopping.set()
        broker.kill()
    elapsed = time.monotonic() - began
    lost = [
        f"p{p}@{o} {key.decode()}"
        for (p, o), key in producer.acked.items()
        if records.get((p, o)) != key
    ]
    keys = Counter(records.values())
    duplicates = sum(n - 1 for n in keys.values() if n > 1)
    restarts = broker.restart_seconds[1:]
    scanned = segments_scanned(broker)
    figures = {
        "cycles": len(restarts) - 1,
        "recovery-point checkpoint interval": f"{checkpoint_ms} ms" if checkpoint_ms else "default",
        "elapsed": f"{elapsed:.0f} s",
        "records sent": producer.sent,
        "records acked": len(producer.acked),
        "records not acked (delivery errors)": dict(producer.failed) or 0,
        "records unsent at the end": unsent,
        "records read back": len(records),
        "acked records verified": len(producer.acked) - len(lost),
        "acked records lost": len(lost),
        "duplicates (idempotent producer)": duplicates,
        "torn batches (consumer + read-back)": len(consumer.torn) + len(torn),
        "values not matching their key": consumer.bad_values + bad,
        "records consumed by the group (re-deliveries included)": consumer.consumed,
        "group consumer behind at the end": lagging or 0,
        "acked commits": consumer.commits,
        "acked commits lost": len(lost_commits),
        "committed offsets going backwards": len(went_backwards),
        "restart to listening port p50": f"{percentile(restarts, 50):.2f} s",
        "restart to listening port max": f"{max(restarts):.2f} s",
        "restart to listening port last": f"{restarts[-1]:.2f} s",
        "segments re-scanned by the last restart": scanned,
        "producer fatal errors": producer.fatal or 0,
        "consumer errors (transient)": dict(consumer.errors) or 0,
    }
    report("kill -9 under load", figures)
    check(not producer.fatal, f"the idempotent producer hit a fatal error: {producer.fatal}")
    check(not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}")
    # With a 10-minute delivery timeout, every record should end up acknowledged.
    check(not producer.failed, f"records refused: {dict(producer.failed)}")
    check(not (consumer.torn or torn), f"torn batches served: {(consumer.torn + torn)[:3]}")
    check(consumer.bad_values + bad == 0, "records with damaged values served")
    check(not lost_commits, f"acknowledged commits lost: {lost_commits[:5]}")
    check(not went_backwards, f"committed offsets went backwards: {went_backwards[:5]}")
    check(duplicates == 0, f"{duplicates} duplicate records from an idempotent producer")
    check(not lagging, f"the group consumer never caught up: {lagging}")
    check(max(restarts) < 30, f"a restart took {max(restarts):.1f} s")
    return figures
