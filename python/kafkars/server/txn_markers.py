"""Transaction markers: a COMMIT/ABORT control batch per partition of a transaction.

Written by the transaction coordinator when a transaction ends and by WriteTxnMarkers;
a marker on `__consumer_offsets` also makes the group coordinator apply or drop the
transaction's offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkars.controller.channel_manager import call_broker
from kafkars.coordinator.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkars.protocol import Errors, KafkaError
from kafkars.security.client_auth import PLAINTEXT, ClientSecurity
from kafkars.server.replica_manager import ReplicaManager

if TYPE_CHECKING:
    from kafkars.coordinator.group import GroupCoordinator

log = logging.getLogger("kafkars.server.KafkaServer")


WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION = 27, 1
# How long the coordinator keeps trying a partition leader that moves or is down.
_REMOTE_RETRY_S = 30.0


class TransactionMarkerWriter:
    """Writes markers to local partitions itself; in cluster mode `leader_endpoint` finds
    the inter-broker endpoint of another broker's partitions, which get WriteTxnMarkers
    (Kafka's TransactionMarkerChannelManager)."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator | None,
        *,
        broker_id: int = -1,
        leader_endpoint: Callable[[str, int], tuple[int, tuple[str, int] | None]] | None = None,
        on_marker: Callable[[int, tuple[str, int]], None] | None = None,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self._on_marker = on_marker
        self._replica_manager = replica_manager
        self._group_coordinator = group_coordinator
        self._broker_id = broker_id
        self._security = security
        self._leader_endpoint = leader_endpoint

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
        info = self._replica_manager.write_txn_marker(
            topic, partition, producer_id, producer_epoch, coordinator_epoch, commit=commit
        )
        if self._leader_endpoint is not None:
            # Kafka appends markers with acks=all: one lost with its leader would leave
            # the transaction open on that partition (and its last stable offset stuck).
            self._replica_manager.await_replication(
                topic, partition, info.last_offset + 1, _REMOTE_RETRY_S
            )
        if topic == GROUP_METADATA_TOPIC_NAME and self._group_coordinator is not None:
            self._group_coordinator.complete_txn_offsets(producer_id, commit)
        if self._on_marker is not None:
            self._on_marker(producer_id, (topic, partition))

    def write_txn_markers(
        self, producer_id: int, producer_epoch: int, commit: bool, partitions: list[tuple[str, int]]
    ) -> None:
        """The coordinator's markers for one transaction, one per partition. A partition
        that no longer exists (its topic was deleted) needs none."""
        for topic, partition in partitions:
            try:
                if self._leader_endpoint is None:
                    self.write_txn_marker(
                        topic, partition, producer_id, producer_epoch, 0, commit=commit
                    )
                else:
                    self._write_anywhere(topic, partition, producer_id, producer_epoch, commit)
            except KafkaError as e:
                if e.code is not Errors.UNKNOWN_TOPIC_OR_PARTITION:
                    raise
                log.info("Skipping the transaction marker for deleted %s-%d", topic, partition)

    def _write_anywhere(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """Cluster mode: the marker goes to the partition's leader, here or over the wire,
        retried while leadership moves."""
        assert self._leader_endpoint is not None
        deadline = time.monotonic() + _REMOTE_RETRY_S
        while True:
            try:
                # Raises UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does not have.
                leader, endpoint = self._leader_endpoint(topic, partition)
                if leader == self._broker_id:
                    self.write_txn_marker(
                        topic, partition, producer_id, producer_epoch, 0, commit=commit
                    )
                    return
                if endpoint is None:
                    raise KafkaError(Errors.LEADER_NOT_AVAILABLE)
                code = self._send(endpoint, topic, partition, producer_id, producer_epoch, commit)
                if code == 0:
                    return
                raise KafkaError(Errors(code))
            except (KafkaError, OSError) as e:
                code = e.code if isinstance(e, KafkaError) else Errors.NETWORK_EXCEPTION
                if code is Errors.UNKNOWN_TOPIC_OR_PARTITION or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _send(
        self,
        endpoint: tuple[str, int],
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
    ) -> int:
        body = {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "transaction_result": commit,
                    "topics": [{"name": topic, "partition_indexes": [partition]}],
                    "coordinator_epoch": 0,
                }
            ]
        }
        response = call_broker(
            endpoint,
            WRITE_TXN_MARKERS,
            WRITE_TXN_MARKERS_VERSION,
            body,
            client_id=f"broker-{self._broker_id}-txn-markers",
            security=self._security,
        )
        return int(response["markers"][0]["topics"][0]["partitions"][0]["error_code"])
