"""Partitions this broker leads and the logs behind them (Kafka's `ReplicaManager`).

Record bytes stay in Rust: appends take `RecordSet` handles from the request, reads
return `FileRecords` handles that the network layer sends with sendfile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkars import _core
from kafkars.server.errors import Errors, KafkaError
from kafkars.server.log_validator import TimestampLimits

TopicPartition = tuple[str, int]


@dataclass
class Partition:
    """A partition led by this broker: its log and leader epoch."""

    topic: str
    partition: int
    log: Any  # _core.Log
    leader_epoch: int = 0
    # CreateTime bounds to check before the Rust log validates and appends; None: none.
    timestamp_limits: TimestampLimits | None = None

    def append_as_leader(self, records: Any) -> Any:
        limits = self.timestamp_limits
        if limits is not None:
            limits.validate(records)
        info = self.log.append_as_leader(records, self.leader_epoch)
        # One broker is the whole ISR: the high watermark follows the log end offset.
        self.log.high_watermark = self.log.log_end_offset
        return info


class ReplicaManager:
    """Owns the `Partition` objects and routes appends and reads to their logs."""

    def __init__(self, log_manager: Any, broker_id: int) -> None:
        self.log_manager = log_manager
        self.broker_id = broker_id
        self._partitions: dict[TopicPartition, Partition] = {}
        self._lock = threading.Lock()
        self._append_listeners: list[Callable[[TopicPartition], None]] = []

    def add_append_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        """Called after every append (delayed fetches watch partitions this way)."""
        self._append_listeners.append(listener)

    def become_leader(
        self,
        topic: str,
        partition: int,
        log_config: dict[str, Any],
        timestamp_limits: TimestampLimits | None = None,
    ) -> Partition:
        with self._lock:
            existing = self._partitions.get((topic, partition))
            if existing is not None:
                return existing
            log = self.log_manager.get_or_create_log(topic, partition, log_config)
            log.high_watermark = log.log_end_offset
            p = Partition(topic, partition, log, timestamp_limits=timestamp_limits)
            self._partitions[(topic, partition)] = p
            return p

    def update_config(
        self,
        topic: str,
        log_config: dict[str, Any],
        timestamp_limits: TimestampLimits | None = None,
    ) -> None:
        for (t, _), p in list(self._partitions.items()):
            if t == topic:
                p.log.update_config(log_config)
                p.timestamp_limits = timestamp_limits

    def remove_topic(self, topic: str) -> None:
        with self._lock:
            for tp in [tp for tp in self._partitions if tp[0] == topic]:
                del self._partitions[tp]
                self.log_manager.delete_log(tp[0], tp[1])

    def get_partition(self, topic: str, partition: int) -> Partition:
        p = self._partitions.get((topic, partition))
        if p is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        return p

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def append(self, topic: str, partition: int, records: Any) -> Any:
        """Validates and appends one partition's records; returns the Rust append info."""
        p = self.get_partition(topic, partition)
        try:
            info = p.append_as_leader(records)
        except _core.LogError as e:
            raise KafkaError(Errors(e.args[0]), e.args[1]) from None
        for listener in self._append_listeners:
            listener((topic, partition))
        return info

    def write_txn_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
    ) -> Any:
        """Appends the COMMIT/ABORT marker ending `producer_id`'s transaction on one
        partition (WriteTxnMarkers); returns the Rust append info."""
        p = self.get_partition(topic, partition)
        try:
            info = p.log.append_txn_marker(
                producer_id, producer_epoch, coordinator_epoch, commit, p.leader_epoch
            )
        except _core.LogError as e:
            raise KafkaError(Errors(e.args[0]), e.args[1]) from None
        # One broker is the whole ISR: the high watermark follows the log end offset.
        p.log.high_watermark = p.log.log_end_offset
        for listener in self._append_listeners:
            listener((topic, partition))
        return info

    def leader_epoch(self, topic: str, partition: int) -> int:
        p = self._partitions.get((topic, partition))
        return p.leader_epoch if p else -1
