"""KIP-890 verification when the transaction's coordinator is another broker (cluster
mode): the partition leader asks it with AddPartitionsToTxn (v4, verify_only), as Kafka's
AddPartitionsToTxnManager does, and remembers a positive answer until the transaction's
marker reaches the partition."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kafkars.controller.channel_manager import call_broker
from kafkars.protocol import Errors
from kafkars.security.client_auth import PLAINTEXT, ClientSecurity

ADD_PARTITIONS_TO_TXN, VERIFY_VERSION = 24, 4

Endpoint = Callable[[str], "tuple[str, int] | None"]


class TransactionVerifier:
    def __init__(
        self, broker_id: int, coordinator_endpoint: Endpoint, security: ClientSecurity = PLAINTEXT
    ) -> None:
        self._broker_id = broker_id
        self._security = security
        self._coordinator_endpoint = coordinator_endpoint
        self._verified: set[tuple[int, int, str, int]] = set()
        self._lock = threading.Lock()

    def check(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: tuple[str, int]
    ) -> Errors | None:
        """The coordinator's own answer (as its verify_partitions gives it), or None when
        it cannot be reached."""
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

    def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: tuple[str, int]
    ) -> Errors:
        """A transactional Produce's check, with the errors producers expect."""
        code = self.check(transactional_id, producer_id, producer_epoch, tp)
        if code is None:
            return Errors.NOT_ENOUGH_REPLICAS  # retriable for the producer
        if code in (Errors.INVALID_PRODUCER_ID_MAPPING, Errors.TRANSACTION_ABORTABLE):
            return Errors.INVALID_TXN_STATE
        if code is Errors.PRODUCER_FENCED:
            return Errors.INVALID_PRODUCER_EPOCH
        return code

    def forget(self, producer_id: int, tp: tuple[str, int]) -> None:
        """The transaction's marker reached the partition: the next one verifies again."""
        with self._lock:
            self._verified = {k for k in self._verified if (k[0], k[2], k[3]) != (producer_id, *tp)}
