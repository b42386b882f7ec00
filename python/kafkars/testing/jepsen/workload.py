"""The clients, each a real confluent-kafka client on its own thread, recording what they
did in a JSON-lines history (the format `kafkars.testing.jepsen.checker` reads):

- `idem-N`: idempotent acks=all producers; f=send, ok with the acknowledged partition and
  offset, info when the outcome is unknown (timed out, fatal error).
- `txn-N`: transactional producers; f=txn, ok with outcome commit or abort and the
  records' delivery offsets, info when the outcome is unknown.
- `group`: a consumer group member committing its position every second; f=commit.
- `observer`: reads the group's committed offsets (OffsetFetch) every second;
  f=committed, with the time it was invoked (`start`).
- `rc-N`: read_committed readers of every partition from the beginning; f=read.
- after the faults: f=final-read, a full read with each isolation level, and the group's
  committed offsets (f=committed with final=true).

Every line has `time` (seconds since the run began), `process`, `type` and `f`.
"""

from __future__ import annotations

import abc
import json
import logging
import random
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

# librdkafka's own log (it calls `logger.log`): kept out of the run's output; what
# matters reaches the history as errors.
_CLIENT_LOG = logging.getLogger("kafkars.jepsen.clients")
_CLIENT_LOG.addHandler(logging.NullHandler())
_CLIENT_LOG.propagate = False


def quiet(conf: dict[str, Any]) -> dict[str, Any]:
    return {**conf, "logger": _CLIENT_LOG}


class History:
    """An append-only JSON-lines file shared by every client thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("w")
        self._lock = threading.Lock()
        self.started = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.started, 4)

    def add(self, process: str, type_: str, f: str, **fields: Any) -> None:
        line = json.dumps({"time": self.now(), "process": process, "type": type_, "f": f, **fields})
        with self._lock:
            self._file.write(line + "\n")

    def close(self) -> None:
        with self._lock:
            self._file.close()


class Client(threading.Thread, abc.ABC):
    def __init__(self, name: str, history: History, bootstrap: str, topic: str, partitions: int):
        super().__init__(name=name, daemon=True)
        self.history = history
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.stopping = threading.Event()
        self.failure: str | None = None

    def run(self) -> None:
        try:
            self.work()
        except Exception as e:  # a client bug must not pass as a quiet run
            self.failure = f"{type(e).__name__}: {e}"
            self.history.add(self.name, "info", "crash", error=self.failure)

    @abc.abstractmethod
    def work(self) -> None: ...


class IdempotentProducer(Client):
    rate = 150  # records a second

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._fatal = threading.Event()  # the producer must be replaced

    def work(self) -> None:
        seq = 0
        while not self.stopping.is_set():
            producer = Producer(
                quiet(
                    {
                        "bootstrap.servers": self.bootstrap,
                        "acks": "all",
                        "enable.idempotence": True,
                        "linger.ms": 5,
                        "message.timeout.ms": 30000,
                    }
                )
            )
            self._fatal.clear()
            try:
                while not self.stopping.is_set() and not self._fatal.is_set():
                    value = f"{self.name}-{seq}"
                    partition = seq % self.partitions
                    seq += 1
                    try:
                        producer.produce(
                            self.topic,
                            value=value,
                            partition=partition,
                            on_delivery=self._delivered,
                        )
                    except BufferError:
                        producer.poll(0.5)
                        continue
                    producer.poll(1 / self.rate)
            except KafkaException as e:
                # A fatal error (OUT_OF_ORDER_SEQUENCE_NUMBER after the broker lost what it
                # had acknowledged, say): outstanding records fail in the flush; a new
                # producer (a new producer id) carries on.
                self.history.add(self.name, "info", "fatal", error=e.args[0].name())
            try:
                remaining = producer.flush(45)
            except KafkaException as e:
                self.history.add(self.name, "info", "fatal", error=e.args[0].name())
                remaining = len(producer)
            if remaining:
                self.history.add(self.name, "info", "flush", remaining=remaining)

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        value = msg.value().decode()
        if err is None:
            self.history.add(
                self.name,
                "ok",
                "send",
                value=value,
                partition=msg.partition(),
                offset=msg.offset(),
            )
        else:
            self.history.add(
                self.name,
                "info",
                "send",
                value=value,
                partition=msg.partition(),
                error=err.name(),
            )
            if err.fatal():
                self._fatal.set()


class TransactionalProducer(Client):
    def work(self) -> None:
        txn = 0
        transactional_id = f"jepsen-{self.name}"
        while not self.stopping.is_set():
            producer = Producer(
                quiet(
                    {
                        "bootstrap.servers": self.bootstrap,
                        "transactional.id": transactional_id,
                        "transaction.timeout.ms": 15000,
                        "message.timeout.ms": 15000,
                        "linger.ms": 5,
                    }
                )
            )
            try:
                producer.init_transactions(30)
            except KafkaException as e:
                self.history.add(self.name, "fail", "init", error=e.args[0].name())
                time.sleep(0.5)
                continue
            while not self.stopping.is_set():
                txn += 1
                if not self._transaction(producer, f"{self.name}-t{txn}"):
                    break  # a new producer (init_transactions completes or aborts this one)

    def _transaction(self, producer: Producer, txn: str) -> bool:
        """One transaction; False when the producer must be replaced."""
        values: list[list[Any]] = []

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                for v in values:
                    if v[0] == msg.value().decode():
                        v[2] = msg.offset()

        abort = random.random() < 0.3
        try:
            producer.begin_transaction()
            for k in range(random.randint(2, 5)):
                value = f"{txn}-{k}"
                partition = random.randrange(self.partitions)
                values.append([value, partition, -1])
                producer.produce(
                    self.topic, value=value, partition=partition, on_delivery=delivered
                )
            producer.poll(0)
            if abort:
                producer.abort_transaction(30)
            else:
                producer.commit_transaction(30)
            producer.poll(0)
            outcome = "abort" if abort else "commit"
            self.history.add(self.name, "ok", "txn", txn=txn, outcome=outcome, values=values)
            time.sleep(0.05)
            return True
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                try:
                    producer.abort_transaction(30)
                    self.history.add(
                        self.name,
                        "ok",
                        "txn",
                        txn=txn,
                        outcome="abort",
                        values=values,
                        error=err.name(),
                    )
                    return True
                except KafkaException as e2:
                    err = e2.args[0]
            # Commit or abort timed out, or the producer is fenced or broken: either
            # outcome is possible.
            self.history.add(self.name, "info", "txn", txn=txn, values=values, error=err.name())
            return False


class GroupMember(Client):
    group = "jepsen-group"

    def work(self) -> None:
        consumer = Consumer(
            quiet(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": self.group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "session.timeout.ms": 10000,
                }
            )
        )
        consumer.subscribe([self.topic])
        last = time.monotonic()
        try:
            while not self.stopping.is_set():
                consumer.consume(500, 0.2)
                if time.monotonic() - last < 1.0:
                    continue
                last = time.monotonic()
                start = self.history.now()
                try:
                    committed = consumer.commit(asynchronous=False)
                except KafkaException as e:
                    if e.args[0].code() != KafkaError._NO_OFFSET:
                        self.history.add(self.name, "info", "commit", error=e.args[0].name())
                    continue
                offsets = {
                    str(tp.partition): tp.offset
                    for tp in committed or []
                    if tp.error is None and tp.offset >= 0
                }
                if offsets:
                    self.history.add(self.name, "ok", "commit", start=start, offsets=offsets)
        finally:
            consumer.close()


class CommittedObserver(Client):
    def work(self) -> None:
        consumer = Consumer(
            quiet({"bootstrap.servers": self.bootstrap, "group.id": GroupMember.group})
        )
        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        try:
            while not self.stopping.wait(1.0):
                start = self.history.now()
                try:
                    got = consumer.committed(tps, timeout=5)
                except KafkaException:
                    continue
                offsets = {str(tp.partition): tp.offset for tp in got if tp.offset >= 0}
                if offsets:
                    self.history.add(self.name, "ok", "committed", start=start, offsets=offsets)
        finally:
            consumer.close()


def _record(m: Message) -> list[Any]:
    """A consumed record as the history keeps it: partition, offset, value, leader epoch."""
    return [m.partition(), m.offset(), (m.value() or b"").decode(), m.leader_epoch()]


def _reader(bootstrap: str, isolation: str) -> Consumer:
    return Consumer(
        quiet(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"jepsen-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
            }
        )
    )


class ReadCommittedReader(Client):
    def work(self) -> None:
        consumer = _reader(self.bootstrap, "read_committed")
        consumer.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
        )
        try:
            while not self.stopping.is_set():
                msgs = consumer.consume(1000, 0.5)
                records = [_record(m)[:3] for m in msgs if m.error() is None]
                if records:
                    self.history.add(self.name, "ok", "read", records=records)
        finally:
            consumer.close()


def final_read(
    history: History, bootstrap: str, topic: str, partitions: int, isolation: str, timeout: float
) -> None:
    """Reads every partition to its end offset (the high watermark, or the last stable
    offset for read_committed) and records every record with its leader epoch."""
    consumer = _reader(bootstrap, isolation)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    deadline = time.monotonic() + timeout
    ends: dict[int, int] = {}
    for tp in tps:
        while tp.partition not in ends:
            try:
                ends[tp.partition] = consumer.get_watermark_offsets(tp, timeout=5)[1]
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: list[list[Any]] = []
    positions = dict.fromkeys(range(partitions), 0)
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        if all(positions[p] >= ends[p] for p in ends):
            break
        msgs = consumer.consume(1000, 0.5)
        for m in msgs:
            if m.error() is None:
                record = _record(m)
                records.append(record)
                positions[record[0]] = record[1] + 1
        if msgs:
            idle_since = time.monotonic()
        else:
            # Transaction markers and aborted records end a partition without a record.
            for tp in consumer.position(tps):
                positions[tp.partition] = max(positions[tp.partition], tp.offset)
            if time.monotonic() - idle_since > 8:
                break
    consumer.close()
    complete = all(positions[p] >= ends[p] for p in ends)
    history.add(
        f"final-{isolation}",
        "ok",
        "final-read",
        isolation=isolation,
        ends={str(p): e for p, e in ends.items()},
        complete=complete,
        records=records,
    )


def final_committed(
    history: History, bootstrap: str, topic: str, partitions: int, timeout: float
) -> None:
    """The group's committed offsets once the clients have stopped."""
    consumer = Consumer(quiet({"bootstrap.servers": bootstrap, "group.id": GroupMember.group}))
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    deadline = time.monotonic() + timeout
    try:
        while True:
            start = history.now()
            try:
                got = consumer.committed(tps, timeout=10)
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
    finally:
        consumer.close()
    offsets = {str(tp.partition): tp.offset for tp in got if tp.offset >= 0}
    history.add("final-committed", "ok", "committed", start=start, offsets=offsets, final=True)


def start_clients(history: History, bootstrap: str, topic: str, partitions: int) -> list[Client]:
    args = (history, bootstrap, topic, partitions)
    clients: list[Client] = [
        IdempotentProducer("idem-0", *args),
        IdempotentProducer("idem-1", *args),
        TransactionalProducer("txn-0", *args),
        TransactionalProducer("txn-1", *args),
        GroupMember("group", *args),
        CommittedObserver("observer", *args),
        ReadCommittedReader("rc-0", *args),
    ]
    for c in clients:
        c.start()
    return clients
