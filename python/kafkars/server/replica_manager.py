"""Partitions this broker holds and the logs behind them (Kafka's `ReplicaManager`).

Each partition is a Rust `_core.Partition` handle: it owns the log, the leader epoch, the
replicas and ISR and computes the high watermark; Python asks it to lead, follow and
append. Record bytes stay in Rust: appends take `RecordSet` handles from the request, and
fetches are read and answered in Rust (`_core.DelayedOperations`), which every append
and high-watermark move wakes without the GIL.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkars import _core
from kafkars.protocol import Errors, KafkaError

TopicPartition = tuple[str, int]
# (error, the append info when it succeeded)
AppendCallback = Callable[[Errors, Any], None]


class ReplicaManager:
    """Owns the `_core.Partition` handles and routes appends to them."""

    def __init__(
        self,
        log_manager: Any,
        broker_id: int,
        delayed: _core.DelayedOperations | None = None,
        fetchers: _core.ReplicaFetcherManager | None = None,
    ) -> None:
        self.log_manager = log_manager
        self.broker_id = broker_id
        # The fetch and produce purgatories the partitions wake (None: nothing waits).
        self.delayed = delayed
        # The Rust replica fetcher threads followers copy their leaders' logs with.
        self.fetchers = fetchers
        self._partitions: dict[TopicPartition, _core.Partition] = {}
        # In a cluster, the brokers followers must be among to join the ISR (set by the
        # ClusterMember from UpdateMetadata); a single broker has no followers.
        self.live_brokers: _core.LiveBrokers | None = None
        # Byte and record counts of partitions deleted since start-up, so the per-topic
        # counters never go down.
        self.retired_counters: dict[str, list[int]] = {}
        # Log dirs whose failure was handled (resolved paths): their replicas answer
        # LeaderAndIsr with KAFKA_STORAGE_ERROR until restart.
        self._offline_dirs: set[str] = set()
        self._lock = threading.Lock()

    def _partition(
        self,
        topic: str,
        partition: int,
        log_config: dict[str, Any],
        topic_id: uuid.UUID | None = None,
    ) -> Any:
        """The partition's handle, opening its log on first use; its `partition.metadata`
        records `topic_id` (KafkaError INCONSISTENT_TOPIC_ID if the directory is another
        topic's, as Kafka's Partition.createLogIfNotExists refuses it)."""
        handle = self._partitions.get((topic, partition))
        if handle is None:
            log = self.log_manager.get_or_create_log(topic, partition, log_config)
            handle = _core.Partition(log, self.broker_id, self.delayed, self.live_brokers)
            self._partitions[(topic, partition)] = handle
        if topic_id is not None and topic_id.int != 0:
            handle.log.assign_topic_id(topic_id.bytes)
        return handle

    def handle_log_dir_failure(self, log_dir: str) -> list[TopicPartition]:
        """Kafka's ReplicaManager.handleLogDirFailure: the replicas in the failed `log_dir`
        stop fetching and stay offline; returns them (only the first call per dir)."""
        resolved = str(Path(log_dir).resolve())
        with self._lock:
            if resolved in self._offline_dirs:
                return []
            self._offline_dirs.add(resolved)
            offline = [tp for tp, p in self._partitions.items() if self._in_offline_dir(p)]
            if self.fetchers is not None and offline:
                self.fetchers.remove_partitions(offline)
        return offline

    def _in_offline_dir(self, handle: Any) -> bool:
        parent = handle.log.dir_parent
        return parent is not None and str(Path(parent).resolve()) in self._offline_dirs

    def _check_online(self, topic: str, partition: int) -> None:
        handle = self._partitions.get((topic, partition))
        if handle is not None and self._offline_dirs and self._in_offline_dir(handle):
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR,
                f"{topic}-{partition} is in an offline log dir on broker {self.broker_id}",
            )

    def become_leader(
        self,
        topic: str,
        partition: int,
        log_config: dict[str, Any],
        *,
        leader_epoch: int = 0,
        replicas: list[int] | None = None,
        isr: list[int] | None = None,
        min_insync_replicas: int = 1,
        topic_id: uuid.UUID | None = None,
    ) -> Any:
        """Leads `topic`-`partition` (alone, unless `replicas`/`isr` name followers);
        KafkaError KAFKA_STORAGE_ERROR if its log dir failed."""
        with self._lock:
            self._check_online(topic, partition)
            handle = self._partition(topic, partition, log_config, topic_id)
            if self.fetchers is not None and not handle.is_leader:
                self.fetchers.remove_partitions([(topic, partition)])
            handle.set_min_insync_replicas(min_insync_replicas)
            if not handle.is_leader or handle.leader_epoch != leader_epoch:
                handle.make_leader(
                    leader_epoch, replicas or [self.broker_id], isr or [self.broker_id]
                )
            return handle

    def become_follower(
        self,
        topic: str,
        partition: int,
        log_config: dict[str, Any],
        leader_id: int,
        leader_epoch: int,
        replicas: list[int] | None = None,
        isr: list[int] | None = None,
        *,
        leader_endpoint: tuple[str, int] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> Any:
        """Follows `leader_id` for `topic`-`partition`, fetching from `leader_endpoint`
        (its inter-broker listener) when given; waiting requests on the partition are
        answered (NOT_LEADER_OR_FOLLOWER for produces, the fetch re-read for fetches).
        KafkaError KAFKA_STORAGE_ERROR if its log dir failed."""
        with self._lock:
            self._check_online(topic, partition)
            handle = self._partition(topic, partition, log_config, topic_id)
            changed = handle.make_follower(leader_id, leader_epoch, replicas or [], isr or [])
            if self.fetchers is not None:
                if leader_endpoint is None:
                    self.fetchers.remove_partitions([(topic, partition)])
                elif changed or not self._is_fetching(topic, partition):
                    host, port = leader_endpoint
                    self.fetchers.add_partitions(leader_id, host, port, [(handle, leader_epoch)])
        if self.delayed is not None:
            self.delayed.check_and_complete(topic, partition)
        return handle

    def _is_fetching(self, topic: str, partition: int) -> bool:
        assert self.fetchers is not None
        return any(s[:2] == (topic, partition) for s in self.fetchers.fetch_states())

    def isr_shrinks(self, max_lag_ms: int) -> list[tuple[str, int, int, list[int]]]:
        """For every partition this broker leads whose followers are not all caught up
        within `max_lag_ms`: (topic, partition, leader epoch, smaller ISR), applied only
        once recorded (Partition.commit_isr)."""
        shrinks = []
        for (topic, index), p in list(self._partitions.items()):
            if p.is_leader:
                shrink = p.isr_shrink(max_lag_ms)
                if shrink is not None:
                    shrinks.append((topic, index, *shrink))
        return shrinks

    def maybe_shrink_isr(self, max_lag_ms: int) -> list[tuple[str, int, list[int]]]:
        """Drops followers not caught up within `max_lag_ms` from the ISR of every
        partition this broker leads, at once (a broker with no controller to tell);
        returns the changes."""
        changes = []
        for (topic, index), p in list(self._partitions.items()):
            if p.is_leader:
                isr = p.maybe_shrink_isr(max_lag_ms)
                if isr is not None:
                    changes.append((topic, index, isr))
        return changes

    def take_isr_expansions(self) -> list[tuple[str, int, list[int]]]:
        """Followers that joined an ISR (on their fetches) since the last call."""
        return self.delayed.take_isr_changes() if self.delayed is not None else []

    def update_config(
        self,
        topic: str,
        log_config: dict[str, Any],
        *,
        min_insync_replicas: int = 1,
    ) -> None:
        for (t, _), p in list(self._partitions.items()):
            if t == topic:
                p.log.update_config(log_config)
                p.set_min_insync_replicas(min_insync_replicas)

    def remove_topic(self, topic: str) -> None:
        with self._lock:
            for tp in [tp for tp in self._partitions if tp[0] == topic]:
                self._remove_partition_locked(*tp)

    def remove_partition(self, topic: str, partition: int) -> None:
        """Deletes one replica's log (StopReplica with delete)."""
        with self._lock:
            if (topic, partition) in self._partitions:
                self._remove_partition_locked(topic, partition)
            elif self.log_manager.get_log(topic, partition) is not None:
                self.log_manager.delete_log(topic, partition)

    def _remove_partition_locked(self, topic: str, partition: int) -> None:
        tp = (topic, partition)
        if self.fetchers is not None:
            self.fetchers.remove_partitions([tp])
        handle = self._partitions.pop(tp)
        if handle.is_leader:
            # Waiting produces check leadership on this handle: without this they would
            # wait out their timeout instead of hearing NOT_LEADER_OR_FOLLOWER now.
            handle.make_follower(-1, handle.leader_epoch, [], [])
        retired = self.retired_counters.setdefault(topic, [0, 0, 0])
        for i, value in enumerate(handle.counters):
            retired[i] += value
        self.log_manager.delete_log(topic, partition)
        # Fetches and produces waiting on it are answered now, not at their timeout.
        if self.delayed is not None:
            self.delayed.check_and_complete(topic, partition)

    def stop_fetching(self, topic: str, partition: int) -> None:
        """Stops replicating a partition without deleting it (StopReplica without delete,
        on a broker shutting down)."""
        with self._lock:
            handle = self._partitions.get((topic, partition))
            if handle is None:
                return
            if self.fetchers is not None:
                self.fetchers.remove_partitions([(topic, partition)])
            if handle.is_leader:
                handle.make_follower(-1, handle.leader_epoch, [], [])
        if self.delayed is not None:
            self.delayed.check_and_complete(topic, partition)

    def resign_replicated_leaderships(self) -> None:
        """After a controlled shutdown moved them: every partition led here that has
        followers stops being led here, as the controller's StopReplica does, and what
        waits on it is answered (NOT_LEADER_OR_FOLLOWER)."""
        for (topic, partition), handle in list(self._partitions.items()):
            if handle.is_leader and handle.replica_states:
                self.stop_fetching(topic, partition)

    def get_partition(self, topic: str, partition: int) -> Any:
        """The partition, if this broker leads it (Kafka's getPartitionOrException with
        the leader check every client-facing request makes)."""
        p = self._partitions.get((topic, partition))
        if p is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if not p.is_leader:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"Broker {self.broker_id} is not the leader of {topic}-{partition}",
            )
        return p

    def find_partition(self, topic: str, partition: int) -> Any | None:
        """The partition's handle whatever this broker's role in it, or None."""
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Any]:
        return list(self._partitions.values())

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
        handle = self._partitions.get((topic, partition))
        if handle is None:
            callback(Errors.NOT_LEADER_OR_FOLLOWER, None)
            return
        assert self.delayed is not None, "a broker's replica manager has its purgatories"

        def done(code: int) -> None:
            callback(Errors(code), info if code == 0 else None)

        self.delayed.delay_produce(handle, info.last_offset + 1, timeout_ms, done)

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
        p = self._partitions.get((topic, partition))
        return p.leader_epoch if p else -1
