"""Damaged segments, indexes and checkpoints at start-up: the broker recovers (indexes
rebuilt, a torn tail truncated, garbage checkpoints ignored as Kafka ignores them) or
refuses to start with a clear one-line message; it never serves a torn batch.

Each case writes a partition with an idempotent producer (small segments, so there are
rolls, indexes and producer-state snapshots), stops the broker cleanly or with kill -9,
damages files, restarts it, reads everything back with CRC checks, looks up offsets in
the middle of every segment, and appends more.
"""

from __future__ import annotations

import random
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.common import BrokerProcess, CheckFailed, check, report

TOPIC = "damaged"
RECORDS = 3000


def key_of(i: int) -> bytes:
    return f"{i:08d}".encode()


def value_of(key: bytes) -> bytes:
    return key * 12


def batches(path: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of every complete batch in a segment file."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length <= 0 or pos + 12 + length > len(data):
            break
        out.append((pos, 12 + length, base))
        pos += 12 + length
    return out


def garbage(path: Path, size: int | None = None) -> None:
    rng = random.Random(path.name)
    n = size if size is not None else max(17, path.stat().st_size if path.exists() else 64)
    path.write_bytes(bytes(rng.randrange(256) for _ in range(min(n, 1 << 16))) * (n >> 16 or 1))


@dataclass
class Case:
    name: str
    # kill -9 (recovery runs) or a clean stop before the damage.
    kill: bool
    damage: Callable[[Path, Path], str]
    # Whether losing records is expected (the damaged tail).
    may_lose_tail: bool = False


def segments(part: Path) -> list[Path]:
    return sorted(part.glob("*.log"))


def cut_last_batch(part: Path, _dir: Path) -> str:
    log = segments(part)[-1]
    pos, size, base = batches(log)[-1]
    with open(log, "r+b") as f:
        f.truncate(pos + size // 2)
    return f"{log.name}: batch at offset {base} cut from {size} to {size // 2} bytes"


def flip_last_batch(part: Path, _dir: Path) -> str:
    log = segments(part)[-1]
    pos, size, base = batches(log)[-1]
    with open(log, "r+b") as f:
        f.seek(pos + size - 20)
        tail = bytearray(f.read(8))
        f.seek(pos + size - 20)
        f.write(bytes(b ^ 0x5A for b in tail))
    return f"{log.name}: 8 bytes flipped in the batch at offset {base}"


def garbage_indexes(suffix: str) -> Callable[[Path, Path], str]:
    def damage(part: Path, _dir: Path) -> str:
        files = sorted(part.glob(f"*{suffix}"))
        for f in files:
            garbage(f, f.stat().st_size or 4096)
        return f"{len(files)} {suffix} files overwritten with random bytes"

    return damage


def short_indexes(part: Path, _dir: Path) -> str:
    files = sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex"))
    for f in files:
        with open(f, "r+b") as fh:
            fh.truncate(13)  # not a whole number of entries
    return f"{len(files)} index files cut to 13 bytes"


def missing_indexes(part: Path, _dir: Path) -> str:
    files = sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex"))
    for f in files:
        f.unlink()
    return f"{len(files)} index files deleted"


def garbage_file(name: str) -> Callable[[Path, Path], str]:
    def damage(part: Path, log_dir: Path) -> str:
        path = log_dir / name if (log_dir / name).exists() else part / name
        garbage(path, 200)
        return f"{path.name} overwritten with random bytes"

    return damage


def text_file(name: str, text: str) -> Callable[[Path, Path], str]:
    def damage(_part: Path, log_dir: Path) -> str:
        (log_dir / name).write_text(text)
        return f"{name} replaced by {text!r}"

    return damage


def garbage_snapshots(part: Path, _dir: Path) -> str:
    files = sorted(part.glob("*.snapshot"))
    for f in files:
        garbage(f, f.stat().st_size or 100)
    return f"{len(files)} .snapshot files overwritten with random bytes"


CASES = [
    Case("torn tail: last batch cut in half", True, cut_last_batch, may_lose_tail=True),
    Case("torn tail: last batch's bytes flipped", True, flip_last_batch, may_lose_tail=True),
    Case("garbage .index (clean shutdown)", False, garbage_indexes(".index")),
    Case("garbage .timeindex (clean shutdown)", False, garbage_indexes(".timeindex")),
    Case("garbage .index and .timeindex (kill -9)", True, garbage_indexes("index")),
    Case("indexes cut mid-entry (clean shutdown)", False, short_indexes),
    Case("indexes deleted (clean shutdown)", False, missing_indexes),
    Case(
        "garbage recovery-point-offset-checkpoint",
        True,
        garbage_file("recovery-point-offset-checkpoint"),
    ),
    Case(
        "garbage replication-offset-checkpoint",
        False,
        garbage_file("replication-offset-checkpoint"),
    ),
    Case("garbage log-start-offset-checkpoint", False, garbage_file("log-start-offset-checkpoint")),
    Case("garbage leader-epoch-checkpoint", False, garbage_file("leader-epoch-checkpoint")),
    Case("garbage producer-state .snapshot (kill -9)", True, garbage_snapshots),
    Case("garbage meta.properties", False, garbage_file("meta.properties")),
    Case("meta.properties with broker.id=x", False, text_file("meta.properties", "broker.id=x\n")),
    Case("garbage kafkars-metadata.json", False, garbage_file("kafkars-metadata.json")),
    Case(
        "garbage cleaner-offset-checkpoint",
        False,
        text_file("cleaner-offset-checkpoint", "0\n1\nx\n"),
    ),
]
SMOKE = {0, 2, 4, 7, 11}


def fill(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
            "log_level": 0,
        }
    )
    for i in range(RECORDS):
        producer.produce(TOPIC, key=key_of(i), value=value_of(key_of(i)))
        if i % 200 == 199:
            producer.flush(30)
    check(producer.flush(60) == 0, "could not write the records to damage")


def read_all(broker: BrokerProcess, start: int = 0, limit: int | None = None) -> tuple[list, list]:
    """(offset, key, value) from `start` to the end (or `limit` records), and errors."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"damaged-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "check.crcs": True,
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1]
    consumer.assign([TopicPartition(TOPIC, 0, start)])
    records: list[tuple[int, bytes, bytes]] = []
    errors: list[str] = []
    deadline = time.monotonic() + 60
    while start < end and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                break
            errors.append(str(err))
            continue
        records.append((msg.offset() or 0, msg.key() or b"", msg.value() or b""))
        if limit is not None and len(records) >= limit:
            break
    consumer.close()
    return records, errors


def verify(broker: BrokerProcess, case: Case, part: Path) -> str:
    records, errors = read_all(broker)
    check(not errors, f"errors while reading back: {errors[:3]}")
    for n, (offset, key, value) in enumerate(records):
        check(offset == n, f"offset {offset} where {n} was expected")
        check(key == key_of(n) and value == value_of(key), f"wrong record at offset {offset}")
    lost = RECORDS - len(records)
    if not case.may_lose_tail:
        check(lost == 0, f"{lost} records lost")
    check(lost < 100, f"{lost} records lost (more than the damaged batch)")
    # Offset lookups in the middle of every segment go through the (rebuilt) indexes.
    lookups = 0
    for log in segments(part):
        base = int(log.name.split(".")[0])
        for target in (base, base + 7, base + 31):
            if target < len(records):
                got, errors = read_all(broker, target, limit=1)
                check(not errors and bool(got) and got[0][0] == target, f"lookup {target}: {got}")
                check(got[0][1] == key_of(target), f"lookup of {target} found the wrong record")
                lookups += 1
    # The log takes appends at the right offsets.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "log_level": 0})
    acked: list[int] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.append(msg.offset())

    for i in range(10):
        producer.produce(TOPIC, key=b"after", value=str(i).encode(), on_delivery=on_delivery)
    check(producer.flush(30) == 0 and len(acked) == 10, "appends after recovery failed")
    check(sorted(acked) == list(range(len(records), len(records) + 10)), f"appended at {acked}")
    return f"recovered: {len(records)} records served intact, {lost} lost, {lookups} lookups ok"


def run_case(workdir: Path, n: int, case: Case) -> str:
    broker = BrokerProcess(workdir / f"damaged-{n}", {"log.segment.bytes": str(64 * 1024)})
    broker.start()
    try:
        fill(broker)
        if case.kill:
            broker.kill()
        else:
            broker.stop()
        part = broker.log_dir / f"{TOPIC}-0"
        what = case.damage(part, broker.log_dir)
        listening, reason = broker.start_expecting_refusal()
        if not listening:
            check(reason.count("\n") == 0 and len(reason) > 20, f"unclear refusal: {reason!r}")
            reason = reason.split(" ERROR ", 1)[-1]
            return f"{what} -> refused: {reason[:300]}"
        return f"{what} -> {verify(broker, case, part)}"
    finally:
        broker.kill()


def run(workdir: Path, smoke: bool) -> dict[str, Any]:
    outcomes: dict[str, str] = {}
    failures: list[str] = []
    for n, case in enumerate(CASES):
        if smoke and n not in SMOKE:
            continue
        try:
            outcomes[case.name] = run_case(workdir, n, case)
        except CheckFailed as e:
            outcomes[case.name] = f"FAILED: {e}"
            failures.append(f"{case.name}: {e}")
    report("damaged files at start-up", outcomes)
    if failures:
        raise CheckFailed("; ".join(failures))
    return outcomes
