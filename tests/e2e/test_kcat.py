"""The kcat scenarios from CONFORMANCE.md that need no consumer groups or transactions."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from kafkars.broker import Broker

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")


def kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    out = subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=True
    )
    return out.stdout


def test_produce_consume_metadata_and_offsets(broker: Broker, topic: str) -> None:
    b = broker.bootstrap_servers
    kcat(
        "-b",
        b,
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        "-K:",
        "-H",
        "h1=x",
        "-z",
        "gzip",
        stdin="k1:v1\nk2:v2\nk3:v3\n",
    )
    lines = kcat("-b", b, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J", "-q")
    records = [json.loads(line) for line in lines.splitlines() if line.strip()]
    assert [(r["key"], r["payload"]) for r in records] == [("k1", "v1"), ("k2", "v2"), ("k3", "v3")]
    assert [r["offset"] for r in records] == [0, 1, 2]
    assert records[0]["headers"] == ["h1", "x"]

    metadata = json.loads(kcat("-b", b, "-L", "-t", topic, "-J"))
    assert metadata["topics"][0]["topic"] == topic
    assert len(metadata["topics"][0]["partitions"]) == 4

    # Offset for timestamp 0: the first record.
    query = kcat("-b", b, "-Q", "-t", f"{topic}:0:0")
    assert "offset 0" in query


def test_idempotent_producer_connects(broker: Broker, topic: str) -> None:
    b = broker.bootstrap_servers
    kcat(
        "-b",
        b,
        "-P",
        "-t",
        topic,
        "-p",
        "2",
        "-X",
        "enable.idempotence=true",
        stdin="\n".join(str(i) for i in range(1, 1001)) + "\n",
    )
    out = kcat("-b", b, "-C", "-t", topic, "-p", "2", "-o", "beginning", "-e", "-q")
    assert out.split() == [str(i) for i in range(1, 1001)]
