"""Several log dirs (JBOD) on each broker: DescribeLogDirs and AlterReplicaLogDirs across
them, as a single Apache Kafka node with two `log.dirs` answers."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkars.broker import Broker
from kafkars.protocol import ApiKey
from kafkars.testing.reference_kafka import ReferenceKafka

from .compare import Pair, Report
from .conftest import COMMON_CONFIG
from .known import KNOWN_DIFFERENCES
from .test_records import seed


@pytest.fixture(scope="module")
def jbod(report: Report) -> Iterator[tuple[Pair, dict[str, list[str]]]]:
    with tempfile.TemporaryDirectory(prefix="jbod-") as root:
        dirs = {
            broker: [str(Path(root) / broker / f"jbod-{x}") for x in "ab"]
            for broker in ("kafka", "kafkars")
        }
        kafka_config = {k: v for k, v in COMMON_CONFIG.items() if k not in ("node.id", "broker.id")}
        kafka_config["log.dirs"] = ",".join(dirs["kafka"])
        ours = {**COMMON_CONFIG, "log.dirs": ",".join(dirs["kafkars"])}
        with (
            ReferenceKafka(
                node_id=1, config=kafka_config, features={"transaction.version": 1}
            ) as kafka,
            Broker(process=True, log_dir=dirs["kafkars"][0], config=ours) as broker,
        ):
            pair = Pair(
                kafka.bootstrap_servers, broker.bootstrap_servers, report, KNOWN_DIFFERENCES
            )
            yield pair, dirs
            pair.close()


def describe(topic: str) -> dict[str, Any]:
    return {"topics": [{"topic": topic, "partitions": [0, 1]}]}


def test_describe_and_move_across_log_dirs(
    jbod: tuple[Pair, dict[str, list[str]]], name: str
) -> None:
    """Both partitions moved to the second dir (where each broker first put them is its
    own choice), then described."""
    pair, dirs = jbod
    seed(pair, name, partitions=2)
    both = {
        broker: conn.call(
            ApiKey.ALTER_REPLICA_LOG_DIRS,
            2,
            {"dirs": [{"path": dirs[broker][1], "topics": [{"name": name, "partitions": [0, 1]}]}]},
        )
        for broker, conn in pair.conns.items()
    }
    for broker, response in both.items():
        [result] = response["results"]
        assert [p["error_code"] for p in result["partitions"]] == [0, 0], (broker, response)
    # Both finish the moves in the background.
    deadline = time.monotonic() + 30
    while True:
        moved = {}
        for broker, conn in pair.conns.items():
            response = conn.call(ApiKey.DESCRIBE_LOG_DIRS, 4, describe(name))
            moved[broker] = sorted(
                p["partition_index"]
                for result in response["results"]
                if result["log_dir"] == dirs[broker][1]
                for t in result["topics"]
                for p in t["partitions"]
                if not p["is_future_key"]
            ) == [0, 1] and all(
                not t["partitions"]
                for result in response["results"]
                if result["log_dir"] == dirs[broker][0]
                for t in result["topics"]
            )
        if all(moved.values()):
            break
        assert time.monotonic() < deadline, moved
        time.sleep(0.1)
    pair.check(ApiKey.DESCRIBE_LOG_DIRS, describe(name), scenario="two log dirs, after moves")
    pair.check(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        {"dirs": [{"path": "/nonexistent/jbod-c", "topics": [{"name": name, "partitions": [1]}]}]},
        scenario="a dir outside log.dirs",
    )
