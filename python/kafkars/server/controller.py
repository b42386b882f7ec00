"""The controller: the one writer of topic metadata.

Topic administration (create, delete, add partitions, alter topic configs) goes through
a `Controller`; request handlers never write `MetadataStore` or make leaders themselves.
`LocalController` is the single-broker controller: it writes the store and makes this
broker the leader of every partition. A cluster-mode controller implements the same
`Controller` protocol and the handlers stay as they are.
"""

from __future__ import annotations

import logging
from typing import Protocol

from kafkars import _core
from kafkars.config import KafkaConfig, LogConfig
from kafkars.server.dynamic_config import DynamicBrokerConfig
from kafkars.server.errors import Errors, KafkaError
from kafkars.server.metadata import MetadataStore, TopicMetadata
from kafkars.server.replica_manager import ReplicaManager

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
        """Leads every partition of every known topic (after the logs are loaded)."""
        for topic in self._store.topics():
            self._become_leader(topic)

    def _become_leader(self, topic: TopicMetadata) -> None:
        settings = self._config.storage_config(topic.configs)
        min_isr = self._config.log_config(topic.configs).min_insync_replicas
        for index in range(topic.num_partitions):
            self._replica_manager.become_leader(
                topic.name, index, settings, min_insync_replicas=min_isr
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
        except _core.LogError as e:
            # Out of file descriptors or disk: no half-made topic stays behind. The logs
            # go first, which frees what the metadata write needs.
            self._replica_manager.remove_topic(name)
            self._store.delete(name)
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR, f"cannot create the logs of {name}: {e.args[-1]}"
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
        except _core.LogError as e:
            for index in range(before, count):
                self._replica_manager.remove_partition(name, index)
            self._store.set_partitions(name, before)
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR, f"cannot create the logs of {name}: {e.args[-1]}"
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

    def reconfigure(self, _new: KafkaConfig) -> None:
        """Re-applies every topic's settings after a dynamic broker config change."""
        for topic in self._store.topics():
            self._update_config(topic.name, topic.configs)
