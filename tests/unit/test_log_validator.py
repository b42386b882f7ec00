"""The Rust LogValidator through the bindings: which CreateTime bounds a topic checks on
append (Kafka 3.9's LogConfig fallbacks), and the per-record errors of a refused batch
(timestamps out of range, keyless records on compacted topics)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from kafkars import _core
from kafkars.config import KafkaConfig, LogConfig
from kafkars.protocol import Errors, KafkaError, RecordValidationError
from kafkars.server.dynamic_config import storage_settings
from kafkars.server.replica_manager import ReplicaManager

BROKER = KafkaConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/x"})
LONG_MAX = 2**63 - 1
HOUR = 3_600_000
OUT_OF_RANGE = re.compile(
    r"Timestamp (-?\d+) of message with offset (\d+) is out of range\. "
    r"The timestamp should be within \[(-?\d+), (-?\d+)\]"
)


def settings(**overrides: str) -> dict[str, object]:
    return storage_settings(LogConfig.from_layers(BROKER, overrides))


def bounds(**overrides: str) -> tuple[object, object]:
    s = settings(**overrides)
    return s["message_timestamp_before_max_ms"], s["message_timestamp_after_max_ms"]


def java_long(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def replica_manager(tmp_path: Path):
    manager = _core.LogManager([str(tmp_path)], 1, "test-cluster")
    manager.load_logs(1, {}, {})
    yield ReplicaManager(manager, 1)
    manager.shutdown()


def records(*entries: tuple[bytes | None, int]) -> _core.RecordSet:
    return _core.RecordSet(_core.build_batch([(key, b"v", ts, []) for key, ts in entries]))


def test_unbounded_by_default() -> None:
    assert bounds() == (LONG_MAX, LONG_MAX)


def test_difference_max_ms_stands_in_for_an_unset_bound() -> None:
    assert bounds(**{"message.timestamp.before.max.ms": "10"}) == (10, LONG_MAX)
    assert bounds(**{"message.timestamp.difference.max.ms": "5"}) == (5, 5)
    both = {"message.timestamp.difference.max.ms": "5", "message.timestamp.after.max.ms": "7"}
    assert bounds(**both) == (5, 7)


def test_log_append_time_topics_take_any_timestamp(replica_manager: ReplicaManager) -> None:
    config = {"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "10"}
    replica_manager.become_leader("t", 0, settings(**config))
    assert replica_manager.append("t", 0, records((None, now_ms() - HOUR))).first_offset == 0


def test_each_out_of_range_record_is_reported(replica_manager: ReplicaManager) -> None:
    config = {"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "60000"}
    replica_manager.become_leader("t", 0, settings(**config))
    start = now_ms()
    batch = records((None, start - HOUR), (None, start), (None, start + HOUR))
    with pytest.raises(RecordValidationError) as raised:
        replica_manager.append("t", 0, batch)
    assert raised.value.code is Errors.INVALID_TIMESTAMP
    assert raised.value.message == "One or more records have been rejected due to invalid timestamp"
    assert [i for i, _ in raised.value.record_errors] == [0, 2]
    for (index, message), ts in zip(
        raised.value.record_errors, [start - HOUR, start + HOUR], strict=True
    ):
        match = OUT_OF_RANGE.fullmatch(message)
        assert match, message
        low, high = int(match[3]), int(match[4])
        assert (int(match[1]), int(match[2])) == (ts, index)
        assert start - 60000 <= low <= now_ms() - 60000 and high - low == 120000
    # Nothing of the refused batch was appended; within the bounds is accepted.
    now = now_ms()
    info = replica_manager.append("t", 0, records((None, now - 30000), (None, now + 30000)))
    assert (info.first_offset, info.last_offset) == (0, 1)


def test_bounds_wrap_in_the_message_as_java_longs(replica_manager: ReplicaManager) -> None:
    after = LONG_MAX - 1  # not unlimited: the bound after now overflows a long
    replica_manager.become_leader(
        "t",
        0,
        settings(
            **{
                "message.timestamp.before.max.ms": "1000",
                "message.timestamp.after.max.ms": str(after),
            }
        ),  # fmt: skip
    )
    with pytest.raises(RecordValidationError) as raised:
        replica_manager.append("t", 0, records((None, now_ms() - HOUR)))
    [(_, message)] = raised.value.record_errors
    match = OUT_OF_RANGE.fullmatch(message)
    assert match, message
    low, high = int(match[3]), int(match[4])
    assert high < 0 and high == java_long(low + 1000 + after)


def test_keyless_records_on_compacted_topics(replica_manager: ReplicaManager) -> None:
    replica_manager.become_leader("c", 0, settings(**{"cleanup.policy": "compact"}))
    batch = records((None, 1), (b"k", 2), (None, 3))
    with pytest.raises(RecordValidationError) as raised:
        replica_manager.get_partition("c", 0).append_records_to_leader(batch, 1)
    assert isinstance(raised.value, KafkaError)
    code, message = raised.value.args
    record_errors = raised.value.record_errors
    error = "Compacted topic cannot accept message without key in topic partition c-0"
    assert code == Errors.INVALID_RECORD
    assert record_errors == [(0, error), (2, error)]
    assert message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=0, message='{error}'), "
        f"RecordError(batchIndex=2, message='{error}')]"
    )
    assert replica_manager.append("c", 0, records((b"k", 1))).first_offset == 0
