"""Which CreateTime bounds a topic checks on append (Kafka 3.9's LogConfig fallbacks)."""

from __future__ import annotations

import pytest

from kafkars import _core
from kafkars.config import KafkaConfig, LogConfig
from kafkars.protocol import Errors, RecordValidationError
from kafkars.server.log_validator import TimestampLimits

BROKER = KafkaConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/x"})


def limits(**overrides: str) -> TimestampLimits | None:
    return TimestampLimits.from_log_config(LogConfig.from_layers(BROKER, overrides))


def test_unbounded_and_log_append_time_topics_check_nothing() -> None:
    assert limits() is None
    assert (
        limits(
            **{"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "10"}
        )
        is None
    )


def test_difference_max_ms_stands_in_for_an_unset_bound() -> None:
    assert limits(**{"message.timestamp.before.max.ms": "10"}) == TimestampLimits(10, 2**63 - 1)
    assert limits(**{"message.timestamp.difference.max.ms": "5"}) == TimestampLimits(5, 5)
    both = {"message.timestamp.difference.max.ms": "5", "message.timestamp.after.max.ms": "7"}
    assert limits(**both) == TimestampLimits(5, 7)


def test_each_out_of_range_record_is_reported() -> None:
    now = 1_700_000_000_000
    batch = _core.RecordSet(
        _core.build_batch(
            [(None, b"a", now - 11, []), (None, b"b", now, []), (None, b"c", now + 8, [])]
        )
    )
    with pytest.raises(RecordValidationError) as raised:
        TimestampLimits(10, 7).validate(batch, now)
    assert raised.value.code is Errors.INVALID_TIMESTAMP
    assert [i for i, _ in raised.value.record_errors] == [0, 2]
    assert raised.value.record_errors[0][1] == (
        f"Timestamp {now - 11} of message with offset 0 is out of range. "
        f"The timestamp should be within [{now - 10}, {now + 7}]"
    )
    TimestampLimits(11, 8).validate(batch, now)  # on the bounds: accepted
