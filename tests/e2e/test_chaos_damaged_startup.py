"""A log dir damaged beyond what recovery repairs refuses the start in one line naming the
file (as Kafka fails the log dir), never with a traceback; what recovery can repair is
repaired (`make chaos` runs the full set of damaged-file cases)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkars.broker import Broker


def populated(tmp_path: Path, topic: str) -> Path:
    """A log dir with one topic of a few records, after a clean shutdown."""
    with Broker(process=True, log_dir=tmp_path, config={"auto.create.topics.enable": True}) as b:
        producer = Producer({"bootstrap.servers": b.bootstrap_servers})
        for i in range(10):
            producer.produce(topic, value=str(i).encode())
        assert producer.flush(30) == 0
    return tmp_path


def garbage(path: Path) -> None:
    path.write_bytes(b"\x91\x84" + os.urandom(200))


CASES: dict[str, Callable[[Path, str], Path]] = {
    "meta.properties not text": lambda d, _t: d / "meta.properties",
    "leader-epoch-checkpoint not text": lambda d, t: d / f"{t}-0" / "leader-epoch-checkpoint",
    "kafkars-metadata.json not text": lambda d, _t: d / "kafkars-metadata.json",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_damaged_file_refuses_start_in_one_line(tmp_path: Path, topic: str, case: str) -> None:
    log_dir = populated(tmp_path, topic)
    damaged = CASES[case](log_dir, topic)
    garbage(damaged)
    broker = Broker(process=True, log_dir=log_dir)
    with pytest.raises(RuntimeError, match="broker exited with 1"):
        broker.start()
    log = broker.server_log()
    fatal = [line for line in log.splitlines() if "Fatal error during start-up" in line]
    assert fatal, log
    assert damaged.name in fatal[-1]
    assert "Traceback" not in log


def test_non_numeric_broker_id_refuses_start_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=x\n")
    broker = Broker(process=True, log_dir=tmp_path)
    with pytest.raises(RuntimeError, match="broker exited with 1"):
        broker.start()
    log = broker.server_log()
    assert "Fatal error during start-up: log.dirs: malformed" in log
    assert "Traceback" not in log
