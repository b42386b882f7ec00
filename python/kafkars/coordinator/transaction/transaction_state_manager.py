"""TransactionStateManager: keeps transactional ids durable in `__transaction_state`.

The topic is created on first use (compacted, `transaction.state.log.num.partitions`),
each id's records go to partition `partition_for(transactional_id)`, and start-up
replays every partition (last record per key wins; a null value removes the id).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from kafkars import _core, codec
from kafkars.coordinator.log_append import (
    AppendDone,
    append_replicated,
    create_internal_topic,
    logged,
    read_batches,
)
from kafkars.coordinator.transaction import records
from kafkars.coordinator.transaction.transaction_metadata import TransactionMetadata
from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.controller import Controller
    from kafkars.server.dynamic_config import DynamicBrokerConfig
    from kafkars.server.metadata_cache import MetadataCache
    from kafkars.server.replica_manager import ReplicaManager

log = logging.getLogger("kafkars.coordinator.transaction.TransactionStateManager")

TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"


class TransactionStore:
    """Where the coordinator persists its records. This base keeps them in memory (unit
    tests read them back with `load`); `TransactionStateManager` writes the topic."""

    num_partitions = 1

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def partition_for(self, transactional_id: str) -> int:
        return records.partition_for(transactional_id, self.num_partitions)

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The epoch the coordinator of `transactional_id` writes its markers with."""
        return 0

    def append(
        self,
        transactional_id: str,
        key: bytes,
        value: bytes | None,
        done: AppendDone | None = None,
    ) -> None:
        """Writes one record; `done(error)` runs once it is stored (maybe before this
        returns; here at once)."""
        self.records.append((key, value))
        if done is not None:
            done(Errors.NONE)

    def ensure_topic(self) -> None:
        pass

    def store(self, txn: TransactionMetadata, done: AppendDone | None = None) -> None:
        self.append(
            txn.transactional_id, records.key(txn.transactional_id), records.value(txn), done
        )

    def remove(self, transactional_id: str, done: AppendDone | None = None) -> None:
        self.append(transactional_id, records.key(transactional_id), None, done)

    def load(self, partitions: list[int] | None = None) -> dict[str, TransactionMetadata]:
        loaded: dict[str, TransactionMetadata] = {}
        for key, value in self.records:
            replay(key, value, loaded)
        return loaded


def replay(key: bytes, value: bytes | None, loaded: dict[str, TransactionMetadata]) -> None:
    """Applies one stored record to `loaded`."""
    try:
        txn_id = records.read_key(key)
        if txn_id is None:
            return
        if value is None:
            loaded.pop(txn_id, None)
        else:
            loaded[txn_id] = records.read_value(txn_id, value)
    except ValueError as e:
        log.warning("Skipping unreadable %s record: %s", TRANSACTION_STATE_TOPIC_NAME, e)


class TransactionStateManager(TransactionStore):
    """The durable store on this broker's `__transaction_state` partitions."""

    def __init__(
        self,
        config: DynamicBrokerConfig,
        metadata_cache: MetadataCache,
        controller: Controller,
        replica_manager: ReplicaManager,
    ) -> None:
        super().__init__()
        self.config = config
        self.metadata_cache = metadata_cache
        self.controller = controller
        self.replica_manager = replica_manager
        self.num_partitions = int(config.get("transaction.state.log.num.partitions"))
        self._create_lock = threading.Lock()
        self._topic_ready = False
        existing = metadata_cache.get(TRANSACTION_STATE_TOPIC_NAME)
        if existing is not None:
            # The partition count is fixed once the topic exists, whatever the config says.
            self.num_partitions = existing.num_partitions

    def coordinator_epoch(self, transactional_id: str) -> int:
        """Kafka's coordinator epoch: the leader epoch of the id's `__transaction_state`
        partition here. Partition leaders fence markers of an older one (the coordinator
        before a failover), whichever kind of broker wrote them."""
        partition = self.replica_manager.find_partition(
            TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id)
        )
        return max(partition.leader_epoch, 0) if partition is not None else 0

    def ensure_topic(self) -> None:
        """Creates `__transaction_state` on first use, as Kafka does on FindCoordinator."""
        if self._topic_ready:
            return
        with self._create_lock:
            if self.metadata_cache.get(TRANSACTION_STATE_TOPIC_NAME) is None:
                configs = {
                    "cleanup.policy": "compact",
                    "compression.type": "uncompressed",
                    "segment.bytes": str(self.config.get("transaction.state.log.segment.bytes")),
                }
                if len(self.metadata_cache.alive_broker_ids()) > 1:
                    configs["min.insync.replicas"] = str(
                        self.config.get("transaction.state.log.min.isr")
                    )
                create_internal_topic(
                    self.controller,
                    self.metadata_cache,
                    TRANSACTION_STATE_TOPIC_NAME,
                    self.num_partitions,
                    configs,
                    "transaction.state.log.replication.factor",
                    int(self.config.get("transaction.state.log.replication.factor")),
                )
            self._topic_ready = True

    def append(
        self,
        transactional_id: str,
        key: bytes,
        value: bytes | None,
        done: AppendDone | None = None,
    ) -> None:
        done = done or logged(f"Writing transactional id {transactional_id}")
        try:
            self.ensure_topic()
        except KafkaError as e:
            done(e.code)
            return
        now = int(time.time() * 1000)
        data = codec.build_batch([(key, value, now, [])], compression="none")
        append_replicated(
            self.replica_manager,
            TRANSACTION_STATE_TOPIC_NAME,
            self.partition_for(transactional_id),
            _core.RecordSet(data),
            int(self.config.get("request.timeout.ms")),
            done,
        )

    def load(self, partitions: list[int] | None = None) -> dict[str, TransactionMetadata]:
        """Replays `partitions` (all by default): the coordinator's state as of the last
        shutdown, or as the previous leader left it (cluster mode)."""
        if self.metadata_cache.get(TRANSACTION_STATE_TOPIC_NAME) is None:
            return {}
        started = time.monotonic()
        buffer = int(self.config.get("transaction.state.log.load.buffer.size"))
        loaded: dict[str, TransactionMetadata] = {}
        count = 0
        indexes = range(self.num_partitions) if partitions is None else partitions
        for partition_log, batch in read_batches(
            self.replica_manager, TRANSACTION_STATE_TOPIC_NAME, indexes, buffer
        ):
            if batch.is_control:
                continue
            for record in batch.records():
                if record.offset < partition_log.log_start_offset or record.key is None:
                    continue
                count += 1
                replay(bytes(record.key), record.value, loaded)
        log.info(
            "Loaded %d transactional id(s) from %d record(s) of %s in %.0f ms",
            len(loaded),
            count,
            TRANSACTION_STATE_TOPIC_NAME,
            (time.monotonic() - started) * 1000,
        )
        return loaded
