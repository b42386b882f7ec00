"""JBOD: a broker with two log dirs moving a partition between them (AlterReplicaLogDirs)
while an idempotent producer keeps writing, and DescribeLogDirs reporting where it is."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker
from kafkars.protocol import ApiKey, Errors
from kafkars.tools.log_dirs import alter_replica_log_dirs, describe_log_dirs

RECORDS = 3000


def _create_topic(broker: Broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    # Small segments: the moves copy closed segments and an active one.
    new = NewTopic(topic, 1, 1, config={"segment.bytes": "16384"})
    admin.create_topics([new])[topic].result(30)


def _dirs_of(broker: Broker, topic: str) -> dict[tuple[str, bool], dict[str, Any]]:
    """(log dir, is future) -> the partition's entry, for partition 0 of `topic`."""
    out = {}
    for result in describe_log_dirs(broker.bootstrap_servers):
        assert result["error_code"] == 0
        for t in result["topics"]:
            for p in t["partitions"]:
                if t["name"] == topic and p["partition_index"] == 0:
                    out[(result["log_dir"], p["is_future_key"])] = p
    return out


def _current_dir(broker: Broker, topic: str) -> str:
    current = [d for d, future in _dirs_of(broker, topic) if not future]
    assert len(current) == 1, current
    return current[0]


def _wait_moved(broker: Broker, topic: str, target: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        dirs = _dirs_of(broker, topic)
        if list(dirs) == [(target, False)]:
            return
        assert time.monotonic() < deadline, dirs
        time.sleep(0.02)


def _consume_all(broker: Broker, topic: str) -> list[tuple[int, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 60
    while len(got) < RECORDS and time.monotonic() < deadline:
        for m in consumer.consume(500, 1.0):
            assert m.error() is None, m.error()
            got.append((m.offset(), m.value()))
    # Anything beyond RECORDS would be a duplicate: read a little longer to see it.
    for m in consumer.consume(500, 1.0):
        got.append((m.offset(), m.value()))
    consumer.close()
    return got


def _check_records(got: list[tuple[int, bytes]]) -> None:
    assert len(got) == RECORDS
    assert [o for o, _ in got] == list(range(RECORDS))
    assert [v for _, v in got] == [str(i).encode() for i in range(RECORDS)]


def _partition_dirs(root: Path, topic: str) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(topic))


def test_moving_a_partition_back_and_forth_while_producing(
    make_broker: Callable[..., Broker], topic: str, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    broker = make_broker(log_dir=a, config={"log.dirs": f"{a},{b}"})
    _create_topic(broker, topic)
    start = _current_dir(broker, topic)
    other = str(b.resolve()) if start == str(a.resolve()) else str(a.resolve())

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 1,
            "batch.num.messages": 20,
        }
    )
    errors: list[Any] = []

    def produce() -> None:
        for i in range(RECORDS):
            producer.produce(
                topic, str(i).encode(), on_delivery=lambda e, m: e and errors.append(e)
            )
            if i % 50 == 0:
                producer.poll(0)
                time.sleep(0.002)
        producer.flush(30)

    writer = threading.Thread(target=produce)
    writer.start()
    targets = [other, start, other, start, other]
    for target in targets:
        time.sleep(0.1)
        results = alter_replica_log_dirs(broker.bootstrap_servers, {(topic, 0): target})
        assert results == {(topic, 0): 0}
        _wait_moved(broker, topic, target)
    writer.join(60)
    assert not writer.is_alive()
    assert errors == []
    _check_records(_consume_all(broker, topic))

    final = Path(targets[-1])
    old = Path(start)
    assert _partition_dirs(final, topic) == [f"{topic}-0"]
    assert _partition_dirs(old, topic) == []
    entry = _dirs_of(broker, topic)[(str(final), False)]
    assert entry["partition_size"] > 16384

    broker.restart()
    assert list(_dirs_of(broker, topic)) == [(str(final), False)]
    _check_records(_consume_all(broker, topic))
    assert _partition_dirs(old, topic) == []

    # Moving to where it is: a no-op success.
    assert alter_replica_log_dirs(broker.bootstrap_servers, {(topic, 0): str(final)}) == {
        (topic, 0): 0
    }
    assert list(_dirs_of(broker, topic)) == [(str(final), False)]


def test_alter_replica_log_dirs_errors(
    make_broker: Callable[..., Broker], topic: str, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    broker = make_broker(log_dir=a, config={"log.dirs": f"{a},{b}"})
    _create_topic(broker, topic)
    results = alter_replica_log_dirs(
        broker.bootstrap_servers,
        {
            (topic, 0): str(tmp_path / "not-a-log-dir"),
            ("no-such-topic", 0): str(b),
            ("x" * 249, 0): str(b),
        },
    )
    assert results == {
        (topic, 0): Errors.LOG_DIR_NOT_FOUND,
        ("no-such-topic", 0): Errors.REPLICA_NOT_AVAILABLE,
        ("x" * 249, 0): Errors.INVALID_TOPIC_EXCEPTION,
    }
    # The partition stayed where it was.
    assert len(_dirs_of(broker, topic)) == 1


@pytest.mark.parametrize("version", [1, 2])
def test_alter_replica_log_dirs_is_advertised(
    make_broker: Callable[..., Broker], tmp_path: Path, version: int
) -> None:
    from tests.e2e.raw_client import CodecConnection

    broker = make_broker(log_dir=tmp_path / "a")
    conn = CodecConnection(broker)
    versions = conn.call(int(ApiKey.API_VERSIONS), 3, {"client_software_name": "t"})
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in versions["api_keys"]}
    assert keys[int(ApiKey.ALTER_REPLICA_LOG_DIRS)] == (1, 2)
    body = {"dirs": [{"path": "/nowhere", "topics": [{"name": "t", "partitions": [0]}]}]}
    response = conn.call(int(ApiKey.ALTER_REPLICA_LOG_DIRS), version, body)
    assert response["results"] == [
        {"topic_name": "t", "partitions": [{"partition_index": 0, "error_code": 57}]}
    ]
    conn.close()


def test_log_dirs_tool_prints_kafkas_json(
    make_broker: Callable[..., Broker], topic: str, tmp_path: Path
) -> None:
    import json

    from click.testing import CliRunner

    from kafkars.tools.log_dirs import main

    a, b = tmp_path / "a", tmp_path / "b"
    broker = make_broker(log_dir=a, config={"log.dirs": f"{a},{b}"})
    _create_topic(broker, topic)
    args = ["--bootstrap-server", broker.bootstrap_servers, "--describe", "--topic-list", topic]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "Querying brokers for log directories information"
    assert lines[1].startswith("Received log directory information from brokers ")
    doc = json.loads(lines[2])
    assert doc["version"] == 1
    [entry] = doc["brokers"]
    dirs = {d["logDir"]: d for d in entry["logDirs"]}
    assert set(dirs) == {str(a.resolve()), str(b.resolve())}
    partitions = [p for d in dirs.values() for p in d["partitions"]]
    assert partitions == [{"partition": f"{topic}-0", "size": 0, "offsetLag": 0, "isFuture": False}]
    assert all(d["error"] is None for d in dirs.values())
    bad = CliRunner().invoke(main, [*args, "--broker-list", "42"])
    assert bad.exit_code == 1 and "42" in bad.output
