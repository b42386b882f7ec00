"""Load for the mixed-cluster fault and migration tests: an idempotent acks=all producer,
a transactional producer committing and aborting in turn, a consumer group reading the
transactional topic read_committed and committing offsets, a monitor of those committed
offsets, and a sampler of leaderless partitions; then the checks of what they saw."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kazoo.exceptions import NoNodeError

from kafkars.coordinator.group.records import partition_for
from kafkars.testing import consume

from .conftest import MixedCluster

QUIET = {"log_level": 0, "logger": lambda *a: None}
# Records per transaction, spread over the topic's partitions.
TXN_RECORDS = 4


class Producing:
    """An idempotent acks=all producer writing "0", "1", ... to one partition on its own
    thread until stopped, recording what was acknowledged and what failed."""

    def __init__(self, cluster: MixedCluster, topic: str, partition: int) -> None:
        self.acked: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cluster, topic, partition))

    def start(self) -> Producing:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def _run(self, cluster: MixedCluster, topic: str, partition: int) -> None:
        def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
            if err is None:
                self.acked.append(msg.value())
            else:
                self.errors.append(str(err))

        p = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120000,
                **QUIET,
            }
        )
        i = 0
        while not self._stop.is_set():
            p.produce(
                topic, b"%d-%d" % (partition, i), partition=partition, on_delivery=on_delivery
            )
            p.poll(0.002)
            i += 1
        p.flush(60)


class Transactions:
    """A transactional producer (`transactional_id`) on its own thread: transaction n
    writes TXN_RECORDS records "c-n-i" (n even, committed) or "a-n-i" (n odd, aborted)
    over the topic's partitions. Each transaction ends in `committed`, `aborted` or, when
    the producer had to be replaced mid-way, `unknown` (all or none of it may show)."""

    def __init__(
        self, cluster: MixedCluster, topic: str, partitions: int, transactional_id: str
    ) -> None:
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.transactional_id = transactional_id
        self.committed: set[int] = set()
        self.aborted: set[int] = set()
        self.unknown: set[int] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self) -> Transactions:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)
        assert not self._thread.is_alive(), "the transactional producer did not stop"

    def _producer(self) -> Producer:
        p = Producer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": 60000,
                "message.timeout.ms": 60000,
                "linger.ms": 5,
                **QUIET,
            }
        )
        # A coordinator moving answers InitProducerId with errors librdkafka does not
        # all call retriable (NOT_COORDINATOR): retry any but a fatal one.
        deadline = time.monotonic() + 120
        while True:
            try:
                p.init_transactions(30)
                return p
            except KafkaException as e:
                err = e.args[0]
                if err.fatal() or time.monotonic() > deadline:
                    raise
                self.errors.append(str(err))
                time.sleep(0.2)

    def _retry(self, call: Any) -> None:
        """`call(timeout)` again while it fails with a retriable error (a coordinator
        moving), for up to two minutes."""
        deadline = time.monotonic() + 120
        while True:
            try:
                call(30)
                return
            except KafkaException as e:
                err = e.args[0]
                if not err.retriable() or time.monotonic() > deadline:
                    raise
                self.errors.append(str(err))

    def _run(self) -> None:
        p = self._producer()
        n = 0
        while not self._stop.is_set():
            commit = n % 2 == 0
            tag = b"c" if commit else b"a"
            try:
                p.begin_transaction()
                for i in range(TXN_RECORDS):
                    p.produce(self.topic, b"%s-%d-%d" % (tag, n, i), partition=i % self.partitions)
                if commit:
                    self._retry(p.commit_transaction)
                    self.committed.add(n)
                else:
                    self._retry(p.abort_transaction)
                    self.aborted.add(n)
            except KafkaException as e:
                err = e.args[0]
                self.errors.append(str(err))
                try:
                    if not err.txn_requires_abort():
                        raise
                    self._retry(p.abort_transaction)
                    self.aborted.add(n)
                except KafkaException:
                    # A new producer with the same transactional.id fences this one and
                    # completes or aborts what it left open.
                    self.unknown.add(n)
                    p = self._producer()
            n += 1


class CommittingConsumer:
    """A consumer in `group` reading `topic` read_committed on its own thread, committing
    its position synchronously after each batch; `floor` is, per partition, the highest
    offset a commit of it was acknowledged for."""

    def __init__(self, cluster: MixedCluster, topic: str, group: str) -> None:
        self.cluster, self.topic, self.group = cluster, topic, group
        self.seen: list[bytes] = []
        self.commits = 0
        self.floor: dict[int, int] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self) -> CommittingConsumer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def _run(self) -> None:
        c = Consumer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "group.id": self.group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 30000,
                **QUIET,
            }
        )
        c.subscribe([self.topic])
        while not self._stop.is_set():
            batch = [m for m in c.consume(100, 0.2) if m.error() is None]
            if not batch:
                continue
            self.seen += [m.value() for m in batch]
            try:
                done = c.commit(asynchronous=False)
            except KafkaException as e:
                self.errors.append(str(e.args[0]))
                continue
            self.commits += 1
            for tp in done or []:
                if tp.error is None and tp.offset >= 0:
                    self.floor[tp.partition] = max(self.floor.get(tp.partition, -1), tp.offset)
        c.close()


class OffsetMonitor:
    """Reads the group's committed offsets (OffsetFetch, not a member) every 100 ms and
    counts every answer below one seen before or below an offset whose commit had been
    acknowledged before the read started."""

    def __init__(self, consumer: CommittingConsumer, partitions: int) -> None:
        self.consumer = consumer
        self.partitions = partitions
        self.reads = 0
        self.backwards: list[str] = []
        self._seen: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self) -> OffsetMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def _run(self) -> None:
        consumer = self.consumer
        c = Consumer(
            {
                "bootstrap.servers": consumer.cluster.bootstrap_servers,
                "group.id": consumer.group,
                **QUIET,
            }
        )
        tps = [TopicPartition(consumer.topic, p) for p in range(self.partitions)]
        while not self._stop.wait(0.1):
            floor = dict(consumer.floor)
            try:
                answer = c.committed(tps, timeout=10)
            except KafkaException:
                continue  # no answer is not a wrong answer
            self.reads += 1
            for tp in answer:
                if tp.error is not None:
                    continue
                # -1001: no committed offset (librdkafka's OFFSET_INVALID).
                low = max(floor.get(tp.partition, -1001), self._seen.get(tp.partition, -1001))
                if tp.offset < low:
                    self.backwards.append(f"partition {tp.partition}: {tp.offset} < {low}")
                self._seen[tp.partition] = max(self._seen.get(tp.partition, -1001), tp.offset)
        c.close()


class Leaderless:
    """Samples the partition state znodes every 50 ms: the longest stretch a partition's
    leader was -1, a broker not registered or one in `dead` (killed, while its ZooKeeper
    session has not expired yet)."""

    def __init__(self, cluster: MixedCluster, topics: dict[str, int]) -> None:
        self.cluster = cluster
        self.paths = [
            f"/brokers/topics/{topic}/partitions/{p}/state"
            for topic, partitions in topics.items()
            for p in range(partitions)
        ]
        self.longest = 0.0
        self.dead: set[int] = set()
        self._since: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Leaderless:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        zk = self.cluster.zk_client
        assert zk is not None
        while not self._stop.wait(0.05):
            live = {int(c) for c in zk.get_children("/brokers/ids")} - self.dead
            now = time.monotonic()
            for path in self.paths:
                try:
                    leader = json.loads(zk.get(path)[0])["leader"]
                except NoNodeError:
                    continue
                if leader in live:
                    self._since.pop(path, None)
                else:
                    start = self._since.setdefault(path, now)
                    self.longest = max(self.longest, now - start)


def read_to_end(
    cluster: MixedCluster, topic: str, partitions: int, isolation: str = "read_uncommitted"
) -> list[bytes]:
    """Every record of `topic` from offset 0 up to each partition's end (the last stable
    offset for read_committed), through all running brokers."""
    records = consume.read_to_end(
        cluster.bootstrap_servers,
        topic,
        partitions,
        isolation_level=isolation,
        timeout_s=60,
        strict=True,
        config=QUIET,
    )
    return [m.value() for m in records]


@dataclass
class Figures:
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    committed_records_lost: int = 0
    aborted_records_seen: int = 0
    group_commits: int = 0
    offsets_backwards: int = 0
    leaderless: float = 0.0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"{self.acknowledged} acknowledged, {self.lost} lost, {self.duplicated} duplicated; "
            f"{self.transactions_committed} transactions committed, "
            f"{self.transactions_aborted} aborted, {self.committed_records_lost} committed "
            f"records lost, {self.aborted_records_seen} aborted records seen; "
            f"{self.group_commits} group commits, {self.offsets_backwards} backwards; "
            f"longest leaderless {self.leaderless:.2f} s"
        )


def txn_of(value: bytes) -> int:
    return int(value.split(b"-")[1])


class Load:
    """Everything above against one cluster: an idempotent producer on each partition
    of `topic`, transactions into `txn_topic` read by a committing consumer group whose
    offsets are monitored."""

    def __init__(
        self,
        cluster: MixedCluster,
        topic: str,
        txn_topic: str,
        partitions: int,
        group: str,
        transactional_id: str,
    ) -> None:
        self.cluster, self.topic, self.txn_topic = cluster, topic, txn_topic
        self.partitions = partitions
        self.producers = [Producing(cluster, topic, p) for p in range(partitions)]
        self.transactions = Transactions(cluster, txn_topic, partitions, transactional_id)
        self.consumer = CommittingConsumer(cluster, txn_topic, group)
        self.monitor = OffsetMonitor(self.consumer, partitions)

    def start(self) -> Load:
        for p in self.producers:
            p.start()
        self.transactions.start()
        self.consumer.start()
        self.monitor.start()
        return self

    def progress(self) -> tuple[int, int, int]:
        return (
            sum(len(p.acked) for p in self.producers),
            len(self.transactions.committed),
            self.consumer.commits,
        )

    def wait_progress(self, timeout: float, what: str) -> None:
        """Until every part of the load has moved on: acknowledged records, committed
        transactions and acknowledged group commits."""
        base = self.progress()
        deadline = time.monotonic() + timeout
        while True:
            now = self.progress()
            if now[0] > base[0] + 100 and now[1] > base[1] + 1 and now[2] > base[2] + 1:
                return
            assert time.monotonic() < deadline, f"no progress {what}: {base} -> {now}"
            time.sleep(0.1)

    def stop(self) -> None:
        for p in self.producers:
            p.stop()
        self.transactions.stop()
        self.consumer.stop()
        self.monitor.stop()

    def verify(self, leaderless: float) -> Figures:
        f = Figures(leaderless=leaderless)
        acked = [v for p in self.producers for v in p.acked]
        values = read_to_end(self.cluster, self.topic, self.partitions)
        f.acknowledged = len(acked)
        f.lost = len(set(acked) - set(values))
        f.duplicated = len(values) - len(set(values))

        t = self.transactions
        f.transactions_committed, f.transactions_aborted = len(t.committed), len(t.aborted)
        visible = read_to_end(self.cluster, self.txn_topic, self.partitions, "read_committed")
        f.duplicated += len(visible) - len(set(visible))
        expected = {b"c-%d-%d" % (n, i) for n in t.committed for i in range(TXN_RECORDS)}
        f.committed_records_lost = len(expected - set(visible))
        # Seen by the group during the faults, or read at the end.
        f.aborted_records_seen = sum(
            txn_of(v) in t.aborted for v in set(self.consumer.seen) | set(visible)
        )
        for n in t.unknown:  # all or nothing
            shown = sum(txn_of(v) == n for v in set(visible))
            if shown not in (0, TXN_RECORDS):
                f.notes.append(f"transaction {n} shows {shown} of {TXN_RECORDS} records")
        f.group_commits = self.consumer.commits
        f.offsets_backwards = len(self.monitor.backwards)
        f.notes += self.monitor.backwards[:3]
        return f


def coordinated_by(cluster: MixedCluster, topic: str, leader: int, prefix: str) -> str:
    """An id (group id or transactional id) whose partition of the internal `topic`
    (__consumer_offsets, __transaction_state) broker `leader` leads."""
    from .test_mixed import metadata

    parts = metadata(cluster, cluster.running()[0], topic).partitions
    led = {p for p, md in parts.items() if md.leader == leader}
    assert led, f"broker {leader} leads no partition of {topic}"
    for i in range(1000):
        candidate = f"{prefix}-{i}"
        if partition_for(candidate, len(parts)) in led:
            return candidate
    raise AssertionError("unreachable: 1000 ids miss every partition")
