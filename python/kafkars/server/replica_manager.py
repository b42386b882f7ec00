"""Partitions this broker holds and the logs behind them (Kafka's `ReplicaManager`).

The Rust `_core.ReplicaManager` owns them: the partition map and each partition's role
(become leader or follower, removal, offline log dirs), the fetch and produce
purgatories, and the ISR change set the cluster member records in ZooKeeper. This
wrapper adds what speaks Python: the leader check that raises `KafkaError`, and the
coordinators' acks=all appends with a Python callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkars import _core
from kafkars.protocol import Errors, KafkaError

# (error, the append info when it succeeded)
AppendCallback = Callable[[Errors, Any], None]


class ReplicaManager:
    """The broker's `_core.ReplicaManager`, with the calls the Python layers make."""

    def __init__(
        self,
        log_manager: _core.LogManager,
        broker_id: int,
        fetchers: _core.ReplicaFetcherManager | None = None,
    ) -> None:
        self.log_manager = log_manager
        self.broker_id = broker_id
        # Also the fetch and produce purgatories the request handlers use.
        self.core = _core.ReplicaManager(log_manager, broker_id, fetchers)
        core = self.core
        self.set_live_brokers = core.set_live_brokers
        self.is_newer_leader_epoch = core.is_newer_leader_epoch
        self.become_leader = core.become_leader
        self.become_follower = core.become_follower
        self.handle_log_dir_failure = core.handle_log_dir_failure
        self.update_config = core.update_config
        self.remove_topic = core.remove_topic
        self.remove_partition = core.remove_partition
        self.stop_fetching = core.stop_fetching
        self.resign_replicated_leaderships = core.resign_replicated_leaderships
        self.find_partition = core.find_partition
        self.partitions = core.partitions
        self.propose_isr_changes = core.propose_isr_changes
        self.commit_isr_change = core.commit_isr_change
        self.maybe_shrink_isr = core.maybe_shrink_isr
        self.take_isr_expansions = core.take_isr_expansions
        self.shutdown = core.shutdown
        self.release_log_manager = core.release_log_manager

    @property
    def retired_counters(self) -> dict[str, list[int]]:
        return self.core.retired_counters

    def get_partition(self, topic: str, partition: int) -> _core.Partition:
        """The partition, if this broker leads it (Kafka's getPartitionOrException with
        the leader check every client-facing request makes)."""
        p = self.core.find_partition(topic, partition)
        if p is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if not p.is_leader:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"Broker {self.broker_id} is not the leader of {topic}-{partition}",
            )
        return p

    def append(self, topic: str, partition: int, records: Any, required_acks: int = 1) -> Any:
        """Validates and appends one partition's records as its leader; returns the Rust
        append info. `required_acks=-1` needs `min.insync.replicas` in the ISR."""
        p = self.get_partition(topic, partition)
        return p.append_records_to_leader(records, required_acks)

    def append_records(
        self,
        topic: str,
        partition: int,
        records: Any,
        timeout_ms: int,
        callback: AppendCallback,
    ) -> None:
        """Kafka's appendRecords with acks=all, for the coordinators' own writes: appends
        as the leader (`min.insync.replicas` in the ISR) and parks the wait for the ISR
        in the produce purgatory. `callback(error, info)` runs once, on whichever thread
        completes it (this one, before returning, if the ISR already has the append):
        `Errors.NONE` and the append info, or the append's or the wait's error."""
        try:
            info = self.append(topic, partition, records, required_acks=-1)
        except KafkaError as e:
            callback(e.code, None)
            return
        self.delay_produce(topic, partition, info, timeout_ms, callback)

    def delay_produce(
        self, topic: str, partition: int, info: Any, timeout_ms: int, callback: AppendCallback
    ) -> None:
        """Calls `callback(error, info)` once the ISR has the append `info` describes
        (Kafka's DelayedProduce), or with why it never will."""
        handle = self.core.find_partition(topic, partition)
        if handle is None:
            callback(Errors.NOT_LEADER_OR_FOLLOWER, None)
            return

        def done(code: int) -> None:
            callback(Errors(code), info if code == 0 else None)

        self.core.delay_produce(handle, info.last_offset + 1, timeout_ms, done)

    def write_txn_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
    ) -> Any:
        """Appends the COMMIT/ABORT marker ending `producer_id`'s transaction on one
        partition (WriteTxnMarkers); returns the Rust append info."""
        p = self.get_partition(topic, partition)
        return p.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit)

    def leader_epoch(self, topic: str, partition: int) -> int:
        p = self.core.find_partition(topic, partition)
        return p.leader_epoch if p else -1
