"""Record timestamp validation on append (the timestamp part of Kafka's `LogValidator`).

With `message.timestamp.type=CreateTime`, every record's timestamp must lie within
[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]; otherwise
the whole batch is refused with INVALID_TIMESTAMP and one record error per offending
record (its index in the batch). As in Kafka 3.9, the deprecated
`message.timestamp.difference.max.ms` stands in for either bound left at its default.

The Rust log does the rest of the validation without copying records into Python; this
check decodes the batches, so it runs only for topics that set a bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kafkars import _core
from kafkars.config.definition import LONG_MAX
from kafkars.protocol import Errors, RecordValidationError

NO_TIMESTAMP = -1


def _java_long(value: int) -> int:
    """`value` as a Java long would hold it (the bounds in the message can overflow)."""
    return (value + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class TimestampLimits:
    """How far before and after the broker's clock a CreateTime timestamp may be."""

    before_max_ms: int
    after_max_ms: int

    @classmethod
    def from_log_config(cls, config: Any) -> TimestampLimits | None:
        """The topic's limits, or None when nothing needs checking (LogAppendTime topics
        or both bounds unlimited)."""
        if str(config.get("message.timestamp.type")) != "CreateTime":
            return None
        difference = int(config.get("message.timestamp.difference.max.ms"))
        before = int(config.get("message.timestamp.before.max.ms"))
        after = int(config.get("message.timestamp.after.max.ms"))
        before = difference if before == LONG_MAX else before
        after = difference if after == LONG_MAX else after
        if before == LONG_MAX and after == LONG_MAX:
            return None
        return cls(before, after)

    def validate(self, records: Any, now_ms: int | None = None) -> None:
        """Raises RecordValidationError (INVALID_TIMESTAMP) if a record is out of range."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        for batch in _core.decode_batches(records.to_bytes()):
            errors = []
            for index, record in enumerate(batch.records()):
                ts = record.timestamp
                if ts == NO_TIMESTAMP:
                    continue
                diff = now - ts
                if diff > self.before_max_ms or -diff > self.after_max_ms:
                    errors.append(
                        (
                            index,
                            f"Timestamp {ts} of message with offset {record.offset} is out of "
                            f"range. The timestamp should be within "
                            f"[{_java_long(now - self.before_max_ms)}, "
                            f"{_java_long(now + self.after_max_ms)}]",
                        )
                    )
            if errors:
                raise RecordValidationError(
                    Errors.INVALID_TIMESTAMP,
                    "One or more records have been rejected due to invalid timestamp",
                    errors,
                )
