"""The coordinators' internal topics: their creation on first use; appends to them,
acks=all (Kafka appends group and transaction state with required acks -1, so a
coordinator failover never loses what was acknowledged), completed by callback, and the
errors a client of the coordinator sees when one fails; and the reading of those topics
back when a coordinator loads."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kafkars import codec
from kafkars.protocol import Errors, KafkaError
from kafkars.server.replica_manager import ReplicaManager

if TYPE_CHECKING:
    from kafkars.server.controller import Controller
    from kafkars.server.metadata_cache import MetadataCache

log = logging.getLogger("kafkars.coordinator")


def create_internal_topic(
    controller: Controller,
    metadata_cache: MetadataCache,
    name: str,
    num_partitions: int,
    configs: dict[str, str],
    factor_config: str,
    factor: int,
) -> None:
    """Creates an internal topic with `factor` replicas (the broker setting
    `factor_config`). With fewer brokers up, Kafka waits for enough rather than create it
    under-replicated: COORDINATOR_NOT_AVAILABLE, which the client retries. Another broker
    of the cluster creating it first is no error."""
    brokers = len(metadata_cache.alive_broker_ids())
    if 1 < brokers < factor:
        raise KafkaError(
            Errors.COORDINATOR_NOT_AVAILABLE,
            f"{factor_config}={factor} but {brokers} broker(s) are up",
        )
    try:
        controller.create_topic(
            name, num_partitions, configs, replication_factor=min(factor, brokers)
        )
    except KafkaError as e:
        if e.code is not Errors.TOPIC_ALREADY_EXISTS:
            raise


# Called once with the append's error (Errors.NONE once the ISR has it).
AppendDone = Callable[[Errors], None]

# What the append's error becomes for the coordinator's client (Kafka's mapping in
# GroupMetadataManager's offset commits and TransactionStateManager): leadership lost
# means the coordinator moved; too few replicas or too slow means try it again later.
_AS_COORDINATOR_ERROR = {
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
}

# A group's metadata (SyncGroup's assignment): as above, but a timed-out write makes the
# members rejoin, and a write too large is the server's fault (GroupMetadataManager
# storeGroup).
_AS_GROUP_STORE_ERROR = {
    **_AS_COORDINATOR_ERROR,
    Errors.REQUEST_TIMED_OUT: Errors.REBALANCE_IN_PROGRESS,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR,
}


# Offset commits: as above, and offsets too large to write are the commit's fault
# (GroupMetadataManager's maybeConvertOffsetCommitError).
_AS_OFFSET_COMMIT_ERROR = {
    **_AS_COORDINATOR_ERROR,
    Errors.MESSAGE_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.RECORD_LIST_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.INVALID_FETCH_SIZE: Errors.INVALID_COMMIT_OFFSET_SIZE,
}


def offset_commit_error(error: Errors) -> Errors:
    """An append error as OffsetCommit and TxnOffsetCommit answer it."""
    return _AS_OFFSET_COMMIT_ERROR.get(error, error)


def coordinator_error(error: Errors) -> Errors:
    """An append error as an offset commit or transaction coordinator answers it."""
    return _AS_COORDINATOR_ERROR.get(error, error)


def group_store_error(error: Errors) -> Errors:
    """An append error as SyncGroup answers it (Kafka's storeGroup callback)."""
    return _AS_GROUP_STORE_ERROR.get(error, error)


def append_replicated(
    replica_manager: ReplicaManager,
    topic: str,
    partition: int,
    records: Any,
    timeout_ms: int,
    done: AppendDone,
) -> None:
    """Appends as the partition's leader; `done(error)` runs once the ISR has the
    records (Errors.NONE) or the append or the wait failed, on whichever thread
    completes it. Nothing waits here: the caller's thread returns at once."""

    def completed(error: Errors, _info: Any) -> None:
        try:
            done(error)
        except Exception:
            # Raised on a fetch or timer thread: log it there rather than lose it.
            log.exception("Completing an append to %s-%d failed", topic, partition)

    replica_manager.append_records(topic, partition, records, timeout_ms, completed)


def logged(what: str) -> AppendDone:
    """A completion for an append nobody waits for (Kafka writes tombstones with acks=0
    and only warns when a write like this fails)."""

    def done(error: Errors) -> None:
        if error is not Errors.NONE:
            log.warning("%s failed: %s", what, error.name)

    return done


def read_batches(
    replica_manager: ReplicaManager, topic: str, partitions: Iterable[int], buffer: int
) -> Iterator[tuple[Any, Any]]:
    """Every batch of `topic`'s `partitions` this broker holds, from the log start offset
    to the log end offset, read `buffer` bytes at a time (Kafka's
    `offsets.load.buffer.size` / `transaction.state.log.load.buffer.size`): yields
    (the partition's log, the batch)."""
    for index in partitions:
        handle = replica_manager.find_partition(topic, index)
        if handle is None:
            continue
        partition_log = handle.log
        position = partition_log.log_start_offset
        end = partition_log.log_end_offset
        while position < end:
            data = partition_log.read(position, buffer, end, True).read_bytes()
            if not data:
                break
            for batch in codec.decode_batches(data):
                position = max(position, batch.next_offset)
                yield partition_log, batch
