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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkars import _core
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


class _Destination:
    """One broker the markers go to, as Kafka's TransactionMarkerChannelManager keeps it:
    one connection, opened on first use and again after an error, with one request in
    flight that carries every marker queued for the broker meanwhile."""

    def __init__(self, endpoint: tuple[str, int], client_id: str, security: ClientSecurity):
        self.endpoint = endpoint
        self._client_id = client_id
        self._security = security
        self._in_flight = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[tuple[_Marker, Future[int]]] = []
        self._connection: _core.BrokerConnection | None = None

    def send(self, marker: _Marker) -> int:
        """The marker's error code from the broker; OSError when it cannot be reached."""
        answer: Future[int] = Future()
        with self._queue_lock:
            self._queue.append((marker, answer))
        with self._in_flight:
            # Another sender thread may have carried this marker in its request.
            if not answer.done():
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._send_batch(batch)
        return answer.result()

    def _send_batch(self, batch: list[tuple[_Marker, Future[int]]]) -> None:
        body = {
            "markers": [
                {
                    "producer_id": m.producer_id,
                    "producer_epoch": m.producer_epoch,
                    "transaction_result": m.commit,
                    "topics": [{"name": m.topic, "partition_indexes": [m.partition]}],
                    "coordinator_epoch": m.coordinator_epoch,
                }
                for m, _ in batch
            ]
        }
        try:
            codes = self._call(body)
        except Exception as e:
            if isinstance(e, OSError):
                # The next request reconnects (the broker restarted, the connection dropped).
                self.close()
            for _, answer in batch:
                answer.set_exception(e)
            return
        for m, answer in batch:
            key = (m.producer_id, m.topic, m.partition)
            answer.set_result(codes.get(key, int(Errors.UNKNOWN_SERVER_ERROR)))

    def _call(self, body: dict[str, Any]) -> dict[tuple[int, str, int], int]:
        if self._connection is None:
            self._connection = self._security.connect(
                self.endpoint, timeout_s=30.0, client_id=self._client_id
            )
        response = self._connection.call(WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body)
        return {
            (m["producer_id"], t["name"], p["partition_index"]): int(p["error_code"])
            for m in response["markers"]
            for t in m["topics"]
            for p in t["partitions"]
        }

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


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
        self._destinations: dict[tuple[str, int], _Destination] = {}
        self._destinations_lock = threading.Lock()
        if leader_endpoint is not None:
            self._sender = ThreadPoolExecutor(
                max_workers=_SENDER_THREADS, thread_name_prefix="TxnMarkerSenderThread"
            )

    def shutdown(self) -> None:
        if self._sender is not None:
            self._sender.shutdown(wait=False, cancel_futures=True)
        with self._destinations_lock:
            destinations, self._destinations = list(self._destinations.values()), {}
        for destination in destinations:
            destination.close()

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
        with self._destinations_lock:
            destination = self._destinations.get(endpoint)
            if destination is None:
                destination = self._destinations[endpoint] = _Destination(
                    endpoint, f"broker-{self._broker_id}-txn-markers", self._security
                )
        return destination.send(marker)
