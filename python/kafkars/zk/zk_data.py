"""Kafka 2.x's znodes: their paths and JSON payloads (Kafka's ZkData).

Operators' ZooKeeper tooling and Kafka's own scripts read these, so the names and JSON
fields are Kafka's. Every function here is pure: paths in, bytes out, and back.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

# Persistent paths a cluster needs before brokers register (Kafka's ZkData.PersistentZkPaths).
PERSISTENT_PATHS = (
    "/consumers",  # CONSUMERS
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/admin/delete_topics",
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
# The one event a log dir notification carries (Kafka's LogDirFailureEvent).
LOG_DIR_FAILURE_EVENT = 1
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CONFIG_CHANGES = "/config/changes"
# ACLs (Kafka's AclAuthorizer): one znode per resource; literal names under /kafka-acl,
# prefixed ones under /kafka-acl-extended/prefixed, each write announced by a sequential
# node under the matching changes path.
ACL_LITERAL = "/kafka-acl"
ACL_PREFIXED = "/kafka-acl-extended/prefixed"
ACL_LITERAL_CHANGES = "/kafka-acl-changes"
ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"

CONSUMERS = "/consumers"

# Credentials live under these (SCRAM users, broker configs with passwords, delegation
# tokens): with zookeeper.set.acl, nobody but the brokers may read them (Kafka's
# ZkData.SensitiveRootPaths).
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token/tokens")


def sensitive_path(path: str) -> bool:
    return any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS)


def default_acls(secure: bool, path: str) -> list[ACL]:
    """The ACLs a znode is created with (Kafka's ZkData.defaultAcls): open without
    zookeeper.set.acl; with it, everything for the identity that created it (the brokers
    share one) and reading for anyone except on sensitive paths. /consumers stays open:
    old consumers write there themselves."""
    if not secure or path == CONSUMERS:
        return list(OPEN_ACL_UNSAFE)
    return list(CREATOR_ALL_ACL) + ([] if sensitive_path(path) else list(READ_ACL_UNSAFE))


def _dumps(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _loads(raw: bytes) -> dict[str, Any]:
    value = json.loads(raw.decode())
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {raw[:80]!r}")
    return value


# -- brokers ---------------------------------------------------------------------------------
def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


@dataclass(frozen=True)
class BrokerInfo:
    """A registered broker: its endpoints by listener name and its rack."""

    broker_id: int
    endpoints: dict[str, tuple[str, int]]  # listener name -> (host, port)
    protocol_map: dict[str, str]  # listener name -> security protocol
    rack: str | None = None
    # The broker epoch: the czxid of its registration znode (Kafka's), -1 when not read
    # from ZooKeeper. Kafka's brokers send theirs in AlterPartition and AllocateProducerIds.
    epoch: int = field(default=-1, compare=False)

    def encode(self) -> bytes:
        # Version 5 of Kafka's BrokerIdZNode: endpoints as listener URIs plus the
        # listener -> protocol map; host/port of the PLAINTEXT listener for old tools.
        plain = next(
            (e for n, e in self.endpoints.items() if self.protocol_map.get(n) == "PLAINTEXT"),
            None,
        )
        data: dict[str, Any] = {
            "listener_security_protocol_map": self.protocol_map,
            "endpoints": [f"{n}://{h}:{p}" for n, (h, p) in self.endpoints.items()],
            "jmx_port": -1,
            "features": {},
            "host": plain[0] if plain else None,
            "port": plain[1] if plain else -1,
            "timestamp": str(int(time.time() * 1000)),
            "version": 5,
        }
        if self.rack is not None:
            data["rack"] = self.rack
        return _dumps(data)

    @classmethod
    def decode(cls, broker_id: int, raw: bytes, epoch: int = -1) -> BrokerInfo:
        data = _loads(raw)
        endpoints: dict[str, tuple[str, int]] = {}
        for uri in data.get("endpoints", []):
            name, _, rest = uri.partition("://")
            host, _, port = rest.rpartition(":")
            endpoints[name] = (host.strip("[]"), int(port))
        protocol_map = dict(data.get("listener_security_protocol_map") or {})
        for name in endpoints:
            protocol_map.setdefault(name, name)
        return cls(broker_id, endpoints, protocol_map, data.get("rack"), epoch)


# -- controller ------------------------------------------------------------------------------
def encode_controller(broker_id: int) -> bytes:
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": str(int(time.time() * 1000))})


def decode_controller(raw: bytes) -> int:
    return int(_loads(raw)["brokerid"])


# -- cluster id ------------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(raw: bytes) -> str:
    return str(_loads(raw)["id"])


# -- topics ----------------------------------------------------------------------------------
def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def encode_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka writes topic ids in base64url without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def decode_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass(frozen=True)
class TopicAssignment:
    """`/brokers/topics/<topic>`: the topic id and each partition's replica list; during a
    reassignment (KIP-455) the list is the union of the original and target replicas, and
    `adding`/`removing` name the replicas that join and leave."""

    topic_id: uuid.UUID
    partitions: dict[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _dumps(
            {
                "version": 3,
                "topic_id": encode_topic_id(self.topic_id),
                "partitions": {str(p): r for p, r in sorted(self.partitions.items())},
                "adding_replicas": {str(p): r for p, r in sorted(self.adding.items()) if r},
                "removing_replicas": {str(p): r for p, r in sorted(self.removing.items()) if r},
            }
        )

    @classmethod
    def decode(cls, raw: bytes) -> TopicAssignment:
        data = _loads(raw)
        topic_id = decode_topic_id(data["topic_id"]) if data.get("topic_id") else uuid.UUID(int=0)

        def replica_map(key: str) -> dict[int, list[int]]:
            return {int(p): [int(b) for b in r] for p, r in (data.get(key) or {}).items()}

        return cls(
            topic_id,
            replica_map("partitions"),
            replica_map("adding_replicas"),
            replica_map("removing_replicas"),
        )

    def is_reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))

    def target_replicas(self, partition: int) -> list[int]:
        """The replicas a reassignment moves to (the current ones when none runs)."""
        removing = self.removing.get(partition, [])
        return [b for b in self.partitions.get(partition, []) if b not in removing]

    def original_replicas(self, partition: int) -> list[int]:
        adding = self.adding.get(partition, [])
        return [b for b in self.partitions.get(partition, []) if b not in adding]


# -- /admin/reassign_partitions (the ZooKeeper way to start a reassignment) -----------------
def encode_reassignments(reassignments: dict[tuple[str, int], list[int]]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r}
                for (t, p), r in sorted(reassignments.items())
            ],
        }
    )


def decode_reassignments(raw: bytes) -> dict[tuple[str, int], list[int]]:
    return {
        (str(e["topic"]), int(e["partition"])): [int(b) for b in e["replicas"]]
        for e in _loads(raw).get("partitions") or []
    }


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    """`/brokers/topics/<t>/partitions/<p>/state`, with the znode version the next
    conditional write must name (Kafka's LeaderAndIsr plus zkVersion)."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = 0

    def encode(self) -> bytes:
        return _dumps(
            {
                "controller_epoch": self.controller_epoch,
                "leader": self.leader,
                "version": 1,
                "leader_epoch": self.leader_epoch,
                "isr": self.isr,
            }
        )

    @classmethod
    def decode(cls, raw: bytes, zk_version: int) -> LeaderIsrAndControllerEpoch:
        data = _loads(raw)
        return cls(
            int(data["leader"]),
            int(data["leader_epoch"]),
            [int(b) for b in data["isr"]],
            int(data["controller_epoch"]),
            zk_version,
        )


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    return _dumps(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def decode_isr_change(raw: bytes) -> list[tuple[str, int]]:
    return [(e["topic"], int(e["partition"])) for e in _loads(raw)["partitions"]]


def encode_log_dir_event(broker_id: int) -> bytes:
    """A broker's log dir failure, as Kafka's LogDirEventNotificationSequenceZNode."""
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(raw: bytes) -> int:
    """The broker id of a log dir event."""
    return int(_loads(raw)["broker"])


# -- topic configs ---------------------------------------------------------------------------
def topic_config_path(topic: str) -> str:
    return f"/config/topics/{topic}"


def encode_config(configs: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": configs})


def decode_config(raw: bytes) -> dict[str, str]:
    return {k: str(v) for k, v in (_loads(raw).get("config") or {}).items()}


def encode_config_change(entity_path: str) -> bytes:
    """A `/config/changes/config_change_N` notification (version 2: `topics/<name>`)."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(raw: bytes) -> str:
    return str(_loads(raw)["entity_path"])


# -- producer ids ----------------------------------------------------------------------------
def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    return _dumps(
        {"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)}
    )


def decode_producer_id_block_end(raw: bytes) -> int:
    return int(_loads(raw)["block_end"])


# -- ACLs ------------------------------------------------------------------------------------
def encode_acls(entries: list[dict[str, str]]) -> bytes:
    """A resource's ACLs: principal, permissionType, operation, host each."""
    return _dumps({"version": 1, "acls": entries})


def decode_acls(raw: bytes) -> list[dict[str, str]]:
    return list(_loads(raw).get("acls", []))


def encode_acl_change(resource_type: str, name: str, pattern_type: str) -> bytes:
    """The notification's payload: "Topic:name" for a literal resource (Kafka's first
    layout), JSON for the extended ones."""
    if pattern_type == "LITERAL":
        return f"{resource_type}:{name}".encode()
    return _dumps(
        {"version": 1, "resourceType": resource_type, "name": name, "patternType": pattern_type}
    )
