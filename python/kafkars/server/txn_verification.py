"""KIP-890 verification of a transactional write: is the partition in the producer's open
transaction? Asked of the transaction's coordinator, which is this broker's own coordinator
on a single broker and, in a cluster, often another broker: the partition leader then asks
it with AddPartitionsToTxn (v4, verify_only), as Kafka's AddPartitionsToTxnManager does,
and remembers a positive answer until the transaction's marker reaches the partition."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkars.controller.channel_manager import call_broker
from kafkars.protocol import Errors
from kafkars.security.client_auth import PLAINTEXT, ClientSecurity

if TYPE_CHECKING:
    from kafkars.coordinator.transaction import TransactionCoordinator

ADD_PARTITIONS_TO_TXN, VERIFY_VERSION = 24, 4

Endpoint = Callable[[str], "tuple[str, int] | None"]
TopicPartition = tuple[str, int]


class TransactionVerifier:
    """Verification by this broker's own coordinator (every transactional id is its own on
    a single broker)."""

    def __init__(self, coordinator: TransactionCoordinator) -> None:
        self._coordinator = coordinator

    def check(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> Errors:
        """The coordinator's own answer, as its verify_partitions gives it
        (TxnOffsetCommit's check)."""
        return self._coordinator.verify_partitions(
            transactional_id, producer_id, producer_epoch, [tp]
        )[tp]

    def verify(
        self,
        transactional_id: str | None,
        producer_id: int,
        producer_epoch: int,
        tp: TopicPartition,
    ) -> Errors:
        """A transactional Produce's check, with the errors producers expect."""
        return self._coordinator.verify_produce(transactional_id, producer_id, producer_epoch, tp)

    def forget(self, producer_id: int, tp: TopicPartition) -> None:
        """The transaction's marker reached the partition (nothing is remembered here)."""


class ClusterTransactionVerifier(TransactionVerifier):
    """Verification in a cluster: transactional ids this broker coordinates are checked
    here, the others with their coordinator over the wire."""

    def __init__(
        self,
        coordinator: TransactionCoordinator,
        broker_id: int,
        coordinator_endpoint: Endpoint,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        super().__init__(coordinator)
        self._broker_id = broker_id
        self._security = security
        self._coordinator_endpoint = coordinator_endpoint
        self._verified: set[tuple[int, int, str, int]] = set()
        self._lock = threading.Lock()

    def check(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> Errors:
        if self._coordinator.is_coordinator(transactional_id):
            return super().check(transactional_id, producer_id, producer_epoch, tp)
        code = self._ask(transactional_id, producer_id, producer_epoch, tp)
        return Errors.COORDINATOR_NOT_AVAILABLE if code is None else code

    def verify(
        self,
        transactional_id: str | None,
        producer_id: int,
        producer_epoch: int,
        tp: TopicPartition,
    ) -> Errors:
        if not transactional_id or self._coordinator.is_coordinator(transactional_id):
            return super().verify(transactional_id, producer_id, producer_epoch, tp)
        code = self._ask(transactional_id, producer_id, producer_epoch, tp)
        if code is None:
            return Errors.NOT_ENOUGH_REPLICAS  # retriable for the producer
        if code in (Errors.INVALID_PRODUCER_ID_MAPPING, Errors.TRANSACTION_ABORTABLE):
            return Errors.INVALID_TXN_STATE
        if code is Errors.PRODUCER_FENCED:
            return Errors.INVALID_PRODUCER_EPOCH
        return code

    def _ask(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> Errors | None:
        """The remote coordinator's own answer, or None when it cannot be reached."""
        key = (producer_id, producer_epoch, *tp)
        with self._lock:
            if key in self._verified:
                return Errors.NONE
        endpoint = self._coordinator_endpoint(transactional_id)
        if endpoint is None:
            return Errors.COORDINATOR_NOT_AVAILABLE
        body = {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "verify_only": True,
                    "topics": [{"name": tp[0], "partitions": [tp[1]]}],
                }
            ]
        }
        try:
            response = call_broker(
                endpoint,
                ADD_PARTITIONS_TO_TXN,
                VERIFY_VERSION,
                body,
                client_id=f"broker-{self._broker_id}-txn-verification",
                timeout_s=10,
                security=self._security,
            )
        except OSError:
            return None
        result = response["results_by_transaction"][0]["topic_results"][0]
        code = Errors(result["results_by_partition"][0]["partition_error_code"])
        if code is Errors.NONE:
            with self._lock:
                self._verified.add(key)
        return code

    def forget(self, producer_id: int, tp: TopicPartition) -> None:
        """The transaction's marker reached the partition: the next one verifies again."""
        with self._lock:
            self._verified = {k for k in self._verified if (k[0], k[2], k[3]) != (producer_id, *tp)}
