"""Transaction markers: a COMMIT/ABORT control batch per partition of a transaction.

Written by the transaction coordinator when a transaction ends and by WriteTxnMarkers;
a marker on `__consumer_offsets` also makes the group coordinator apply or drop the
transaction's offsets.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

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
# Markers of different transactions (and partitions) in flight at once.
_SENDER_THREADS = 4


@dataclass(frozen=True)
class _Marker:
    """One transaction's marker for one partition, as the sender threads pass it on."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


class TransactionMarkerWriter:
    """Writes markers to local partitions itself; in cluster mode `leader_endpoint` finds
    the inter-broker endpoint of another broker's partitions, which get WriteTxnMarkers
    from the marker sender threads (Kafka's TransactionMarkerChannelManager), so no
    request handler waits on another broker."""

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
        self._sender: ThreadPoolExecutor | None = None
        if leader_endpoint is not None:
            self._sender = ThreadPoolExecutor(
                max_workers=_SENDER_THREADS, thread_name_prefix="TxnMarkerSenderThread"
            )

    def shutdown(self) -> None:
        if self._sender is not None:
            self._sender.shutdown(wait=False, cancel_futures=True)

    def write_txn_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
        done: Callable[[Errors], None],
    ) -> None:
        """Writes one COMMIT/ABORT marker; `done(error)` runs once it is written (in
        cluster mode: once the ISR has it, as Kafka appends markers with acks=all, so one
        lost with its leader cannot leave the transaction open on that partition). On
        `__consumer_offsets` the group coordinator then applies or drops the
        transaction's offsets."""

        def written(error: Errors, _info: Any = None) -> None:
            if error is Errors.NONE:
                if topic == GROUP_METADATA_TOPIC_NAME and self._group_coordinator is not None:
                    self._group_coordinator.complete_txn_offsets(producer_id, commit)
                if self._on_marker is not None:
                    self._on_marker(producer_id, (topic, partition))
            done(error)

        try:
            info = self._replica_manager.write_txn_marker(
                topic, partition, producer_id, producer_epoch, coordinator_epoch, commit=commit
            )
        except KafkaError as e:
            done(e.code)
            return
        if self._leader_endpoint is None:
            written(Errors.NONE)
            return
        self._replica_manager.delay_produce(
            topic, partition, info, int(_REMOTE_RETRY_S * 1000), written
        )

    def write_txn_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: list[tuple[str, int]],
        coordinator_epoch: int,
        done: Callable[[Errors], None],
    ) -> None:
        """The coordinator's markers for one transaction, one per partition; `done(error)`
        runs once all are written (the first error if one failed). A partition that no
        longer exists (its topic was deleted) needs none."""
        lock = threading.Lock()
        remaining = [len(partitions)]
        first_error = [Errors.NONE]

        def one_done(topic: str, partition: int, error: Errors) -> None:
            if error is Errors.UNKNOWN_TOPIC_OR_PARTITION:
                log.info("Skipping the transaction marker for deleted %s-%d", topic, partition)
                error = Errors.NONE
            with lock:
                if first_error[0] is Errors.NONE:
                    first_error[0] = error
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                done(first_error[0])

        if not partitions:
            done(Errors.NONE)
        for topic, partition in partitions:
            finished = partial(one_done, topic, partition)
            if self._sender is None:
                self.write_txn_marker(
                    topic,
                    partition,
                    producer_id,
                    producer_epoch,
                    coordinator_epoch,
                    commit=commit,
                    done=finished,
                )
            else:
                marker = _Marker(
                    topic, partition, producer_id, producer_epoch, coordinator_epoch, commit
                )
                self._sender.submit(self._write_anywhere, marker, finished)

    def _write_anywhere(self, marker: _Marker, done: Callable[[Errors], None]) -> None:
        """Cluster mode, on a marker sender thread: the marker goes to the partition's
        leader, here or over the wire, retried while leadership moves."""
        try:
            error = self._write_anywhere_blocking(marker)
        except Exception:
            log.exception(
                "Writing the transaction marker for %s-%d failed", marker.topic, marker.partition
            )
            error = Errors.UNKNOWN_SERVER_ERROR
        done(error)

    def _write_anywhere_blocking(self, marker: _Marker) -> Errors:
        assert self._leader_endpoint is not None
        deadline = time.monotonic() + _REMOTE_RETRY_S
        while True:
            try:
                # Raises UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does not have.
                leader, endpoint = self._leader_endpoint(marker.topic, marker.partition)
                if leader == self._broker_id:
                    code = self._write_local(marker)
                else:
                    if endpoint is None:
                        raise KafkaError(Errors.LEADER_NOT_AVAILABLE)
                    code = Errors(self._send(endpoint, marker))
                if code is Errors.NONE:
                    return code
                raise KafkaError(code)
            except (KafkaError, OSError) as e:
                code = e.code if isinstance(e, KafkaError) else Errors.NETWORK_EXCEPTION
                if code is Errors.UNKNOWN_TOPIC_OR_PARTITION or time.monotonic() > deadline:
                    return code
                # Leadership is moving or the leader is down: ask again shortly.
                time.sleep(0.1)

    def _write_local(self, marker: _Marker) -> Errors:
        """Writes a marker here from a sender thread (not a request handler): it waits
        for the append's completion callback."""
        written = threading.Event()
        outcome: list[Errors] = []

        def done(error: Errors) -> None:
            outcome.append(error)
            written.set()

        self.write_txn_marker(
            marker.topic,
            marker.partition,
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            commit=marker.commit,
            done=done,
        )
        # The append's own timeout answers first; this bound only guards a purgatory shut
        # down under it.
        return outcome[0] if written.wait(_REMOTE_RETRY_S + 5) else Errors.REQUEST_TIMED_OUT

    def _send(self, endpoint: tuple[str, int], marker: _Marker) -> int:
        body = {
            "markers": [
                {
                    "producer_id": marker.producer_id,
                    "producer_epoch": marker.producer_epoch,
                    "transaction_result": marker.commit,
                    "topics": [{"name": marker.topic, "partition_indexes": [marker.partition]}],
                    "coordinator_epoch": marker.coordinator_epoch,
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
