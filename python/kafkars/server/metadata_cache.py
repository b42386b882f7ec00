"""Kafka's `MetadataCache`: the read view request handlers take of the cluster.

Topics (names, ids, partition counts, configs), the brokers that serve them and where
clients reach them, who leads each partition, the cluster id and the controller.
`MetadataCache` is the protocol the handlers use; `LocalMetadataCache` answers it for a
broker that is the whole cluster, from `MetadataStore`. A cluster-mode cache, fed by the
controller, answers the same questions without the handlers changing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafkars.server.metadata import MetadataStore, TopicMetadata


@dataclass(frozen=True)
class BrokerNode:
    """A broker as a client sees it on one listener."""

    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class PartitionState:
    """Who leads a partition, at which epoch, and its replicas and in-sync replicas."""

    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


class MetadataCache(Protocol):
    def topics(self) -> list[TopicMetadata]: ...

    def get(self, name: str) -> TopicMetadata | None: ...

    def get_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None: ...

    def contains_partition(self, topic: str, partition: int) -> bool: ...

    def topic_names_by_id(self) -> dict[uuid.UUID, str]: ...

    def partition_state(self, topic: str, partition: int) -> PartitionState: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def controller_id(self) -> int: ...

    def alive_brokers(self, listener_name: str) -> list[BrokerNode]: ...

    def node(self, broker_id: int, listener_name: str) -> BrokerNode | None: ...

    def advertised_listeners(self, broker_id: int) -> str: ...

    def alive_broker_ids(self) -> list[int]: ...

    def alive_broker_racks(self) -> dict[int, str | None]: ...

    def offline_replicas(self, topic: str, partition: int) -> list[int]: ...


class LocalMetadataCache:
    """`endpoint(listener)` is the local broker's advertised (host, port) on a listener,
    `listener_names()` the listeners it has bound, `rack()` its rack: all read when asked,
    as the listeners are bound after the cache is made. `leader_epoch(topic, partition)`
    is the epoch this broker leads the partition at."""

    def __init__(
        self,
        store: MetadataStore,
        *,
        broker_id: int,
        cluster_id: str,
        endpoint: Callable[[str], tuple[str, int]],
        listener_names: Callable[[], list[str]],
        rack: Callable[[], str | None],
        leader_epoch: Callable[[str, int], int],
    ) -> None:
        self._store = store
        self._broker_id = broker_id
        self._cluster_id = cluster_id
        self._endpoint = endpoint
        self._listener_names = listener_names
        self._rack = rack
        self._leader_epoch = leader_epoch

    # -- topics --------------------------------------------------------------------------
    def topics(self) -> list[TopicMetadata]:
        return self._store.topics()

    def get(self, name: str) -> TopicMetadata | None:
        return self._store.get(name)

    def get_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._store.get_by_id(topic_id)

    def contains_partition(self, topic: str, partition: int) -> bool:
        meta = self._store.get(topic)
        return meta is not None and 0 <= partition < meta.num_partitions

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        return {t.topic_id: t.name for t in self._store.topics()}

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        """One broker: it leads every partition and is its only replica."""
        me = [self._broker_id]
        return PartitionState(self._broker_id, self._leader_epoch(topic, partition), me, me)

    def offline_replicas(self, topic: str, partition: int) -> list[int]:
        return []

    # -- brokers -------------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    def alive_broker_ids(self) -> list[int]:
        return [self._broker_id]

    def alive_broker_racks(self) -> dict[int, str | None]:
        return {self._broker_id: self._rack()}

    @property
    def controller_id(self) -> int:
        return self._broker_id

    def alive_brokers(self, listener_name: str) -> list[BrokerNode]:
        """Every live broker with its endpoint on `listener_name`."""
        host, port = self._endpoint(listener_name)
        return [BrokerNode(self._broker_id, host, port, self._rack())]

    def node(self, broker_id: int, listener_name: str) -> BrokerNode | None:
        """One live broker's endpoint on `listener_name`, or None."""
        return next((b for b in self.alive_brokers(listener_name) if b.node_id == broker_id), None)

    def advertised_listeners(self, broker_id: int) -> str:
        """`advertised.listeners` of a broker as clients see it, with bound ports filled
        in (empty for a broker this cache does not know)."""
        if broker_id != self._broker_id:
            return ""
        parts = []
        for name in self._listener_names():
            host, port = self._endpoint(name)
            parts.append(f"{name}://{host}:{port}")
        return ",".join(parts)
