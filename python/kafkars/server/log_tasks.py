"""The LogManager's background work, as Kafka's `LogManager.startup` schedules it.

| task | period |
|---|---|
| `kafka-log-retention` | `log.retention.check.interval.ms` (5 min) |
| `kafka-log-flusher` | `log.flush.scheduler.interval.ms` (never) |
| `kafka-log-roll-flusher` | every second: segments a log rolled away from |
| `kafka-recovery-point-checkpoint` | `log.flush.offset.checkpoint.interval.ms` (60 s) |
| `kafka-log-start-offset-checkpoint` | `log.flush.start.offset.checkpoint.interval.ms` (60 s) |
| `kafka-delete-logs` | `.deleted` files after `log.segment.delete.delay.ms` |

All but the roll flusher and `kafka-delete-logs` start after `log.initial.task.delay.ms`
(30 s). The work itself runs in Rust with the GIL released. The log cleaner has its own threads
(`log.cleaner.threads`), started here when `log.cleaner.enable` is set.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kafkars.server.scheduler import KafkaScheduler

log = logging.getLogger("kafkars.server.LogManager")

# The longest sleep between `kafka-delete-logs` runs: a segment is removed at most this
# long after its file.delete.delay.ms has passed.
MAX_DELETE_CHECK_MS = 1000
# How soon after a roll the segment left behind is fsynced (Kafka: at once, async).
ROLL_FLUSH_MS = 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def schedule_log_tasks(scheduler: KafkaScheduler, log_manager: Any, config: Any) -> None:
    """Schedules the periodic log tasks and starts the cleaner."""
    get = config.get
    initial = int(get("log.initial.task.delay.ms"))

    def retention() -> None:
        deleted = log_manager.cleanup_logs(now_ms())
        if deleted:
            log.info("Log retention deleted %d segment(s)", deleted)

    def flusher() -> None:
        log_manager.flush_dirty_logs(now_ms())

    def delete_logs() -> None:
        # A deleted topic's logs wait the broker's file.delete.delay.ms, as in Kafka.
        log_manager.delete_pending(now_ms(), int(get("log.segment.delete.delay.ms")))

    scheduler.schedule(
        "kafka-log-retention", retention, initial, int(get("log.retention.check.interval.ms"))
    )
    scheduler.schedule(
        "kafka-log-flusher", flusher, initial, int(get("log.flush.scheduler.interval.ms"))
    )
    # Kafka flushes a segment once the log rolls past it (asynchronously, on its
    # scheduler); checking every second does the same off the append path.
    scheduler.schedule(
        "kafka-log-roll-flusher", log_manager.flush_rolled_segments, ROLL_FLUSH_MS, ROLL_FLUSH_MS
    )
    scheduler.schedule(
        "kafka-recovery-point-checkpoint",
        log_manager.checkpoint_recovery_points,
        initial,
        int(get("log.flush.offset.checkpoint.interval.ms")),
    )
    scheduler.schedule(
        "kafka-log-start-offset-checkpoint",
        log_manager.checkpoint_log_start_offsets,
        initial,
        int(get("log.flush.start.offset.checkpoint.interval.ms")),
    )
    expiration_ms = int(get("producer.id.expiration.ms"))

    def expire_producer_ids() -> None:
        now = now_ms()
        removed = sum(
            log_.remove_expired_producers(now, expiration_ms) for log_ in log_manager.all_logs()
        )
        if removed:
            log.info("Expired %d idle producer id(s)", removed)

    check_ms = int(get("producer.id.expiration.check.interval.ms"))
    scheduler.schedule("kafka-producer-expiration", expire_producer_ids, check_ms, check_ms)
    delete_period = max(10, min(int(get("log.segment.delete.delay.ms")), MAX_DELETE_CHECK_MS))
    scheduler.schedule("kafka-delete-logs", delete_logs, delete_period, delete_period)

    if get("log.cleaner.enable"):
        log_manager.start_cleaner(
            int(get("log.cleaner.threads")),
            int(get("log.cleaner.dedupe.buffer.size")),
            int(get("log.cleaner.io.buffer.size")),
            int(get("log.cleaner.backoff.ms")),
        )
