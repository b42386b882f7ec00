"""Kafka Connect 4.1.1 standalone against both brokers: the FileStream source connector
copies a file into a topic and the FileStream sink connector copies the topic into another
file, line for line, including lines appended while it runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.testing.zookeeper import free_port

from .support import Target, both, java_process

Unique = Callable[[str], str]

CONNECT_STANDALONE = "org.apache.kafka.connect.cli.ConnectStandalone"


def properties(path: Path, values: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def wait_for_lines(path: Path, count: int, timeout: float, log: Path) -> list[str]:
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.3)
    raise AssertionError(f"{len(lines)} of {count} lines in {path}:\n{log.read_text()[-4000:]}")


@both()
def test_file_stream_source_to_sink(
    target: Target, java_classpath: str, unique: Unique, tmp_path: Path
) -> None:
    topic = unique("connect")
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    first = [f"line {i} of the source file" for i in range(500)]
    source.write_text("".join(f"{line}\n" for line in first))
    converter = "org.apache.kafka.connect.storage.StringConverter"
    worker = properties(
        tmp_path / "worker.properties",
        {
            "bootstrap.servers": target.bootstrap_servers,
            "key.converter": converter,
            "value.converter": converter,
            "offset.storage.file.filename": tmp_path / "offsets",
            "offset.flush.interval.ms": 500,
            "listeners": f"http://127.0.0.1:{free_port()}",
        },
    )
    source_connector = properties(
        tmp_path / "source.properties",
        {
            "name": f"{topic}-source",
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": 1,
            "file": source,
            "topic": topic,
        },
    )
    sink_connector = properties(
        tmp_path / "sink.properties",
        {
            "name": f"{topic}-sink",
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": 1,
            "file": sink,
            "topics": topic,
            "consumer.override.auto.offset.reset": "earliest",
        },
    )
    log = tmp_path / "connect.log"
    process = java_process(
        java_classpath,
        CONNECT_STANDALONE,
        str(worker),
        str(source_connector),
        str(sink_connector),
        log=log,
    )
    try:
        assert wait_for_lines(sink, 500, 120, log) == first
        more = [f"appended line {i}" for i in range(100)]
        with source.open("a") as f:
            f.write("".join(f"{line}\n" for line in more))
        assert wait_for_lines(sink, 600, 60, log) == first + more
        # The sink's consumer group committed what it wrote.
        group = f"connect-{topic}-sink"
        deadline = time.monotonic() + 30
        committed = -1
        while committed != 600 and time.monotonic() < deadline:
            (offsets,) = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
            ).values()
            committed = offsets.result(timeout=30).topic_partitions[0].offset
            time.sleep(0.5)
        assert committed == 600
    finally:
        process.terminate()
        process.wait(60)
    assert process.returncode in (0, 143), log.read_text()[-4000:]
