"""Kafka's transaction coordinator: the transactional-id state machine, producer-id
blocks, and the `__transaction_state` topic that makes transactions durable."""

from kafkars.coordinator.transaction.transaction_coordinator import (
    TransactionConfig,
    TransactionCoordinator,
)
from kafkars.coordinator.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
)

__all__ = [
    "TransactionConfig",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionState",
]
