"""The transaction coordinator's state machine on a MockTime: InitProducerId and fencing,
AddPartitionsToTxn, EndTxn with its markers, timeouts, id expiration, reload."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kafkars.coordinator.clock import MockTime
from kafkars.coordinator.transaction import (
    TransactionConfig,
    TransactionCoordinator,
    TransactionMetadata,
    TransactionState,
    records,
)
from kafkars.coordinator.transaction.producer_id_manager import ProducerIdManager
from kafkars.coordinator.transaction.transaction_metadata import (
    MAX_PRODUCER_EPOCH,
    IllegalTransactionStateError,
)
from kafkars.coordinator.transaction.transaction_state_manager import TransactionStore
from kafkars.protocol import Errors

S = TransactionState
TIMEOUT = 60_000
CONFIG = TransactionConfig(
    transaction_max_timeout_ms=900_000, transactional_id_expiration_ms=3_600_000
)


class Markers:
    """Records the markers the coordinator writes."""

    def __init__(self) -> None:
        self.written: list[tuple[int, int, bool, list[tuple[str, int]]]] = []

    def __call__(
        self,
        pid: int,
        epoch: int,
        commit: bool,
        tps: list[tuple[str, int]],
        coordinator_epoch: int,
        done: Callable[[Errors], None],
    ) -> None:
        self.written.append((pid, epoch, commit, tps))
        done(Errors.NONE)


def answered(call: Callable[..., None], *args: Any, **kwargs: Any) -> Any:
    """Calls a coordinator method that answers through its `callback` and returns the
    answer, which these stores and markers give at once."""
    answers: list[Any] = []
    call(*args, **kwargs, callback=answers.append)
    assert len(answers) == 1
    return answers[0]


class Blocks:
    """A persisted producer-id block counter (what kafkars-metadata.json keeps)."""

    def __init__(self) -> None:
        self.next = 0

    def reserve(self, size: int) -> int:
        first = self.next
        self.next += size
        return first


def make(
    store: TransactionStore | None = None,
    time: MockTime | None = None,
    blocks: Blocks | None = None,
) -> tuple[TransactionCoordinator, Markers, MockTime, TransactionStore]:
    time = time or MockTime()
    store = store if store is not None else TransactionStore()
    markers = Markers()
    coordinator = TransactionCoordinator(
        CONFIG, ProducerIdManager((blocks or Blocks()).reserve), store, markers, time
    )
    coordinator.startup(background=False)
    return coordinator, markers, time, store


def init(c: TransactionCoordinator, txn_id: str = "tx") -> tuple[int, int]:
    result = answered(c.handle_init_producer_id, txn_id, TIMEOUT)
    assert result.error is Errors.NONE
    return result.producer_id, result.producer_epoch


def test_init_producer_id_starts_at_epoch_zero_and_bumps_it() -> None:
    c, _, _, _ = make()
    pid, epoch = init(c)
    assert epoch == 0
    assert init(c) == (pid, 1)
    assert c.get("tx").state is S.EMPTY  # type: ignore[union-attr]


def test_init_producer_id_validates_its_request() -> None:
    c, _, _, _ = make()
    assert answered(c.handle_init_producer_id, "tx", 0).error is Errors.INVALID_TRANSACTION_TIMEOUT
    assert (
        answered(c.handle_init_producer_id, "tx", 900_001).error
        is Errors.INVALID_TRANSACTION_TIMEOUT
    )
    assert answered(c.handle_init_producer_id, "", TIMEOUT).error is Errors.INVALID_REQUEST
    idempotent = answered(c.handle_init_producer_id, None, 0)
    assert idempotent.error is Errors.NONE and idempotent.producer_epoch == 0


def test_commit_writes_markers_to_every_partition() -> None:
    c, markers, _, _ = make()
    pid, epoch = init(c)
    assert answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0), ("b", 1)]) is Errors.NONE
    assert c.get("tx").state is S.ONGOING  # type: ignore[union-attr]
    assert answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)]) is Errors.NONE
    assert answered(c.handle_end_transaction, "tx", pid, epoch, commit=True) is Errors.NONE
    assert markers.written == [(pid, epoch, True, [("a", 0), ("b", 1)])]
    assert c.get("tx").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]
    # A retried EndTxn is answered as before; the other outcome is refused.
    assert answered(c.handle_end_transaction, "tx", pid, epoch, commit=True) is Errors.NONE
    assert (
        answered(c.handle_end_transaction, "tx", pid, epoch, commit=False)
        is Errors.INVALID_TXN_STATE
    )
    assert len(markers.written) == 1
    # The next transaction starts from CompleteCommit with a clean partition set.
    assert answered(c.handle_add_partitions, "tx", pid, epoch, [("c", 0)]) is Errors.NONE
    assert answered(c.handle_end_transaction, "tx", pid, epoch, commit=False) is Errors.NONE
    assert markers.written[-1] == (pid, epoch, False, [("c", 0)])


def test_end_txn_errors() -> None:
    c, _, _, _ = make()
    pid, epoch = init(c)
    assert (
        answered(c.handle_end_transaction, "tx", pid, epoch, commit=True)
        is Errors.INVALID_TXN_STATE
    )
    assert (
        answered(c.handle_end_transaction, "nope", pid, epoch, True)
        is Errors.INVALID_PRODUCER_ID_MAPPING
    )
    assert (
        answered(c.handle_end_transaction, "tx", pid + 1, epoch, True)
        is Errors.INVALID_PRODUCER_ID_MAPPING
    )
    assert (
        answered(c.handle_add_partitions, "tx", pid, epoch + 1, [("a", 0)])
        is Errors.PRODUCER_FENCED
    )


def test_a_new_instance_fences_the_old_and_aborts_its_transaction() -> None:
    c, markers, _, _ = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])
    # The new instance is told to retry while the open transaction is aborted.
    assert (
        answered(c.handle_init_producer_id, "tx", TIMEOUT).error is Errors.CONCURRENT_TRANSACTIONS
    )
    assert markers.written == [(pid, epoch + 1, False, [("a", 0)])]
    assert c.get("tx").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    assert init(c) == (pid, epoch + 2)
    # The zombie's requests are fenced.
    assert answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)]) is Errors.PRODUCER_FENCED
    assert (
        answered(c.handle_end_transaction, "tx", pid, epoch, commit=True) is Errors.PRODUCER_FENCED
    )
    assert c.verify_produce("tx", pid, epoch, ("a", 0)) is Errors.INVALID_PRODUCER_EPOCH


def test_an_exhausted_epoch_gets_a_new_producer_id() -> None:
    c, _, _, _ = make()
    pid, _ = init(c)
    c.get("tx").producer_epoch = MAX_PRODUCER_EPOCH - 1  # type: ignore[union-attr]
    new_pid, epoch = init(c)
    assert new_pid != pid and epoch == 0


def test_produce_verification_kip_890() -> None:
    c, _, _, _ = make()
    pid, epoch = init(c)
    assert c.verify_produce("tx", pid, epoch, ("a", 0)) is Errors.INVALID_TXN_STATE
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])
    assert c.verify_produce("tx", pid, epoch, ("a", 0)) is Errors.NONE
    assert c.verify_produce("tx", pid, epoch, ("a", 1)) is Errors.INVALID_TXN_STATE
    assert c.verify_produce("other", pid, epoch, ("a", 0)) is Errors.INVALID_TXN_STATE
    assert c.verify_produce(None, pid, epoch, ("a", 0)) is Errors.TRANSACTIONAL_ID_NOT_FOUND
    verified = c.verify_partitions("tx", pid, epoch, [("a", 0), ("b", 0)])
    # The coordinator's own answer is Kafka's TRANSACTION_ABORTABLE; produce words it
    # INVALID_TXN_STATE for the producer (above).
    assert verified == {("a", 0): Errors.NONE, ("b", 0): Errors.TRANSACTION_ABORTABLE}


def test_timed_out_transactions_are_aborted_with_a_bumped_epoch() -> None:
    c, markers, time, _ = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])
    time.sleep(TIMEOUT)
    assert c.abort_timed_out_transactions() == 0  # not past it yet
    time.sleep(1)
    assert c.abort_timed_out_transactions() == 1
    assert markers.written == [(pid, epoch + 1, False, [("a", 0)])]
    txn = c.get("tx")
    assert txn is not None and txn.state is S.COMPLETE_ABORT and txn.producer_epoch == epoch + 1
    assert (
        answered(c.handle_end_transaction, "tx", pid, epoch, commit=True) is Errors.PRODUCER_FENCED
    )


def test_idle_transactional_ids_expire() -> None:
    c, _, time, store = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])
    time.sleep(CONFIG.transactional_id_expiration_ms + 1)
    assert c.remove_expired_transactional_ids() == 0  # an open transaction never expires
    answered(c.handle_end_transaction, "tx", pid, epoch, commit=True)
    time.sleep(CONFIG.transactional_id_expiration_ms)
    assert c.remove_expired_transactional_ids() == 1
    assert c.get("tx") is None
    assert store.records[-1] == (records.key("tx"), None)  # a tombstone
    assert c.describe("tx")["error_code"] == Errors.TRANSACTIONAL_ID_NOT_FOUND
    # A new incarnation starts over with a new producer id.
    assert init(c)[0] != pid


def test_state_reloads_from_the_store() -> None:
    c, _, time, store = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0), ("a", 3)])
    init(c, "other")
    reloaded, _, _, _ = make(store, time)
    txn = reloaded.get("tx")
    assert txn is not None
    assert (txn.producer_id, txn.producer_epoch, txn.state) == (pid, epoch, S.ONGOING)
    assert txn.partitions == {("a", 0), ("a", 3)}
    assert txn.txn_timeout_ms == TIMEOUT
    assert reloaded.get("other") is not None
    # The reloaded open transaction times out like any other.
    time.sleep(TIMEOUT + 1)
    assert reloaded.abort_timed_out_transactions() == 1


def test_a_prepared_transaction_is_completed_on_start_up() -> None:
    c, _, time, store = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])
    txn = c.get("tx")
    assert txn is not None
    txn.transition_to(S.PREPARE_COMMIT, time.milliseconds())
    store.store(txn)  # the crash came before the markers
    reloaded, markers, _, _ = make(store, time)
    assert markers.written == [(pid, epoch, True, [("a", 0)])]
    assert reloaded.get("tx").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]


def test_producer_ids_never_repeat_across_restarts() -> None:
    blocks = Blocks()
    first = ProducerIdManager(blocks.reserve, block_size=10)
    ids = [first.generate_producer_id() for _ in range(3)]
    second = ProducerIdManager(blocks.reserve, block_size=10)  # a restart
    ids += [second.generate_producer_id() for _ in range(12)]
    assert len(set(ids)) == len(ids)
    assert ids[3] == 10


def test_describe_and_list() -> None:
    c, _, time, _ = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("b", 1), ("a", 0), ("a", 2)])
    init(c, "idle")
    d = c.describe("tx")
    assert d["transaction_state"] == "Ongoing" and d["producer_id"] == pid
    assert d["topics"] == [{"topic": "a", "partitions": [0, 2]}, {"topic": "b", "partitions": [1]}]
    unknown, listed = c.list_transactions()
    assert unknown == [] and [t["transactional_id"] for t in listed] == ["idle", "tx"]
    unknown, listed = c.list_transactions(states=["Ongoing", "Bogus"])
    assert unknown == ["Bogus"] and [t["transactional_id"] for t in listed] == ["tx"]
    assert c.list_transactions(producer_ids=[pid])[1][0]["transactional_id"] == "tx"
    time.sleep(5_000)
    assert [t["transactional_id"] for t in c.list_transactions(min_duration_ms=4_000)[1]] == ["tx"]
    assert c.list_transactions(min_duration_ms=6_000)[1] == []


def test_transitions_follow_kafkas_valid_previous_states() -> None:
    txn = TransactionMetadata("tx", 1, 0, TIMEOUT)
    with pytest.raises(IllegalTransactionStateError):
        txn.transition_to(S.PREPARE_COMMIT, 0)
    txn.transition_to(S.ONGOING, 5)
    assert txn.txn_start_timestamp == 5
    with pytest.raises(IllegalTransactionStateError):
        txn.transition_to(S.COMPLETE_COMMIT, 6)


def test_records_round_trip_in_kafkas_format() -> None:
    txn = TransactionMetadata("tx", 42, 3, TIMEOUT, S.ONGOING, {("a", 1), ("a", 0)}, 100, 200)
    key, value = records.key("tx"), records.value(txn)
    assert key == b"\x00\x00\x00\x02tx"
    assert value[:2] == b"\x00\x00"  # TransactionLogValue v0
    back = records.read_value("tx", value)
    assert (back.producer_id, back.producer_epoch, back.state) == (42, 3, S.ONGOING)
    assert back.partitions == {("a", 0), ("a", 1)}
    assert (back.txn_start_timestamp, back.txn_last_update_timestamp) == (100, 200)
    assert records.read_key(b"\x00\x01\x00\x01g") is None


def test_a_failed_marker_write_is_retried() -> None:
    c, markers, _, _ = make()
    pid, epoch = init(c)
    answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])

    def failing(
        pid: int,
        epoch: int,
        commit: bool,
        tps: list[tuple[str, int]],
        coordinator_epoch: int,
        done: object,
    ) -> None:
        raise OSError("disk full")

    c.write_markers = failing
    with pytest.raises(OSError):
        answered(c.handle_end_transaction, "tx", pid, epoch, commit=True)
    assert c.get("tx").state is S.PREPARE_COMMIT  # type: ignore[union-attr]
    assert (
        answered(c.handle_end_transaction, "tx", pid, epoch, commit=False)
        is Errors.INVALID_TXN_STATE
    )
    c.write_markers = markers
    assert answered(c.handle_end_transaction, "tx", pid, epoch, commit=True) is Errors.NONE
    assert markers.written == [(pid, epoch, True, [("a", 0)])]
    assert c.get("tx").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]


def test_kip_360_resume_retry_and_fenced_resume() -> None:
    c, _, time, _ = make()
    pid, epoch = init(c)
    # A producer resuming with its current id and epoch gets the next epoch...
    resumed = answered(c.handle_init_producer_id, "tx", TIMEOUT, pid, epoch)
    assert (resumed.error, resumed.producer_id, resumed.producer_epoch) == (Errors.NONE, pid, 1)
    # ...and a retry of that request (its answer was lost) gets the same one again.
    retried = answered(c.handle_init_producer_id, "tx", TIMEOUT, pid, epoch)
    assert (retried.error, retried.producer_epoch) == (Errors.NONE, 1)
    # A transaction aborted on its timeout fences the epoch for good.
    answered(c.handle_add_partitions, "tx", pid, 1, [("a", 0)])
    time.sleep(TIMEOUT + 1)
    c.abort_timed_out_transactions()
    assert (
        answered(c.handle_init_producer_id, "tx", TIMEOUT, pid, 1).error is Errors.PRODUCER_FENCED
    )
    assert (
        answered(c.handle_init_producer_id, "tx", TIMEOUT, pid + 1, 0).error
        is Errors.PRODUCER_FENCED
    )
    assert init(c) == (pid, 3)


def test_a_failed_append_undoes_the_transition() -> None:
    c, _, _, store = make()
    pid, epoch = init(c)

    def broken(txn: TransactionMetadata, done: object = None) -> None:
        raise OSError("log offline")

    working = store.store
    store.store = broken  # type: ignore[method-assign]
    with pytest.raises(OSError):
        answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)])
    txn = c.get("tx")
    assert txn is not None and txn.state is S.EMPTY and txn.partitions == set()
    with pytest.raises(OSError):
        answered(c.handle_init_producer_id, "tx", TIMEOUT)
    assert txn.producer_epoch == epoch
    store.store = working  # type: ignore[method-assign]
    assert answered(c.handle_add_partitions, "tx", pid, epoch, [("a", 0)]) is Errors.NONE


class HeldStore(TransactionStore):
    """Keeps each write's completion for the test to run with the error it chooses."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[Callable[[Errors], None]] = []

    def append(
        self,
        transactional_id: str,
        key: bytes,
        value: bytes | None,
        done: Callable[[Errors], None] | None = None,
    ) -> None:
        self.records.append((key, value))
        if done is not None:
            self.waiting.append(done)


def test_a_transition_is_answered_once_written_and_undone_if_the_write_fails() -> None:
    store = HeldStore()
    c, _, _, _ = make(store)
    first: list[Any] = []
    c.handle_init_producer_id("tx", TIMEOUT, callback=first.append)
    assert first == []  # waits for the ISR
    # Meanwhile the id is busy, as Kafka's pending state makes it.
    assert answered(c.handle_init_producer_id, "tx", TIMEOUT).error is (
        Errors.CONCURRENT_TRANSACTIONS
    )
    store.waiting.pop()(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert first[0].error is Errors.COORDINATOR_NOT_AVAILABLE
    txn = c.get("tx")
    assert txn is not None and txn.producer_epoch == -1 and not txn.pending_transition
    again: list[Any] = []
    c.handle_init_producer_id("tx", TIMEOUT, callback=again.append)
    store.waiting.pop()(Errors.NONE)
    assert again[0].error is Errors.NONE and again[0].producer_epoch == 0
