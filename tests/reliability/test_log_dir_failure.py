"""A failed log dir (JBOD): with `log.dirs` of two dirs, one a 32 MiB tmpfs filled to the
brim, the whole full dir goes offline as in Kafka's LogDirFailureChannel: every partition
in it answers KAFKA_STORAGE_ERROR, DescribeLogDirs reports KAFKA_STORAGE_ERROR for it,
new partitions go to the other dir, and the other dir keeps serving."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker
from kafkars.protocol import Errors
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
