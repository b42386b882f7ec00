"""The controller: the one writer of topic metadata.

Topic administration (create, delete, add partitions, alter topic configs) and the
controller's own requests (leader elections, partition reassignments) go through a
`Controller`, chosen once at start-up; request handlers never write `MetadataStore` or
make leaders themselves, and never ask which mode the broker runs in. `LocalController` is
the single-broker controller: it writes the store and makes this broker the leader of
every partition. `ZkAdmin` is the cluster's: it writes ZooKeeper and hands the rest to the
elected `KafkaController`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from kafkars.config import KafkaConfig, LogConfig
from kafkars.controller.reassignment import ReplicaAssignment
from kafkars.protocol import Errors, KafkaError
from kafkars.server.dynamic_config import DynamicBrokerConfig
from kafkars.server.metadata import MetadataStore, TopicMetadata
from kafkars.server.replica_manager import ReplicaManager

TopicPartition = tuple[str, int]
# A partition's outcome: (error code, message).
Outcome = tuple[int, str | None]

log = logging.getLogger("kafkars.server.KafkaServer")


class Controller(Protocol):
    def validate_topic_configs(self, configs: dict[str, str]) -> None: ...

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str],
        *,
        replication_factor: int = 1,
        assignments: list[list[int]] | None = None,
    ) -> TopicMetadata: ...

    def delete_topic(self, name: str) -> None: ...

    def add_partitions(
        self, name: str, count: int, *, assignments: list[list[int]] | None = None
    ) -> None: ...

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None: ...

    # -- what only the active controller answers (others: NOT_CONTROLLER) ---------------
    @property
    def active(self) -> bool: ...

    def elect_leaders(
        self,
        partitions: list[TopicPartition] | None,
        unclean: bool,
        reply: Callable[[dict[TopicPartition, int]], None],
    ) -> None: ...

    def alter_reassignments(
        self,
        reassignments: dict[TopicPartition, list[int] | None],
        allow_rf_change: bool,
        reply: Callable[[dict[TopicPartition, Outcome]], None],
    ) -> None: ...

    def list_reassignments(
        self,
        partitions: list[TopicPartition] | None,
        reply: Callable[[dict[TopicPartition, ReplicaAssignment]], None],
    ) -> None: ...


def validate_topic_configs(configs: dict[str, str]) -> None:
    """Topic config overrides as Kafka checks them; INVALID_CONFIG names the rule broken."""
    try:
        LogConfig.validate_overrides(configs)
    except Exception as e:  # ConfigException: the message names key, value and rule
        raise KafkaError(Errors.INVALID_CONFIG, str(e)) from None


class LocalController:
    """This broker controls itself: the store is the cluster's metadata and every
    partition's leader is here."""

    def __init__(
        self, store: MetadataStore, replica_manager: ReplicaManager, config: DynamicBrokerConfig
    ) -> None:
        self._store = store
        self._replica_manager = replica_manager
        self._config = config

    def startup(self) -> None:
        """Leads every partition of every known topic (after the logs are loaded). A
        topic whose directories belong to another topic id (`partition.metadata`) stays
        offline, logged, and the broker serves the rest."""
        for topic in self._store.topics():
            try:
                self._become_leader(topic)
            except KafkaError as e:
                log.error("Cannot lead the partitions of %s: %s", topic.name, e)

    def _become_leader(self, topic: TopicMetadata) -> None:
        settings = self._config.storage_config(topic.configs)
        min_isr = self._config.log_config(topic.configs).min_insync_replicas
        for index in range(topic.num_partitions):
            self._replica_manager.become_leader(
                topic.name,
                index,
                settings,
                min_insync_replicas=min_isr,
                topic_id=topic.topic_id,
            )

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
        # One broker: every replica list is [this broker] (the handlers checked it).
        topic = self._store.create(name, partitions, 1, configs)
        try:
            self._become_leader(topic)
        except KafkaError as e:
            # Out of file descriptors or disk: no half-made topic stays behind. The logs
            # go first, which frees what the metadata write needs.
            self._replica_manager.remove_topic(name)
            self._store.delete(name)
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR, f"cannot create the logs of {name}: {e}"
            ) from None
        log.info("Created topic %s with %d partition(s), id %s", name, partitions, topic.topic_id)
        return topic

    def delete_topic(self, name: str) -> None:
        self._store.delete(name)
        self._replica_manager.remove_topic(name)
        log.info("Deleted topic %s", name)

    def add_partitions(
        self, name: str, count: int, *, assignments: list[list[int]] | None = None
    ) -> None:
        # One broker: every new replica list is [this broker] (the handler checked it).
        topic = self._store.get(name)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        before = topic.num_partitions
        self._store.set_partitions(name, count)
        try:
            self._become_leader(topic)
        except KafkaError as e:
            for index in range(before, count):
                self._replica_manager.remove_partition(name, index)
            self._store.set_partitions(name, before)
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR, f"cannot create the logs of {name}: {e}"
            ) from None

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replaces a topic's overrides and applies them to its logs at once."""
        self._store.set_configs(name, configs)
        self._update_config(name, configs)

    def _update_config(self, name: str, configs: dict[str, str]) -> None:
        self._replica_manager.update_config(
            name,
            self._config.storage_config(configs),
            min_insync_replicas=self._config.log_config(configs).min_insync_replicas,
        )

    # -- the controller's requests: a single broker leads every partition already ------
    @property
    def active(self) -> bool:
        return True

    def _exists(self, topic: str, index: int) -> bool:
        state = self._store.get(topic)
        return state is not None and 0 <= index < state.num_partitions

    def elect_leaders(
        self,
        partitions: list[TopicPartition] | None,
        unclean: bool,
        reply: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        """Each named partition: ELECTION_NOT_NEEDED (its leader is here)."""
        reply(
            {
                (topic, index): int(
                    Errors.ELECTION_NOT_NEEDED
                    if self._exists(topic, index)
                    else Errors.UNKNOWN_TOPIC_OR_PARTITION
                )
                for topic, index in partitions or []
            }
        )

    def alter_reassignments(
        self,
        reassignments: dict[TopicPartition, list[int] | None],
        allow_rf_change: bool,
        reply: Callable[[dict[TopicPartition, Outcome]], None],
    ) -> None:
        """Each replica set checked as Kafka's single node checks it; a valid one is this
        broker already, so the reassignment completes at once."""
        reply({tp: self._reassignment(*tp, r) for tp, r in reassignments.items()})

    def _reassignment(self, topic: str, index: int, replicas: list[int] | None) -> Outcome:
        if not self._exists(topic, index):
            message = f"Unable to find partition {topic}-{index}."
            return int(Errors.UNKNOWN_TOPIC_OR_PARTITION), message
        if replicas is None:
            return int(Errors.NO_REASSIGNMENT_IN_PROGRESS), None
        if len(set(replicas)) != len(replicas):
            return int(Errors.INVALID_REPLICA_ASSIGNMENT), f"Duplicate replicas in {replicas}."
        unknown = set(replicas) - {self._replica_manager.broker_id}
        if not replicas or unknown:
            return (
                int(Errors.INVALID_REPLICA_ASSIGNMENT),
                f"The manual partition assignment includes a broker that is not registered: "
                f"{sorted(unknown)}.",
            )
        return 0, None

    def list_reassignments(
        self,
        partitions: list[TopicPartition] | None,
        reply: Callable[[dict[TopicPartition, ReplicaAssignment]], None],
    ) -> None:
        """Nothing is ever in progress."""
        reply({})

    def reconfigure(self, _new: KafkaConfig) -> None:
        """Re-applies every topic's settings after a dynamic broker config change."""
        for topic in self._store.topics():
            self._update_config(topic.name, topic.configs)
