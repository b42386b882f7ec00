"""Kafka Streams 4.1.1 against both brokers: a word count with exactly_once_v2, killed with
SIGKILL while it runs and restarted, must count every word exactly once."""

from __future__ import annotations

import struct
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .support import Target, both, java_process, wait_for_line

Unique = Callable[[str], str]

VOCABULARY = [f"word{i}" for i in range(40)]


def lines(start: int, count: int) -> list[str]:
    return [
        " ".join(VOCABULARY[(i * 7 + j * 3) % len(VOCABULARY)] for j in range(i % 6 + 1))
        for i in range(start, start + count)
    ]


def produce(target: Target, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, key=str(i).encode(), value=value.encode())
    assert producer.flush(30) == 0


class Output:
    """The output topic read with read_committed: every (word, count) in order."""

    def __init__(self, target: Target, topic: str, partitions: int) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": target.bootstrap_servers,
                "group.id": f"{topic}-reader",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.records: list[tuple[str, int]] = []

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            key, value = message.key(), message.value()
            assert key is not None and value is not None
            self.records.append((key.decode(), struct.unpack(">q", value)[0]))

    def latest(self) -> dict[str, int]:
        return dict(self.records)


@both()
def test_word_count_exactly_once_across_a_sigkill(
    target: Target, java_classpath: str, unique: Unique, tmp_path: Path
) -> None:
    app, source, sink = unique("wordcount"), unique("lines"), unique("counts")
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    for future in admin.create_topics([NewTopic(source, 2, 1), NewTopic(sink, 2, 1)]).values():
        future.result(timeout=30)
    batches = [lines(0, 3000), lines(3000, 3000), lines(6000, 2000)]
    expected = Counter(w for batch in batches for line in batch for w in line.split())
    output = Output(target, sink, 2)
    args = (target.bootstrap_servers, app, source, sink, str(tmp_path / "state"))
    log = tmp_path / "streams.log"

    produce(target, source, batches[0])
    first = java_process(java_classpath, "WordCount", *args, log=log)
    try:
        wait_for_line(first, "RUNNING", 90)
        # Killed while it works: counts committed, more lines arriving.
        while not output.records:
            output.poll(0.5)
            assert first.poll() is None, log.read_text()[-3000:]
        produce(target, source, batches[1])
        time.sleep(0.5)
    finally:
        first.kill()
        first.wait()
    killed_at = output.latest()
    produce(target, source, batches[2])

    second = java_process(java_classpath, "WordCount", *args, log=log)
    try:
        wait_for_line(second, "RUNNING", 90)
        deadline = time.monotonic() + 90
        while output.latest() != expected and time.monotonic() < deadline:
            output.poll(1)
            assert second.poll() is None, log.read_text()[-3000:]
    finally:
        second.terminate()
        second.wait(60)
    output.consumer.close()

    assert killed_at != expected, "the first instance was killed after it had finished"
    assert output.latest() == expected
    # Exactly once: each word's committed counts only ever grow (a replay after the kill
    # would repeat or overshoot them).
    per_word: dict[str, list[int]] = {}
    for word, count in output.records:
        per_word.setdefault(word, []).append(count)
    for word, counts in per_word.items():
        assert counts == sorted(set(counts)), (word, counts)
        assert counts[-1] == expected[word]
