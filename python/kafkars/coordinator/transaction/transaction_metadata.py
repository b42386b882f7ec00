"""TransactionMetadata: one transactional id's producer id, epoch, state and partitions.

States and the transitions Kafka allows (TransactionState.validPreviousStates):

    Empty / CompleteCommit / CompleteAbort ──AddPartitionsToTxn──▶ Ongoing
    Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers written──▶ CompleteCommit
    Ongoing ──EndTxn(abort) / timeout / fenced──▶ PrepareAbort ──markers written──▶ CompleteAbort
    Ongoing ──InitProducerId from a new instance / timeout──▶ PrepareEpochFence ──▶ PrepareAbort
    Empty / CompleteCommit / CompleteAbort ──InitProducerId──▶ Empty (epoch bumped)
    Empty / CompleteCommit / CompleteAbort ──transactional.id.expiration.ms──▶ Dead
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum

# Kafka's RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# An epoch at this value cannot be bumped further: the id is replaced instead.
MAX_PRODUCER_EPOCH = 32767


class TransactionState(Enum):
    """The states with the ids `__transaction_state` stores (TransactionStatus)."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use."""
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for s in cls:
            if s.id == state_id:
                return s
        raise ValueError(f"Unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        for s in cls:
            if s.state_name == name:
                return s
        return None


S = TransactionState
COMPLETE_STATES = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})

VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


class IllegalTransactionStateError(RuntimeError):
    """A transition the state machine forbids (a coordinator bug if ever raised)."""


@dataclass
class TransactionMetadata:
    """A transactional id's state. Every read and change happens under `lock`."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    # The epoch before the last bump (Kafka's lastProducerEpoch), for fencing retries.
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    # A transition is being written (or a transaction's markers): requests wait for it
    # (CONCURRENT_TRANSACTIONS), as Kafka's pendingState makes them.
    pending_transition: bool = field(default=False, repr=False, compare=False)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def transition_to(self, target: TransactionState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} cannot move from "
                f"{self.state.state_name} to {target.state_name}"
            )
        if target is S.ONGOING and self.state is not S.ONGOING:
            self.txn_start_timestamp = now_ms
        if target in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            # Markers are written: the next transaction starts with no partitions.
            self.partitions = set()
        self.state = target
        self.txn_last_update_timestamp = now_ms

    def snapshot(self) -> dict[str, object]:
        """The mutable fields, for `restore` when storing a transition fails."""
        fields = (
            "producer_id",
            "producer_epoch",
            "last_producer_epoch",
            "txn_timeout_ms",
            "state",
            "txn_start_timestamp",
            "txn_last_update_timestamp",
        )
        out: dict[str, object] = {f: getattr(self, f) for f in fields}
        out["partitions"] = set(self.partitions)
        return out

    def restore(self, snapshot: dict[str, object]) -> None:
        for name, value in snapshot.items():
            setattr(self, name, value)

    def bump_epoch(self) -> None:
        """The next epoch (InitProducerId, fencing); the caller replaces an exhausted id."""
        self.last_producer_epoch = self.producer_epoch
        self.producer_epoch += 1

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1

    def has_expired(self, now_ms: int) -> bool:
        """An Ongoing transaction older than its timeout (aborted by the coordinator)."""
        return self.state is S.ONGOING and self.txn_start_timestamp + self.txn_timeout_ms < now_ms

    def topics(self) -> list[tuple[str, list[int]]]:
        """The partitions grouped by topic, sorted (the stored and described form)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(partition)
        return list(by_topic.items())
