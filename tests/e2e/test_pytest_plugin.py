"""The `kafka_broker` fixture, as another project's test suite would use it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

USER_TEST = """
from confluent_kafka import Consumer, Producer, TopicPartition


def test_round_trip(kafka_broker):
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    p.produce("plugin-topic", b"hello", partition=0)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": "g"})
    c.assign([TopicPartition("plugin-topic", 0, 0)])
    m = c.poll(20)
    c.close()
    assert m is not None and m.error() is None and m.value() == b"hello"
"""


def test_fixture_in_a_foreign_suite(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    # A bare directory: only the installed entry point can supply the fixture.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
