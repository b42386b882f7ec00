"""Kafka's ZooKeeper-mode `MetadataCache`: the cluster as the controller last described
it in UpdateMetadata (live brokers and their endpoints, each partition's leader, epoch,
replicas and ISR). Topic configs come from ZooKeeper when a topic is first seen."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafkars.server.metadata import TopicMetadata, TopicMetadataView
from kafkars.server.metadata_cache import BrokerNode, PartitionState

LEADER_DURING_DELETE = -2


@dataclass
class _Broker:
    node_id: int
    endpoints: dict[str, tuple[str, int]]
    rack: str | None


class ZkMetadataCache(TopicMetadataView):
    def __init__(
        self,
        *,
        broker_id: int,
        cluster_id: str,
        topic_configs: Callable[[str], dict[str, str]],
    ) -> None:
        self._broker_id = broker_id
        self._cluster_id = cluster_id
        self._topic_configs = topic_configs
        self._lock = threading.Lock()
        # Notified after every UpdateMetadata: admin requests wait on it for their topics'
        # leaders (what Kafka's DelayedCreatePartitions completes on).
        self._updated = threading.Condition(self._lock)
        self._brokers: dict[int, _Broker] = {}
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}
        self._states: dict[tuple[str, int], PartitionState] = {}
        self._offline: dict[tuple[str, int], list[int]] = {}
        self._controller_id = -1
        self.controller_epoch = 0

    # -- fed by UpdateMetadata -----------------------------------------------------------
    def update(self, body: dict[str, object]) -> list[str]:
        """Applies an UpdateMetadata request; returns the topics it deleted."""
        deleted: list[str] = []
        with self._lock:
            self._controller_id = int(body["controller_id"])  # type: ignore[call-overload]
            self.controller_epoch = int(body["controller_epoch"])  # type: ignore[call-overload]
            self._brokers = {
                b["id"]: _Broker(
                    b["id"],
                    {e["listener"]: (e["host"], e["port"]) for e in b["endpoints"]},
                    b["rack"],
                )
                for b in body["live_brokers"]  # type: ignore[attr-defined]
            }
            for topic_state in body["topic_states"]:  # type: ignore[attr-defined]
                name = topic_state["topic_name"]
                for p in topic_state["partition_states"]:
                    tp = (name, p["partition_index"])
                    if p["leader"] == LEADER_DURING_DELETE:
                        self._states.pop(tp, None)
                        continue
                    self._states[tp] = PartitionState(
                        p["leader"], p["leader_epoch"], list(p["replicas"]), list(p["isr"])
                    )
                    self._offline[tp] = list(p["offline_replicas"])
                self._refresh_topic(name, topic_state["topic_id"], deleted)
            self._updated.notify_all()
        return deleted

    def await_leaders(self, name: str, partitions: int, timeout_s: float) -> bool:
        """Whether every one of the topic's first `partitions` partitions has a leader
        within `timeout_s` (as UpdateMetadata requests bring them)."""

        def led() -> bool:
            return all(
                (state := self._states.get((name, p))) is not None and state.leader_id >= 0
                for p in range(partitions)
            )

        with self._updated:
            return self._updated.wait_for(led, timeout_s)

    def await_deletion(self, name: str, timeout_s: float) -> bool:
        """Whether the topic is gone from the cache within `timeout_s`."""
        with self._updated:
            return self._updated.wait_for(lambda: name not in self._topics, timeout_s)

    def _refresh_topic(self, name: str, topic_id: uuid.UUID, deleted: list[str]) -> None:
        indexes = sorted(p for t, p in self._states if t == name)
        existing = self._topics.get(name)
        if not indexes:
            if existing is not None:
                del self._topics[name]
                self._by_id.pop(existing.topic_id, None)
                deleted.append(name)
            return
        if existing is None:
            replicas = len(self._states[(name, indexes[0])].replicas)
            existing = TopicMetadata(name, topic_id, 0, replicas, self._topic_configs(name))
            self._topics[name] = existing
            self._by_id[topic_id] = existing
        existing.num_partitions = indexes[-1] + 1

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        topic = self._topics.get(name)
        if topic is not None:
            topic.configs = dict(configs)

    # -- MetadataCache ------------------------------------------------------------------
    def topics(self) -> list[TopicMetadata]:
        with self._lock:
            return list(self._topics.values())

    def get(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def get_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def contains_partition(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._states

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        with self._lock:
            return {t.topic_id: t.name for t in self._topics.values()}

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        state = self._states.get((topic, partition))
        if state is None:
            return PartitionState(-1, -1, [], [])
        return state

    def offline_replicas(self, topic: str, partition: int) -> list[int]:
        return self._offline.get((topic, partition), [])

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    @property
    def controller_id(self) -> int:
        return self._controller_id

    def alive_broker_ids(self) -> list[int]:
        return sorted(self._brokers)

    def alive_broker_racks(self) -> dict[int, str | None]:
        """Each live broker's `broker.rack` (None when unset), for replica placement."""
        with self._lock:
            return {b.node_id: b.rack for b in self._brokers.values()}

    def alive_brokers(self, listener_name: str) -> list[BrokerNode]:
        with self._lock:
            brokers = list(self._brokers.values())
        return [
            BrokerNode(b.node_id, *b.endpoints[listener_name], b.rack)
            for b in sorted(brokers, key=lambda b: b.node_id)
            if listener_name in b.endpoints
        ]

    def node(self, broker_id: int, listener_name: str) -> BrokerNode | None:
        b = self._brokers.get(broker_id)
        if b is None or listener_name not in b.endpoints:
            return None
        return BrokerNode(broker_id, *b.endpoints[listener_name], b.rack)

    def advertised_listeners(self, broker_id: int) -> str:
        b = self._brokers.get(broker_id)
        if b is None:
            return ""
        return ",".join(f"{n}://{h}:{p}" for n, (h, p) in b.endpoints.items())
