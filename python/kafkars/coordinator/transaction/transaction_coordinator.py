"""Kafka's transaction coordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn and the admin views, over the `__transaction_state` store.

Every state change is written to `__transaction_state` with acks=all and completes by
callback, once the ISR has it (the request handler thread does not wait; the id is
`pending_transition` meanwhile). EndTxn answers when the transaction is complete:
PrepareCommit/PrepareAbort is stored, a marker is written to every partition of the
transaction (the group coordinator applies or drops the transaction's offsets on
`__consumer_offsets`), and CompleteCommit/CompleteAbort is stored. A crash between the
two leaves the prepared state in the log; start-up finishes it.

Every deadline reads the injected `Time`: transactions older than their timeout are
aborted with a bumped epoch (fencing the producer), and ids idle for
`transactional.id.expiration.ms` are removed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from kafkars.coordinator.clock import SYSTEM_TIME, Time
from kafkars.coordinator.log_append import coordinator_error
from kafkars.coordinator.log_append import logged as _logged
from kafkars.coordinator.transaction.producer_id_manager import ProducerIdManager
from kafkars.coordinator.transaction.transaction_metadata import (
    COMPLETE_STATES,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TransactionState,
)
from kafkars.coordinator.transaction.transaction_state_manager import TransactionStore
from kafkars.protocol import Errors

log = logging.getLogger("kafkars.coordinator.transaction.TransactionCoordinator")

S = TransactionState
TopicPartition = tuple[str, int]
# Called once with the outcome of a write (Errors.NONE once stored).
Done = Callable[[Errors], None]
# (producer id, producer epoch, commit?, partitions, done) -> writes the markers and
# calls `done(error)` once every partition has its marker (or one failed).
# (producer id, producer epoch, commit, partitions, coordinator epoch, done)
MarkerWriter = Callable[[int, int, bool, list[TopicPartition], int, Done], None]


@dataclass(frozen=True)
class TransactionConfig:
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_transactions_interval_ms: int = 10_000
    remove_expired_transactional_ids_interval_ms: int = 3_600_000

    @classmethod
    def from_broker(cls, config: Any) -> TransactionConfig:
        get = config.get
        return cls(
            transaction_max_timeout_ms=int(get("transaction.max.timeout.ms")),
            transactional_id_expiration_ms=int(get("transactional.id.expiration.ms")),
            abort_timed_out_transactions_interval_ms=int(
                get("transaction.abort.timed.out.transaction.cleanup.interval.ms")
            ),
            remove_expired_transactional_ids_interval_ms=int(
                get("transaction.remove.expired.transaction.cleanup.interval.ms")
            ),
        )


@dataclass(frozen=True)
class InitProducerIdResult:
    error: Errors
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    """Every transactional id this broker coordinates (a single broker owns them all)."""

    def __init__(
        self,
        config: TransactionConfig,
        producer_ids: ProducerIdManager,
        store: TransactionStore | None = None,
        write_markers: MarkerWriter | None = None,
        time: Time = SYSTEM_TIME,
    ) -> None:
        self.config = config
        self.producer_ids = producer_ids
        self.store = store if store is not None else TransactionStore()
        self.write_markers: MarkerWriter = write_markers or (
            lambda pid, epoch, commit, tps, coordinator_epoch, done: done(Errors.NONE)
        )
        self.time = time
        self._txns: dict[str, TransactionMetadata] = {}
        self._txns_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # The __transaction_state partitions coordinated here; None: all (one broker).
        self.owned_partitions: set[int] | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def startup(self, *, load: bool = True, background: bool = True) -> None:
        """Loads the ids from the store and finishes transactions a crash left prepared;
        open ones are aborted by the timeout check like any other."""
        if load:
            self._adopt(self.store.load())
        else:
            self.owned_partitions = set()
        if background:
            for name, interval, task in (
                (
                    "transaction-abort",
                    self.config.abort_timed_out_transactions_interval_ms,
                    self.abort_timed_out_transactions,
                ),
                (
                    "transactionalId-expiration",
                    self.config.remove_expired_transactional_ids_interval_ms,
                    self.remove_expired_transactional_ids,
                ),
            ):
                thread = threading.Thread(
                    target=self._loop, args=(interval, task), name=name, daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _adopt(self, loaded: dict[str, TransactionMetadata]) -> None:
        with self._txns_lock:
            self._txns.update(loaded)
        for txn in loaded.values():
            with txn.lock:
                if txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    self._complete(
                        txn,
                        commit=txn.state is S.PREPARE_COMMIT,
                        done=_logged(f"Completing the transaction of {txn.transactional_id}"),
                    )

    # -- cluster mode: coordinating the partitions this broker leads -------------------------
    def is_coordinator(self, transactional_id: str) -> bool:
        owned = self.owned_partitions
        return owned is None or self.store.partition_for(transactional_id) in owned

    def on_elected(self, partition: int) -> None:
        """This broker leads `partition` of __transaction_state: its transactional ids
        are loaded (prepared transactions completed) and coordinated here."""
        assert self.owned_partitions is not None
        if partition not in self.owned_partitions:
            self._adopt(self.store.load([partition]))
            self.owned_partitions.add(partition)

    def on_resigned(self, partition: int) -> None:
        if self.owned_partitions is None:
            return
        self.owned_partitions.discard(partition)
        with self._txns_lock:
            for tid in [t for t in self._txns if self.store.partition_for(t) == partition]:
                del self._txns[tid]

    def shutdown(self) -> None:
        """Stops the background tasks, waiting for one that is writing markers, so the
        logs close after it."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _loop(self, interval_ms: int, task: Callable[[], int]) -> None:
        while not self._stop.wait(interval_ms / 1000):
            try:
                task()
            except Exception:
                log.exception("Transaction coordinator task %s failed", task.__name__)

    # -- lookup -----------------------------------------------------------------------------
    def get(self, transactional_id: str) -> TransactionMetadata | None:
        with self._txns_lock:
            return self._txns.get(transactional_id)

    def transactions(self) -> list[TransactionMetadata]:
        with self._txns_lock:
            return list(self._txns.values())

    def _store(self, txn: TransactionMetadata, before: dict[str, object], done: Done) -> None:
        """Persists `txn`'s new state (already in memory, with `pending_transition` set
        until the write completes); if the append fails the transition is undone, so
        memory never stays ahead of the log. `done(error)` runs once, after that, on
        whichever thread completes the write; the id's lock is not held meanwhile."""
        txn.pending_transition = True
        completed = False

        def stored(error: Errors) -> None:
            nonlocal completed
            completed = True
            error = coordinator_error(error)
            with txn.lock:
                txn.pending_transition = False
                if error is not Errors.NONE:
                    txn.restore(before)
            done(error)

        try:
            self.store.store(txn, stored)
        except BaseException:
            if not completed:  # the write itself failed, not what followed it
                txn.pending_transition = False
                txn.restore(before)
            raise

    # -- InitProducerId ---------------------------------------------------------------------
    def handle_init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        expected_producer_id: int = NO_PRODUCER_ID,
        expected_producer_epoch: int = NO_PRODUCER_EPOCH,
        *,
        callback: Callable[[InitProducerIdResult], None],
    ) -> None:
        """InitProducerId: `callback(result)` runs once the new epoch is stored."""
        if transactional_id is None:
            # An idempotent producer: a fresh id, epoch 0.
            pid = self.producer_ids.generate_producer_id()
            return callback(InitProducerIdResult(Errors.NONE, pid, 0))
        if not transactional_id:
            return callback(InitProducerIdResult(Errors.INVALID_REQUEST))
        if not 0 < transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return callback(InitProducerIdResult(Errors.INVALID_TRANSACTION_TIMEOUT))
        now = self.time.milliseconds()
        with self._txns_lock:
            txn = self._txns.get(transactional_id)
            if txn is None:
                txn = TransactionMetadata(
                    transactional_id,
                    self.producer_ids.generate_producer_id(),
                    NO_PRODUCER_EPOCH,
                    transaction_timeout_ms,
                    txn_last_update_timestamp=now,
                )
                self._txns[transactional_id] = txn
        with txn.lock:
            if txn.state is S.DEAD:
                # Removed meanwhile by expiration: a new incarnation starts over.
                return self.handle_init_producer_id(
                    transactional_id,
                    transaction_timeout_ms,
                    expected_producer_id,
                    expected_producer_epoch,
                    callback=callback,
                )
            if expected_producer_id != NO_PRODUCER_ID and not (
                expected_producer_id == txn.producer_id
                and expected_producer_epoch in (txn.producer_epoch, txn.last_producer_epoch)
            ):
                # KIP-360: a producer resuming with an id and epoch that are no longer
                # current has been replaced.
                return callback(InitProducerIdResult(Errors.PRODUCER_FENCED))
            if txn.pending_transition or txn.state in (
                S.PREPARE_COMMIT,
                S.PREPARE_ABORT,
                S.PREPARE_EPOCH_FENCE,
            ):
                return callback(InitProducerIdResult(Errors.CONCURRENT_TRANSACTIONS))
            if txn.state is S.ONGOING:
                # A new instance with an open transaction: fence the old epoch and abort
                # it; the client retries (CONCURRENT_TRANSACTIONS) and gets a new epoch.
                log.info(
                    "Fencing producer %s epoch %s of transactional id %s and aborting its "
                    "open transaction",
                    txn.producer_id,
                    txn.producer_epoch,
                    transactional_id,
                )
                self._fence_and_abort(
                    txn, _logged(f"Aborting the transaction of {transactional_id}")
                )
                return callback(InitProducerIdResult(Errors.CONCURRENT_TRANSACTIONS))
            before = txn.snapshot()
            retry = (
                expected_producer_id == txn.producer_id
                and expected_producer_epoch == txn.last_producer_epoch
                and expected_producer_epoch != NO_PRODUCER_EPOCH
            )
            if not retry:
                if txn.epoch_exhausted:
                    txn.producer_id = self.producer_ids.generate_producer_id()
                    txn.producer_epoch = 0
                    txn.last_producer_epoch = NO_PRODUCER_EPOCH
                else:
                    txn.bump_epoch()
            txn.txn_timeout_ms = transaction_timeout_ms
            txn.transition_to(S.EMPTY, now)
            result = InitProducerIdResult(Errors.NONE, txn.producer_id, txn.producer_epoch)
            self._store(
                txn,
                before,
                lambda error: callback(
                    result if error is Errors.NONE else InitProducerIdResult(error)
                ),
            )

    def _fence_and_abort(self, txn: TransactionMetadata, done: Done) -> None:
        """Ongoing → PrepareEpochFence (epoch bumped) → PrepareAbort → CompleteAbort."""
        before = txn.snapshot()
        txn.transition_to(S.PREPARE_EPOCH_FENCE, self.time.milliseconds())
        txn.bump_epoch()
        # As Kafka's prepareFenceProducerEpoch: the fenced epoch is not a retry's epoch,
        # so the old instance resuming with it (KIP-360) is told PRODUCER_FENCED.
        txn.last_producer_epoch = NO_PRODUCER_EPOCH
        self._prepare_and_complete(txn, commit=False, before=before, done=done)

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------
    def _check_producer(self, txn: TransactionMetadata | None, pid: int, epoch: int) -> Errors:
        if txn is None or txn.state is S.DEAD or txn.producer_id != pid:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != epoch:
            return Errors.PRODUCER_FENCED
        return Errors.NONE

    def handle_add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        *,
        callback: Done,
    ) -> None:
        """Adds partitions to the transaction (starting it if none is open);
        `callback(error)` runs once that is stored."""
        if not transactional_id:
            return callback(Errors.INVALID_REQUEST)
        wanted = set(partitions)
        txn = self.get(transactional_id)
        if txn is None:
            return callback(Errors.INVALID_PRODUCER_ID_MAPPING)
        with txn.lock:
            error = self._check_producer(txn, producer_id, producer_epoch)
            if error is not Errors.NONE:
                return callback(error)
            if txn.pending_transition or txn.state in (
                S.PREPARE_COMMIT,
                S.PREPARE_ABORT,
                S.PREPARE_EPOCH_FENCE,
            ):
                return callback(Errors.CONCURRENT_TRANSACTIONS)
            if txn.state is S.ONGOING and wanted <= txn.partitions:
                return callback(Errors.NONE)
            before = txn.snapshot()
            txn.transition_to(S.ONGOING, self.time.milliseconds())
            txn.partitions |= wanted
            self._store(txn, before, callback)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, Errors]:
        """AddPartitionsToTxn with verify_only (KIP-890): whether each partition is in the
        producer's open transaction, changing nothing. A partition not in it is
        TRANSACTION_ABORTABLE, as Kafka's coordinator answers (the produce path words it
        for the producer)."""
        txn = self.get(transactional_id)
        out: dict[TopicPartition, Errors] = {}
        with txn.lock if txn is not None else threading.Lock():
            error = self._check_producer(txn, producer_id, producer_epoch)
            for tp in partitions:
                if error is not Errors.NONE:
                    out[tp] = error
                elif txn is None or txn.state is not S.ONGOING or tp not in txn.partitions:
                    out[tp] = Errors.TRANSACTION_ABORTABLE
                else:
                    out[tp] = Errors.NONE
        return out

    def verify_produce(
        self,
        transactional_id: str | None,
        producer_id: int,
        producer_epoch: int,
        tp: TopicPartition,
    ) -> Errors:
        """KIP-890 part 1: a transactional write is refused unless its partition was
        added to the producer's open transaction (INVALID_TXN_STATE, as Kafka answers
        producers before transaction version 2); a stale epoch is INVALID_PRODUCER_EPOCH."""
        if not transactional_id:
            return Errors.TRANSACTIONAL_ID_NOT_FOUND
        error = self.verify_partitions(transactional_id, producer_id, producer_epoch, [tp])[tp]
        if error is Errors.PRODUCER_FENCED:
            return Errors.INVALID_PRODUCER_EPOCH
        if error in (Errors.INVALID_PRODUCER_ID_MAPPING, Errors.TRANSACTION_ABORTABLE):
            return Errors.INVALID_TXN_STATE
        return error

    # -- EndTxn -----------------------------------------------------------------------------
    def handle_end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        callback: Done,
    ) -> None:
        """EndTxn: `callback(error)` runs once the transaction is complete (its markers
        written, CompleteCommit/CompleteAbort stored) or a step failed."""
        if not transactional_id:
            return callback(Errors.INVALID_REQUEST)
        txn = self.get(transactional_id)
        if txn is None:
            return callback(Errors.INVALID_PRODUCER_ID_MAPPING)
        with txn.lock:
            error = self._check_producer(txn, producer_id, producer_epoch)
            if error is not Errors.NONE:
                return callback(error)
            if txn.pending_transition:
                return callback(Errors.CONCURRENT_TRANSACTIONS)
            state = txn.state
            if state is S.ONGOING:
                return self._prepare_and_complete(txn, commit=commit, done=callback)
            if state is S.COMPLETE_COMMIT:
                return callback(Errors.NONE if commit else Errors.INVALID_TXN_STATE)  # a retry
            if state is S.COMPLETE_ABORT:
                return callback(Errors.INVALID_TXN_STATE if commit else Errors.NONE)
            if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                if commit != (state is S.PREPARE_COMMIT):
                    return callback(Errors.INVALID_TXN_STATE)
                # Writing a marker failed earlier: the retry writes them again.
                return self._complete(txn, commit=commit, done=callback)
            return callback(Errors.INVALID_TXN_STATE)  # Empty: nothing to end

    def _prepare_and_complete(
        self,
        txn: TransactionMetadata,
        *,
        commit: bool,
        done: Done,
        before: dict[str, object] | None = None,
    ) -> None:
        """Stores PrepareCommit/PrepareAbort, then completes the transaction."""
        before = before or txn.snapshot()
        txn.transition_to(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, self.time.milliseconds())

        def prepared(error: Errors) -> None:
            if error is not Errors.NONE:
                return done(error)
            with txn.lock:
                self._complete(txn, commit=commit, done=done)

        self._store(txn, before, prepared)

    def _complete(self, txn: TransactionMetadata, *, commit: bool, done: Done) -> None:
        """Writes the markers, then stores CompleteCommit/CompleteAbort; `done(error)`
        runs after both. If writing a marker fails the transaction stays prepared; an
        EndTxn retry or the abort task writes them again (so does the next start-up)."""
        partitions = sorted(txn.partitions)
        producer_id, producer_epoch = txn.producer_id, txn.producer_epoch
        txn.pending_transition = True

        def markers_written(error: Errors) -> None:
            with txn.lock:
                txn.pending_transition = False
                if error is not Errors.NONE:
                    log.info(
                        "Writing the markers of %s failed: %s", txn.transactional_id, error.name
                    )
                    # Retriable for the client: its EndTxn retry writes them again.
                    return done(coordinator_error(error))
                before = txn.snapshot()
                txn.transition_to(
                    S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, self.time.milliseconds()
                )
                log.debug(
                    "%s transaction of %s (producer %s epoch %s) on %d partition(s)",
                    "Committed" if commit else "Aborted",
                    txn.transactional_id,
                    producer_id,
                    producer_epoch,
                    len(partitions),
                )
                self._store(txn, before, done)

        if not partitions:
            return markers_written(Errors.NONE)
        try:
            self.write_markers(
                producer_id,
                producer_epoch,
                commit,
                partitions,
                self.store.coordinator_epoch(txn.transactional_id),
                markers_written,
            )
        except BaseException:
            txn.pending_transition = False
            raise

    # -- timeouts and expiration ------------------------------------------------------------
    def abort_timed_out_transactions(self) -> int:
        """Aborts every Ongoing transaction past its timeout, fencing its producer's epoch
        (Kafka's abortTimedOutTransactions). Returns how many were aborted."""
        now = self.time.milliseconds()
        aborted = 0
        for txn in self.transactions():
            with txn.lock:
                if txn.pending_transition:
                    continue  # being written: its own request completes it
                if txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    # Its markers failed to write: try again.
                    try:
                        self._complete(
                            txn,
                            commit=txn.state is S.PREPARE_COMMIT,
                            done=_logged(f"Completing the transaction of {txn.transactional_id}"),
                        )
                    except Exception:
                        log.exception(
                            "Completing the transaction of %s failed", txn.transactional_id
                        )
                    continue
                if not txn.has_expired(now):
                    continue
                log.info(
                    "Aborting transaction of %s (producer %s epoch %s): open for longer "
                    "than its timeout of %d ms",
                    txn.transactional_id,
                    txn.producer_id,
                    txn.producer_epoch,
                    txn.txn_timeout_ms,
                )
                try:
                    self._fence_and_abort(
                        txn, _logged(f"Aborting the transaction of {txn.transactional_id}")
                    )
                    aborted += 1
                except Exception:
                    log.exception("Aborting the transaction of %s failed", txn.transactional_id)
        return aborted

    def remove_expired_transactional_ids(self) -> int:
        """Forgets ids without an open transaction, idle for transactional.id.expiration.ms:
        a tombstone goes to the log and the id to Dead. Returns how many went."""
        now = self.time.milliseconds()
        removed = 0
        for txn in self.transactions():
            with txn.lock:
                if txn.pending_transition or txn.state not in COMPLETE_STATES:
                    continue
                if txn.txn_last_update_timestamp + self.config.transactional_id_expiration_ms > now:
                    continue
                txn.pending_transition = True
                # The tombstone first; the id goes once it is stored.
                self.store.remove(txn.transactional_id, partial(self._removed, txn, now))
                removed += 1
        if removed:
            log.info("Removed %d expired transactional id(s)", removed)
        return removed

    def _removed(self, txn: TransactionMetadata, now: int, error: Errors) -> None:
        with txn.lock:
            txn.pending_transition = False
            if error is not Errors.NONE:
                log.warning(
                    "Removing transactional id %s failed: %s", txn.transactional_id, error.name
                )
                return
            txn.transition_to(S.DEAD, now)
        with self._txns_lock:
            if self._txns.get(txn.transactional_id) is txn:
                del self._txns[txn.transactional_id]

    # -- admin ------------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> dict[str, Any]:
        """A DescribeTransactions entry (TRANSACTIONAL_ID_NOT_FOUND for unknown ids)."""
        txn = self.get(transactional_id)
        if txn is None or txn.state is S.DEAD:
            return {
                "error_code": int(Errors.TRANSACTIONAL_ID_NOT_FOUND),
                "transactional_id": transactional_id,
                # Kafka leaves every other field at its zero default.
                "transaction_state": "",
                "transaction_timeout_ms": 0,
                "transaction_start_time_ms": 0,
                "producer_id": 0,
                "producer_epoch": 0,
                "topics": [],
            }
        with txn.lock:
            return {
                "error_code": 0,
                "transactional_id": transactional_id,
                "transaction_state": txn.state.state_name,
                "transaction_timeout_ms": txn.txn_timeout_ms,
                "transaction_start_time_ms": txn.txn_start_timestamp,
                "producer_id": txn.producer_id,
                "producer_epoch": txn.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in txn.topics()],
            }

    def list_transactions(
        self,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        min_duration_ms: int = -1,
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """ListTransactions: the unknown state names among `states`, and the ids matching
        every filter given (an empty filter matches everything)."""
        wanted_states = set(states)
        unknown = sorted(s for s in wanted_states if S.from_name(s) is None)
        wanted_pids = set(producer_ids)
        now = self.time.milliseconds()
        out = []
        for txn in sorted(self.transactions(), key=lambda t: t.transactional_id):
            with txn.lock:
                if txn.state is S.DEAD:
                    continue
                if wanted_states and txn.state.state_name not in wanted_states:
                    continue
                if wanted_pids and txn.producer_id not in wanted_pids:
                    continue
                if min_duration_ms >= 0 and (
                    txn.state is not S.ONGOING or now - txn.txn_start_timestamp < min_duration_ms
                ):
                    continue
                out.append(
                    {
                        "transactional_id": txn.transactional_id,
                        "producer_id": txn.producer_id,
                        "transaction_state": txn.state.state_name,
                    }
                )
        return unknown, out
