"""GroupMetadataManager: keeps groups and offsets durable in `__consumer_offsets`.

The topic is created on first use (compacted, `offsets.topic.num.partitions`), each
group's records go to partition `partition_for(group_id)`, and start-up replays every
partition (last record per key wins; a null value deletes) to rebuild the groups.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from kafkars import _core, codec
from kafkars.coordinator.group import consumer_group_records, records
from kafkars.coordinator.group.group_metadata import GroupMetadata, OffsetAndMetadata
from kafkars.coordinator.log_append import (
    AppendDone,
    append_replicated,
    create_internal_topic,
    logged,
    read_batches,
)
from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.controller import Controller
    from kafkars.server.dynamic_config import DynamicBrokerConfig
    from kafkars.server.metadata_cache import MetadataCache
    from kafkars.server.replica_manager import ReplicaManager

log = logging.getLogger("kafkars.coordinator.group.GroupMetadataManager")

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"

Record = tuple[bytes, bytes | None]


class GroupStore:
    """Where the coordinator persists its records. This base keeps nothing (unit tests)
    and completes every write at once; `GroupMetadataManager` writes to
    `__consumer_offsets` and completes a write when the ISR has it.

    Each write takes `done(error)`, called once when the write completes (maybe before
    the call returns); writes nobody waits for log their failure."""

    num_partitions = 1

    def partition_for(self, group_id: str) -> int:
        return records.partition_for(group_id, self.num_partitions)

    def append(self, group_id: str, batch: list[Record], done: AppendDone | None = None) -> None:
        if done is not None:
            done(Errors.NONE)

    def load(self, partitions: list[int] | None = None) -> dict[str, GroupMetadata]:
        return {}

    def store_group(
        self, group: GroupMetadata, assignment: dict[str, bytes], done: AppendDone | None = None
    ) -> None:
        key = records.group_metadata_key(group.group_id)
        self.append(
            group.group_id,
            [(key, records.group_metadata_value(group, assignment))],
            done or logged(f"Writing group {group.group_id} to the offsets topic"),
        )

    def store_offsets(
        self,
        group_id: str,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
        done: AppendDone,
    ) -> None:
        batch: list[Record] = [
            (records.offset_commit_key(group_id, t, p), records.offset_commit_value(o))
            for (t, p), o in offsets.items()
        ]
        if batch:
            self.append(group_id, batch, done)
        else:
            done(Errors.NONE)

    def append_transactional(
        self,
        group_id: str,
        batch: list[Record],
        producer_id: int,
        producer_epoch: int,
        done: AppendDone | None = None,
    ) -> None:
        """Appends `batch` inside the producer's transaction (TxnOffsetCommit)."""
        if done is not None:
            done(Errors.NONE)

    def store_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
        done: AppendDone,
    ) -> None:
        batch: list[Record] = [
            (records.offset_commit_key(group_id, t, p), records.offset_commit_value(o))
            for (t, p), o in offsets.items()
        ]
        self.append_transactional(group_id, batch, producer_id, producer_epoch, done)

    def delete_offsets(self, group_id: str, keys: list[tuple[str, int]]) -> None:
        if keys:
            self.append(
                group_id,
                [(records.offset_commit_key(group_id, t, p), None) for t, p in keys],
                logged(f"Deleting offsets of group {group_id}"),
            )

    def delete_group(self, group: GroupMetadata) -> None:
        batch: list[Record] = [
            (records.offset_commit_key(group.group_id, t, p), None) for t, p in group.offsets
        ]
        batch.append((records.group_metadata_key(group.group_id), None))
        self.append(group.group_id, batch, logged(f"Deleting group {group.group_id}"))


class GroupMetadataManager(GroupStore):
    """The durable store on this broker's `__consumer_offsets` partitions."""

    def __init__(
        self,
        config: DynamicBrokerConfig,
        metadata_cache: MetadataCache,
        controller: Controller,
        replica_manager: ReplicaManager,
    ) -> None:
        self.config = config
        self.metadata_cache = metadata_cache
        self.controller = controller
        self.replica_manager = replica_manager
        self.num_partitions = int(config.get("offsets.topic.num.partitions"))
        self._commit_timeout_ms = int(config.get("offsets.commit.timeout.ms"))
        self._create_lock = threading.Lock()
        # Transactional offset commits, one lock per partition slot (plain commits need none).
        self._append_locks = [threading.Lock() for _ in range(64)]
        self._topic_ready = False
        # The consumer-protocol group records found by `load`, last value per key.
        self.consumer_group_records: dict[bytes, bytes] = {}
        # Transactional offsets `load` found without their transaction's marker yet.
        self.pending_txn_offsets: dict[
            int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]
        ] = {}
        existing = metadata_cache.get(GROUP_METADATA_TOPIC_NAME)
        if existing is not None:
            # The partition count is fixed once the topic exists, whatever the config says now.
            self.num_partitions = existing.num_partitions

    def ensure_topic(self) -> None:
        """Creates `__consumer_offsets` on first use, as Kafka does on FindCoordinator."""
        # Ready only once the creating thread is done: the topic's metadata appears before
        # its partitions, and an append in between would find no partition.
        if self._topic_ready:
            return
        with self._create_lock:
            if self.metadata_cache.get(GROUP_METADATA_TOPIC_NAME) is not None:
                self._topic_ready = True
                return
            configs = {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(self.config.get("offsets.topic.segment.bytes")),
            }
            create_internal_topic(
                self.controller,
                self.metadata_cache,
                GROUP_METADATA_TOPIC_NAME,
                self.num_partitions,
                configs,
                "offsets.topic.replication.factor",
                int(self.config.get("offsets.topic.replication.factor")),
            )
            self._topic_ready = True

    def append(self, group_id: str, batch: list[Record], done: AppendDone | None = None) -> None:
        done = done or logged(f"Writing group {group_id} to the offsets topic")
        try:
            self.ensure_topic()
        except KafkaError as e:
            done(e.code)
            return
        now = int(time.time() * 1000)
        data = codec.build_batch([(k, v, now, []) for k, v in batch], compression="none")
        # No lock: the partition's log orders concurrent appends itself.
        append_replicated(
            self.replica_manager,
            GROUP_METADATA_TOPIC_NAME,
            self.partition_for(group_id),
            _core.RecordSet(data),
            self._commit_timeout_ms,
            done,
        )

    def append_transactional(
        self,
        group_id: str,
        batch: list[Record],
        producer_id: int,
        producer_epoch: int,
        done: AppendDone | None = None,
    ) -> None:
        done = done or logged(f"Writing transactional offsets of group {group_id}")
        try:
            self.ensure_topic()
        except KafkaError as e:
            done(e.code)
            return
        now = int(time.time() * 1000)
        partition = self.partition_for(group_id)
        # The sequence is read, then written: one writer per partition at a time (the
        # lock covers the append only; the wait for the ISR happens after it).
        with self._append_locks[partition % len(self._append_locks)]:
            # The log checks the producer's sequence as for any transactional write.
            try:
                partition_log = self.replica_manager.get_partition(
                    GROUP_METADATA_TOPIC_NAME, partition
                ).log
            except KafkaError as e:
                done(e.code)
                return
            state = partition_log.producer_state(producer_id)
            sequence = state[1] + 1 if state is not None and state[0] == producer_epoch else 0
            data = codec.build_batch(
                [(k, v, now, []) for k, v in batch],
                compression="none",
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=sequence,
                is_transactional=True,
            )
            try:
                info = self.replica_manager.append(
                    GROUP_METADATA_TOPIC_NAME, partition, _core.RecordSet(data), required_acks=-1
                )
            except KafkaError as e:
                done(e.code)
                return
        self.replica_manager.delay_produce(
            GROUP_METADATA_TOPIC_NAME,
            partition,
            info,
            self._commit_timeout_ms,
            lambda error, _info: done(error),
        )

    def load(self, partitions: list[int] | None = None) -> dict[str, GroupMetadata]:
        """Replays `partitions` (all of them by default): the coordinator's state as of
        the last shutdown, or as the previous leader left it (cluster mode)."""
        if self.metadata_cache.get(GROUP_METADATA_TOPIC_NAME) is None:
            return {}
        started = time.monotonic()
        buffer = int(self.config.get("offsets.load.buffer.size"))
        groups: dict[str, GroupMetadata] = {}
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        removed: set[str] = set()
        count = 0
        indexes = range(self.num_partitions) if partitions is None else partitions
        for partition_log, batch in read_batches(
            self.replica_manager, GROUP_METADATA_TOPIC_NAME, indexes, buffer
        ):
            if batch.is_control:
                # A transaction marker: its offsets are committed or dropped.
                pending = self.pending_txn_offsets.pop(batch.producer_id, {})
                control = batch.records()
                key = control[0].key if control else None
                if key is not None and len(key) >= 4 and key[2:4] == b"\x00\x01":
                    for group_id, group_offsets in pending.items():
                        offsets.setdefault(group_id, {}).update(group_offsets)
                continue
            target = offsets
            if batch.is_transactional:
                target = self.pending_txn_offsets.setdefault(batch.producer_id, {})
            for record in batch.records():
                if record.offset < partition_log.log_start_offset or record.key is None:
                    continue
                count += 1
                record_type = int.from_bytes(record.key[:2], "big", signed=True)
                if record_type in consumer_group_records.CONSUMER_GROUP_RECORD_TYPES:
                    # KIP-848 groups: ConsumerGroupCoordinator.load rebuilds them.
                    if record.value is None:
                        self.consumer_group_records.pop(bytes(record.key), None)
                    else:
                        self.consumer_group_records[bytes(record.key)] = bytes(record.value)
                    continue
                self._replay(record.key, record.value, groups, target, removed)
        for group_id, group_offsets in offsets.items():
            group = groups.get(group_id)
            if group is None:
                group = groups[group_id] = GroupMetadata(group_id)  # a simple-commit group
            group.offsets.update(group_offsets)
        log.info(
            "Loaded %d group(s) from %d record(s) of %s in %.0f ms",
            len(groups),
            count,
            GROUP_METADATA_TOPIC_NAME,
            (time.monotonic() - started) * 1000,
        )
        return groups

    @staticmethod
    def _replay(
        key_bytes: bytes,
        value: bytes | None,
        groups: dict[str, GroupMetadata],
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]],
        removed: set[str],
    ) -> None:
        try:
            key = records.read_key(key_bytes)
            if isinstance(key, records.OffsetKey):
                group_offsets = offsets.setdefault(key.group, {})
                if value is None:
                    group_offsets.pop((key.topic, key.partition), None)
                else:
                    group_offsets[(key.topic, key.partition)] = records.read_offset_commit_value(
                        value
                    )
            elif isinstance(key, records.GroupKey):
                if value is None:
                    groups.pop(key.group, None)
                    removed.add(key.group)
                else:
                    groups[key.group] = records.read_group_metadata_value(key.group, value)
        except (ValueError, IndexError, UnicodeDecodeError) as e:  # struct.error is a ValueError
            log.warning("Skipping unreadable %s record: %s", GROUP_METADATA_TOPIC_NAME, e)
