"""Topic metadata the single-broker controller owns: ids, partition counts, configs.

Kept in `kafkars-metadata.json` in the first log dir (written atomically) so a restart
finds every topic, its id and its config overrides again.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkars.protocol import Errors, KafkaError

METADATA_FILE = "kafkars-metadata.json"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249


@dataclass
class TopicMetadata:
    """One topic: its id, partition count, replication factor and config overrides."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def validate_topic_name(name: str) -> None:
    """Kafka's topic-name rules (`Topic.validate`)."""
    if not name or name in (".", ".."):
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, f"Topic name '{name}' is illegal")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name is longer than the maximum of {MAX_TOPIC_NAME_LENGTH} characters",
        )
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name '{name}' contains characters other than ASCII alphanumerics, '.', '_' "
            "and '-'",
        )


class TopicMetadataView:
    """The view of the topics the group coordinators take, over a holder's `_topics`
    (by name) and `_by_id`: the single-broker store and the ZooKeeper cache alike."""

    _topics: dict[str, TopicMetadata]
    _by_id: dict[uuid.UUID, TopicMetadata]

    def partition_count(self, name: str) -> int | None:
        topic = self._topics.get(name)
        return topic.num_partitions if topic is not None else None

    def topic_id(self, name: str) -> uuid.UUID | None:
        topic = self._topics.get(name)
        return topic.topic_id if topic is not None else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self._by_id.get(topic_id)
        return topic.name if topic is not None else None

    def topic_names(self) -> list[str]:
        """Topics a regex subscription may match: internal topics never do."""
        return [t.name for t in list(self._topics.values()) if not t.is_internal]


class MetadataStore(TopicMetadataView):
    """Topics known to the cluster, persisted in a log dir."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / METADATA_FILE
        self._lock = threading.RLock()
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}
        self._next_producer_id = 0
        self._load()

    def _load(self) -> None:
        if not self._path.exists():
            return
        data = json.loads(self._path.read_text())
        for entry in data.get("topics", []):
            topic = TopicMetadata(
                name=entry["name"],
                topic_id=uuid.UUID(entry["topic_id"]),
                num_partitions=int(entry["num_partitions"]),
                replication_factor=int(entry.get("replication_factor", 1)),
                configs=dict(entry.get("configs", {})),
            )
            self._topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic
        self._next_producer_id = int(data.get("next_producer_id", 0))

    def _save(self) -> None:
        data = {
            "version": 1,
            "next_producer_id": self._next_producer_id,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": str(t.topic_id),
                    "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor,
                    "configs": t.configs,
                }
                for t in self._topics.values()
            ],
        }
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)

    def topics(self) -> list[TopicMetadata]:
        with self._lock:
            return list(self._topics.values())

    def get(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def get_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def create(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> TopicMetadata:
        with self._lock:
            if name in self._topics:
                raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            topic = TopicMetadata(name, uuid.uuid4(), num_partitions, replication_factor, configs)
            self._topics[name] = topic
            self._by_id[topic.topic_id] = topic
            self._save()
            return topic

    def delete(self, name: str) -> TopicMetadata:
        with self._lock:
            topic = self._topics.pop(name, None)
            if topic is None:
                raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            self._by_id.pop(topic.topic_id, None)
            self._save()
            return topic

    def set_partitions(self, name: str, num_partitions: int) -> None:
        with self._lock:
            self._topics[name].num_partitions = num_partitions
            self._save()

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        with self._lock:
            self._topics[name].configs = dict(configs)
            self._save()

    def allocate_producer_id_block(self, size: int) -> int:
        """Reserves `size` producer ids; returns the first. Persisted before it returns,
        so a restart never hands out an id of this block again."""
        with self._lock:
            first = self._next_producer_id
            self._next_producer_id += size
            self._save()
            return first

    def allocate_producer_id(self) -> int:
        """Next producer id; persisted before it is handed out so ids never repeat."""
        with self._lock:
            pid = self._next_producer_id
            self._next_producer_id += 1
            self._save()
            return pid
