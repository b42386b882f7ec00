"""The Rust storage layer through the bindings: append, read, lookups, restart, recovery,
and kafkars-dump-log / kafkars.log on what it wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkars import _core, codec
from kafkars.log import LogDir
from kafkars.protocol import KafkaError

SMALL_SEGMENTS = {"segment_bytes": 4096, "index_interval_bytes": 512}


def open_manager(path: Path) -> _core.LogManager:
    manager = _core.LogManager([str(path)], 1, "test-cluster")
    manager.load_logs(1, {}, {})
    return manager


def lead(manager: _core.LogManager, topic: str, settings: dict[str, object]) -> _core.Partition:
    """The partition `topic`-0 led by broker 1 alone: appends move its high watermark."""
    partition = _core.Partition(manager.get_or_create_log(topic, 0, settings), 1)
    partition.make_leader(0, [1], [1])
    return partition


def batch(start_ts: int, n: int, size: int = 100, compression: str = "none") -> _core.RecordSet:
    records = [(f"k{i}".encode(), b"v" * size, start_ts + i, [("h", b"x")]) for i in range(n)]
    return _core.RecordSet(codec.build_batch(records, compression=compression))


def test_append_read_and_lookups(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    partition = lead(manager, "orders", SMALL_SEGMENTS)
    log = partition.log
    for i in range(20):
        info = partition.append_records_to_leader(batch(1000 + i * 10, 10), 1)
        assert info.first_offset == i * 10
        assert info.last_offset == i * 10 + 9
    assert log.log_end_offset == 200
    assert log.num_segments > 1, "small segment.bytes rolls segments"
    assert log.high_watermark == log.log_end_offset
    # An offset inside a batch returns the whole batch.
    records = log.read(15, 1_000_000, log.high_watermark, True)
    (first, *_) = codec.decode_batches(records.read_bytes())
    assert (first.base_offset, first.last_offset) == (10, 19)
    assert log.fetch_offset_by_timestamp(1105)[0] == 105
    assert log.fetch_offset_by_timestamp(-2)[0] == 0
    assert log.fetch_offset_by_timestamp(-1)[0] == 200
    with pytest.raises(KafkaError) as err:
        log.read(500, 100, 200, True)
    assert err.value.args[0] == 1  # OFFSET_OUT_OF_RANGE
    manager.shutdown()


def test_rolled_segments_are_flushed_and_move_the_recovery_point(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    partition = lead(manager, "rolled", SMALL_SEGMENTS)
    log = partition.log
    for i in range(20):
        partition.append_records_to_leader(batch(1000 + i * 10, 10), 1)
    assert log.num_segments > 1 and log.recovery_point == 0
    assert manager.flush_rolled_segments() == 1
    # Up to the active segment's base offset: every offset before it is on disk.
    assert 0 < log.recovery_point < log.log_end_offset
    # Nothing new rolled: nothing to flush.
    assert manager.flush_rolled_segments() == 0
    manager.shutdown()


def test_bad_batches_get_kafka_error_codes(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    partition = lead(manager, "t", {"max_message_bytes": 500})
    log = partition.log
    corrupt = bytearray(codec.build_batch([(b"k", b"v" * 50, 1, [])]))
    corrupt[-1] ^= 1
    with pytest.raises(KafkaError) as err:
        partition.append_records_to_leader(_core.RecordSet(bytes(corrupt)), 1)
    assert err.value.args[0] == 2  # CORRUPT_MESSAGE
    with pytest.raises(KafkaError) as err:
        partition.append_records_to_leader(batch(1, 10, size=200), 1)
    assert err.value.args[0] == 10  # MESSAGE_TOO_LARGE
    compacted_partition = lead(manager, "c", {"compacted": True})
    keyless = _core.RecordSet(codec.build_batch([(None, b"v", 1, [])]))
    with pytest.raises(KafkaError) as err:
        compacted_partition.append_records_to_leader(keyless, 1)
    assert err.value.args[0] == 87  # INVALID_RECORD
    assert log.log_end_offset == 0
    manager.shutdown()


def test_clean_restart_and_unclean_recovery(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    partition = lead(manager, "t", SMALL_SEGMENTS)
    log = partition.log
    for i in range(10):
        partition.append_records_to_leader(batch(i, 5, compression="zstd"), 1)
    manager.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()

    manager = _core.LogManager([str(tmp_path)], 1, "test-cluster")
    report = manager.load_logs(1, {}, {"t": SMALL_SEGMENTS})
    assert report["recovered"] == [] and report["segments_recovered"] == 0
    log = manager.get_log("t", 0)
    assert log.log_end_offset == 50
    # Simulate a crash: no clean shutdown, and a torn batch at the end of the active segment.
    del partition, log, manager
    (tmp_path / ".kafka_cleanshutdown").unlink(missing_ok=True)
    active = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(codec.build_batch([(b"k", b"torn", 1, [])], base_offset=50)[:40])
    import gc

    gc.collect()
    manager = _core.LogManager([str(tmp_path)], 1, "test-cluster")
    report = manager.load_logs(1, {}, {"t": SMALL_SEGMENTS})
    assert report["recovered"] == ["t-0"]
    assert report["truncated_bytes"] == 40
    assert manager.get_log("t", 0).log_end_offset == 50
    manager.shutdown()


def test_second_manager_on_a_dir_is_refused(tmp_path: Path) -> None:
    first = open_manager(tmp_path)
    with pytest.raises(KafkaError):
        _core.LogManager([str(tmp_path)], 1, "test-cluster")
    with pytest.raises(KafkaError, match="broker.id"):
        first.shutdown()
        _core.LogManager([str(tmp_path)], 2, "test-cluster")


def test_dump_log_and_log_reader_on_broker_written_segments(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    partition = lead(manager, "t", SMALL_SEGMENTS)
    for i in range(30):
        partition.append_records_to_leader(batch(1000 + i, 3, compression="lz4"), 1)
    manager.shutdown()
    first = tmp_path / "t-0" / "00000000000000000000.log"
    out = subprocess.run(
        [sys.executable, "-m", "kafkars.tools.dump_log", "--files", str(first), "--print-data-log"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "compresscodec: LZ4" in out and "isvalid: true" in out
    assert (
        "| offset: 0 CreateTime: 1000 keysize: 2 valuesize: 100 sequence: -1 headerKeys: [h]" in out
    )
    index = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkars.tools.dump_log",
            "--files",
            str(first.with_suffix(".index")),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "offset: " in index and "position: " in index
    (p,) = LogDir(tmp_path).partitions()
    assert [r.offset for r in p.records()] == list(range(90))
    assert p.log_end_offset == 90


def test_transaction_markers_and_the_last_stable_offset(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    partition = lead(manager, "txns", SMALL_SEGMENTS)
    log = partition.log
    records = [(None, b"v", 1_000, []), (None, b"w", 1_001, [])]
    txn = _core.build_batch(
        records, producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    partition.append_records_to_leader(_core.RecordSet(txn), 1)
    assert log.last_stable_offset == 0
    marker = partition.append_txn_marker(9, 0, 1, False)
    assert marker.first_offset == 2
    assert log.last_stable_offset == 3
    assert log.aborted_transactions(0, 3) == [(9, 0)]
    # Producer state: the epoch and the last sequence of producer 9.
    assert log.producer_state(9) == (0, 1)
    assert log.producer_state(10) is None
    manager.shutdown()
