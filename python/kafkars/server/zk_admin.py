"""Topic administration in cluster mode (Kafka's AdminZkClient): request handlers on any
broker write the change to ZooKeeper; the elected controller, watching there, makes it
happen (leaders, ISRs, LeaderAndIsr and UpdateMetadata to the brokers). Elections and
reassignments go to this broker's `KafkaController`, which answers them while elected."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable

from kazoo.exceptions import NodeExistsError

from kafkars.controller.kafka_controller import KafkaController
from kafkars.controller.reassignment import ReplicaAssignment
from kafkars.controller.replica_placement import assign_replicas
from kafkars.protocol import Errors, KafkaError
from kafkars.server.controller import Outcome, TopicPartition, validate_topic_configs
from kafkars.server.metadata import TopicMetadata
from kafkars.server.zk_metadata_cache import ZkMetadataCache
from kafkars.zk.kafka_zk_client import KafkaZkClient
from kafkars.zk.zk_data import TopicAssignment

log = logging.getLogger("kafkars.server.ZkAdmin")

# How long CreateTopics waits for the controller to elect the new topic's leaders (Kafka
# answers through a DelayedCreatePartitions bounded by the request's timeout).
_WAIT_FOR_LEADERS_S = 10.0


class ZkAdmin:
    def __init__(
        self, zk: KafkaZkClient, cache: ZkMetadataCache, controller: KafkaController
    ) -> None:
        self.zk = zk
        self.cache = cache
        self._controller = controller

    @property
    def active(self) -> bool:
        return self._controller.active

    def elect_leaders(
        self,
        partitions: list[TopicPartition] | None,
        unclean: bool,
        reply: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        self._controller.elect_leaders(partitions, unclean, reply)

    def alter_reassignments(
        self,
        reassignments: dict[TopicPartition, list[int] | None],
        allow_rf_change: bool,
        reply: Callable[[dict[TopicPartition, Outcome]], None],
    ) -> None:
        self._controller.alter_reassignments(reassignments, allow_rf_change, reply)

    def list_reassignments(
        self,
        partitions: list[TopicPartition] | None,
        reply: Callable[[dict[TopicPartition, ReplicaAssignment]], None],
    ) -> None:
        self._controller.list_reassignments(partitions, reply)

    def validate_topic_configs(self, configs: dict[str, str]) -> None:
        validate_topic_configs(configs)

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str],
        *,
        replication_factor: int = 1,
        assignments: list[list[int]] | None = None,
    ) -> TopicMetadata:
        if assignments:
            replicas = dict(enumerate(assignments))
        else:
            replicas = assign_replicas(
                self.cache.alive_broker_racks(), partitions, replication_factor
            )
        topic_id = uuid.uuid4()
        try:
            self.zk.create_topic(name, TopicAssignment(topic_id, replicas), configs)
        except NodeExistsError:
            raise KafkaError(
                Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
            ) from None
        log.info("Created topic %s with assignment %s", name, replicas)
        self.cache.await_leaders(name, len(replicas), _WAIT_FOR_LEADERS_S)
        return TopicMetadata(name, topic_id, partitions, len(replicas[0]), dict(configs))

    def delete_topic(self, name: str) -> None:
        self.zk.mark_topic_for_deletion(name)
        self.cache.await_deletion(name, _WAIT_FOR_LEADERS_S)

    def add_partitions(
        self, name: str, count: int, *, assignments: list[list[int]] | None = None
    ) -> None:
        current = self.zk.get_topic_assignment(name)
        if any(current.is_reassigning(p) for p in current.partitions):
            raise KafkaError(
                Errors.REASSIGNMENT_IN_PROGRESS, f"A partition reassignment of {name} is running."
            )
        existing = len(current.partitions)
        factor = len(current.partitions[0])
        if assignments:
            added = {existing + i: list(replicas) for i, replicas in enumerate(assignments)}
        else:
            brokers = self.cache.alive_broker_racks()
            # Kafka continues from where partition 0's leader sits among the brokers by id.
            first_leader = current.partitions[0][0]
            start = next((i for i, b in enumerate(sorted(brokers)) if b >= first_leader), 0)
            added = assign_replicas(
                brokers, count - existing, factor, start_partition=existing, fixed_start_index=start
            )
        self.zk.set_topic_assignment(
            name, dataclasses.replace(current, partitions={**current.partitions, **added})
        )
        self.cache.await_leaders(name, count, _WAIT_FOR_LEADERS_S)

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.zk.set_topic_configs(name, configs)
        self.cache.set_topic_configs(name, configs)
