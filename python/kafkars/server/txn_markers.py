"""Transaction markers: a COMMIT/ABORT control batch per partition of a transaction.

Written by the transaction coordinator when a transaction ends and by WriteTxnMarkers;
a marker on `__consumer_offsets` also makes the group coordinator apply or drop the
transaction's offsets.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkars.coordinator.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkars.server.errors import Errors, KafkaError
from kafkars.server.replica_manager import ReplicaManager

if TYPE_CHECKING:
    from kafkars.coordinator.group import GroupCoordinator

log = logging.getLogger("kafkars.server.KafkaServer")


class TransactionMarkerWriter:
    def __init__(
        self, replica_manager: ReplicaManager, group_coordinator: GroupCoordinator | None
    ) -> None:
        self._replica_manager = replica_manager
        self._group_coordinator = group_coordinator

    def write_txn_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
    ) -> None:
        """Writes one COMMIT/ABORT marker; on `__consumer_offsets` the group coordinator
        then applies or drops the transaction's offsets."""
        self._replica_manager.write_txn_marker(
            topic, partition, producer_id, producer_epoch, coordinator_epoch, commit=commit
        )
        if topic == GROUP_METADATA_TOPIC_NAME and self._group_coordinator is not None:
            self._group_coordinator.complete_txn_offsets(producer_id, commit)

    def write_txn_markers(
        self, producer_id: int, producer_epoch: int, commit: bool, partitions: list[tuple[str, int]]
    ) -> None:
        """The coordinator's markers for one transaction, one per partition. A partition
        that no longer exists (its topic was deleted) needs none."""
        for topic, partition in partitions:
            try:
                self.write_txn_marker(
                    topic, partition, producer_id, producer_epoch, 0, commit=commit
                )
            except KafkaError as e:
                if e.code is not Errors.UNKNOWN_TOPIC_OR_PARTITION:
                    raise
                log.info("Skipping the transaction marker for deleted %s-%d", topic, partition)
