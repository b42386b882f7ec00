"""kafkars-dump-log against a segment shaped exactly like the one seed 003 dumps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkars import codec
from kafkars.log import LogDir, read_checkpoint

# Seed 003's `kafka-dump-log.sh --print-data-log` output for a segment Kafka wrote.
SEED_DUMP = """\
Starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 2 isTransactional: false isControl: false position: 0 CreateTime: 1562121985144 size: 82 magic: 2 compresscodec: NONE crc: 2717637561 isvalid: true
| offset: 0 CreateTime: 1562121985144 keysize: -1 valuesize: 14 sequence: -1 headerKeys: [] payload: hello, Kafka0!
baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 2 isTransactional: false isControl: false position: 82 CreateTime: 1562122005565 size: 82 magic: 2 compresscodec: NONE crc: 2618539239 isvalid: true
| offset: 1 CreateTime: 1562122005565 keysize: -1 valuesize: 14 sequence: -1 headerKeys: [] payload: hello, Kafka2!
"""  # noqa: E501


def write_seed_segment(directory: Path) -> Path:
    partition = directory / "reatest-0"
    partition.mkdir(parents=True)
    data = b"".join(
        codec.build_batch([(None, value, ts, [])], base_offset=offset, partition_leader_epoch=2)
        for offset, ts, value in [
            (0, 1562121985144, b"hello, Kafka0!"),
            (1, 1562122005565, b"hello, Kafka2!"),
        ]
    )
    path = partition / "00000000000000000000.log"
    path.write_bytes(data)
    return path


def dump(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "kafkars.tools.dump_log", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def test_dump_matches_kafka_output(tmp_path: Path) -> None:
    path = write_seed_segment(tmp_path)
    out = dump("--files", str(path), "--print-data-log")
    assert out == f"Dumping {path}\n" + SEED_DUMP


def test_batch_lines_only_without_print_data(tmp_path: Path) -> None:
    path = write_seed_segment(tmp_path)
    lines = dump("--files", str(path)).splitlines()
    assert len(lines) == 4
    assert not any(line.startswith("|") for line in lines)


def test_torn_tail_is_reported_not_printed(tmp_path: Path) -> None:
    path = write_seed_segment(tmp_path)
    with open(path, "ab") as f:
        f.write(codec.build_batch([(None, b"x", 1, [])], base_offset=2)[:30])
    out = dump("--files", str(path), "--print-data-log")
    assert "Found 30 invalid bytes at the end of 00000000000000000000.log" in out
    assert out.count("baseOffset:") == 2


def test_index_dump(tmp_path: Path) -> None:
    index = tmp_path / "00000000000000000536.index"
    import struct

    entries = [(52, 4160), (104, 8320)]
    index.write_bytes(b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries) + b"\0" * 64)
    out = dump("--files", str(index))
    assert out.splitlines()[1:] == ["offset: 588 position: 4160", "offset: 640 position: 8320"]


def test_log_dir_reader(tmp_path: Path) -> None:
    write_seed_segment(tmp_path)
    (p,) = LogDir(tmp_path).partitions()
    assert (p.topic, p.partition) == ("reatest", 0)
    assert [r.value for r in p.records()] == [b"hello, Kafka0!", b"hello, Kafka2!"]
    assert [r.offset for r in p.records(start_offset=1)] == [1]
    assert p.log_end_offset == 2
    assert p.offset_for_timestamp(1562121985145) == 1
    assert p.offset_for_timestamp(1562122005566) is None


def test_offsets_decoder_prints_consumer_offsets_records_as_json(tmp_path: Path) -> None:
    import json

    from kafkars.coordinator.group import records
    from kafkars.coordinator.group.group_metadata import OffsetAndMetadata

    partition = tmp_path / "__consumer_offsets-7"
    partition.mkdir()
    key = records.offset_commit_key("g1", "orders", 3)
    value = records.offset_commit_value(OffsetAndMetadata(42, 5, "meta", 1700000000000))
    path = partition / "00000000000000000000.log"
    path.write_bytes(codec.build_batch([(key, value, 1, []), (key, None, 2, [])]))

    out = dump("--files", str(path), "--offsets-decoder").splitlines()
    assert out[2].startswith("baseOffset: 0 lastOffset: 1 count: 2")
    first = out[3].split(" key: ")[1]
    key_json, payload = first.split(" payload: ")
    assert json.loads(key_json) == {
        "type": 1,
        "data": {"group": "g1", "topic": "orders", "partition": 3},
    }
    assert json.loads(payload) == {
        "version": 3,
        "data": {
            "offset": 42,
            "leaderEpoch": 5,
            "metadata": "meta",
            "commitTimestamp": 1700000000000,
        },
    }
    assert out[4].endswith(" payload: NULL")  # a tombstone

    bare = dump("--files", str(path), "--offsets-decoder", "--skip-record-metadata").splitlines()
    assert bare[2].startswith("key: {") and not any(line.startswith("baseOffset") for line in bare)


def test_files_that_are_not_segments_are_one_line_each(tmp_path: Path) -> None:
    good = write_seed_segment(tmp_path)
    notes = tmp_path / "notes.log"
    notes.write_text("not a segment\n")
    done = subprocess.run(
        [sys.executable, "-m", "kafkars.tools.dump_log", "--files", f"{notes},{good}"],
        capture_output=True,
        text=True,
    )
    # Before: a ValueError traceback, and the good file never dumped.
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {notes} is not a log segment or index: its name is not a base offset "
        "(like 00000000000000000000.log)\n"
    )
    assert done.stdout.count("baseOffset:") == 2


def test_empty_checkpoint_files_have_no_entries(tmp_path: Path) -> None:
    # As Kafka's CheckpointFile reads them: a file cut short before its entry count.
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    for text in ["", "0\n"]:
        checkpoint.write_text(text)
        assert read_checkpoint(checkpoint) == {}
    checkpoint.write_text("0\n1\nt 0 5\n")
    assert read_checkpoint(checkpoint) == {("t", 0): 5}
    checkpoint.write_text("1\n0\n")
    with pytest.raises(ValueError, match="version"):
        read_checkpoint(checkpoint)
