"""A failed log dir (JBOD): with `log.dirs` of two dirs, one a 32 MiB tmpfs filled to the
brim, the whole full dir goes offline as in Kafka's LogDirFailureChannel: every partition
in it answers KAFKA_STORAGE_ERROR, DescribeLogDirs reports KAFKA_STORAGE_ERROR for it,
new partitions go to the other dir, and the other dir keeps serving. In a cluster the
controller moves the leadership of the failed dir's replicas to other brokers."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tests.cluster.helpers import (
    SESSION_TIMEOUT_MS,
    Producing,
    connection,
    needs_zookeeper,
    partition_metadata,
    quiet,
    wait_for,
)

from kafkars.broker import Broker
from kafkars.protocol import Errors
from kafkars.testing.cluster import Cluster
from kafkars.tools.log_dirs import describe_log_dirs

from .helpers import alive, produce_error, round_trip

MIB = 1 << 20


@pytest.fixture
def small_dir(tmp_path: Path) -> Iterator[Path]:
    """A 32 MiB tmpfs anyone may write to (mounted as root, or with passwordless sudo as
    on CI runners), unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    as_root = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if as_root and shutil.which("sudo") is None:
        pytest.skip("mounting a tmpfs needs root or sudo, and there is no sudo")
    done = subprocess.run(
        [*as_root, "mount", "-t", "tmpfs", "-o", "size=32m,mode=0777", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root or sudo: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run([*as_root, "umount", "-l", str(mount)], check=False)


def _partition_dirs(broker: Broker) -> dict[str, dict[tuple[str, int], int]]:
    """Log dir -> its error code under key ("", -1) and each (topic, partition) in it."""
    out: dict[str, dict[tuple[str, int], int]] = {}
    for result in describe_log_dirs(broker.bootstrap_servers):
        entry = out.setdefault(result["log_dir"], {("", -1): result["error_code"]})
        for t in result["topics"]:
            for p in t["partitions"]:
                entry[(t["name"], p["partition_index"])] = 0
    return out


def test_a_full_log_dir_goes_offline_and_the_other_serves(small_dir: Path, tmp_path: Path) -> None:
    big_dir = tmp_path / "big"
    config = {
        # The metadata file lives in the first dir, so the one that fails is second.
        "log.dirs": f"{big_dir},{small_dir}",
        "auto.create.topics.enable": False,
        "message.max.bytes": 2 * MIB,
        "socket.request.max.bytes": 4 * MIB,
    }
    with Broker(process=True, log_dir=tmp_path / "meta", config=config) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("jbod", 4, 1)])["jbod"].result(30)
        dirs = _partition_dirs(broker)
        small = str(small_dir.resolve())
        on_small = sorted(p for (t, p) in dirs[small] if t == "jbod")
        on_big = sorted(p for (t, p) in dirs[str(big_dir.resolve())] if t == "jbod")
        assert len(on_small) == 2 and len(on_big) == 2, dirs

        # Fill the tmpfs through one partition until the disk refuses.
        written, code = 0, 0
        while code == 0:
            code = produce_error(broker, "jbod", on_small[0], b"x" * MIB)
            written += 1
            assert written < 64, "a 32 MiB tmpfs took 64 MiB"
        assert code == Errors.KAFKA_STORAGE_ERROR

        # The whole dir is offline: its other partition too, as Kafka does.
        assert produce_error(broker, "jbod", on_small[1], b"small") == Errors.KAFKA_STORAGE_ERROR
        codes = {d: entries[("", -1)] for d, entries in _partition_dirs(broker).items()}
        assert codes == {small: Errors.KAFKA_STORAGE_ERROR, str(big_dir.resolve()): 0}

        # The other dir serves, and new partitions go there.
        assert produce_error(broker, "jbod", on_big[0], b"fine") == 0
        round_trip(broker, "jbod", partition=on_big[1])
        admin.create_topics([NewTopic("after", 2, 1)])["after"].result(30)
        after = _partition_dirs(broker)[str(big_dir.resolve())]
        assert {("after", 0), ("after", 1)} <= set(after)
        round_trip(broker, "after")
        assert alive(broker)
    # The shutdown closes the online dir's logs cleanly and leaves the failed dir alone.
    log = (broker.log_dir / ".kafkars-server.log").read_text()
    assert "log dir taken offline" in log
    assert "Traceback" not in log
    assert (big_dir / ".kafka_cleanshutdown").exists()
    assert not (small_dir / ".kafka_cleanshutdown").exists()


def _fill(directory: Path) -> None:
    """Writes a file into `directory` until its file system is full."""
    with open(directory / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * MIB)
                f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


def _read_partition(cluster: Cluster, topic: str, partition: int) -> list[bytes]:
    consumer = Consumer(
        quiet({**connection(cluster), "group.id": "unused", "enable.auto.commit": False})
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    out: list[bytes] = []
    idle = 0
    while idle < 5:
        messages = consumer.consume(1000, 1.0)
        idle = 0 if messages else idle + 1
        out += [m.value() or b"" for m in messages if m.error() is None]
    consumer.close()
    return out


def _controller_log(cluster: Cluster) -> str:
    return "".join(
        (b.log_dir / ".kafkars-server.log").read_text() for b in cluster.brokers.values()
    )


@needs_zookeeper
def test_a_failed_log_dir_moves_leadership_in_a_cluster(small_dir: Path, tmp_path: Path) -> None:
    """Cluster mode: broker 2's second log dir fills up under an acks=all producer; the
    broker announces the failure (a log dir event notification), the controller learns
    from its LeaderAndIsr answer which replicas are offline and moves their leadership
    to the other replicas; the producer goes on, and nothing acknowledged is lost."""
    victim, topic = 2, "jbod"
    big_dir = tmp_path / "big"
    config = {
        "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
        "auto.create.topics.enable": False,
        "min.insync.replicas": 2,
    }
    dirs = {"log.dirs": f"{big_dir},{small_dir}"}
    with Cluster(3, config=config, broker_configs={victim: dirs}) as cluster:
        admin = AdminClient(quiet(connection(cluster)))
        # Four partitions led by the victim: each of its dirs gets two.
        assignment = [[victim, 1, 3], [victim, 3, 1]] * 2
        admin.create_topics([NewTopic(topic, num_partitions=4, replica_assignment=assignment)])[
            topic
        ].result(30)
        broker = cluster.brokers[victim]
        small = str(small_dir.resolve())
        wait_for(lambda: len(_partition_dirs(broker)[small]) == 3, 30, "two partitions in each dir")
        on_small = sorted(p for (t, p) in _partition_dirs(broker)[small] if t == topic)
        on_big = sorted(
            p for (t, p) in _partition_dirs(broker)[str(big_dir.resolve())] if t == topic
        )

        producing = Producing(cluster, topic, on_small[0]).start()
        acked = producing.acked
        try:
            wait_for(lambda: len(acked) > 500, 30, "the first acknowledgements")
            # The index's first page is written by now (a full tmpfs cannot back a new page
            # of a mapped file), so what fails is the next append: ENOSPC.
            _fill(small_dir)
            wait_for(
                lambda: partition_metadata(cluster, topic, on_small[0])[0] not in (victim, -1),
                30,
                "a new leader of the partition in the failed dir",
            )
            count = len(acked)
            wait_for(lambda: len(acked) > count + 200, 30, "acknowledgements from the new leader")
        finally:
            producing.stop()
        assert not producing.errors, producing.errors[:3]

        # Both replicas in the failed dir moved and the victim left their ISRs; its
        # other dir still serves the partitions it leads there; the dir reports its error.
        for p in on_small:
            leader, replicas, isr = partition_metadata(cluster, topic, p)
            assert leader not in (victim, -1) and victim not in isr, (p, leader, isr)
        assert {partition_metadata(cluster, topic, p)[0] for p in on_big} == {victim}
        assert _partition_dirs(broker)[small][("", -1)] == Errors.KAFKA_STORAGE_ERROR
        round_trip(broker, topic, partition=on_big[0])

        values = _read_partition(cluster, topic, on_small[0])
        assert len(values) == len(set(values)), "a record was written twice"
        assert set(acked) <= set(values), "an acknowledged record was lost"
        log = (broker.log_dir / ".kafkars-server.log").read_text()
        assert "log dir taken offline" in log and "told the controller" in log
        # The victim's replicas went offline by the controller's decision, not its death.
        assert "replicas [" in _controller_log(cluster) and "(failed log dir)" in _controller_log(
            cluster
        )
