"""What each API needs to be allowed, as Kafka's KafkaApis checks it, and the check.

`required(api_key, body)` lists the (operation, resource) pairs a request needs; a
request is served when every requirement is met (a requirement with alternatives when
any one is). When one is not, the request gets its API's error response with the
requirement's error code (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

Kafka answers a request that names several topics per topic, serving the allowed ones;
here a request is refused whole when any of its topics is not allowed (the exception is
Metadata, which hides or flags topics per topic as Kafka does). Clients rarely mix
topics they may and may not use in one request.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkars.protocol import ApiKey, Errors
from kafkars.security.authorizer import AclAuthorizer, AclOperation, ResourceType

CLUSTER_NAME = "kafka-cluster"
Op, Res = AclOperation, ResourceType

# DescribeConfigs/AlterConfigs resource types: 2 topic, 4 broker, 8 broker logger.
_CONFIG_RESOURCE = {2: Res.TOPIC, 4: Res.CLUSTER, 8: Res.CLUSTER}


@dataclass(frozen=True)
class Requirement:
    """Allowed when any of `alternatives` is; else answered with `error`."""

    alternatives: tuple[tuple[AclOperation, ResourceType, str], ...]
    error: Errors


def _one(op: AclOperation, rtype: ResourceType, name: str, error: Errors) -> Requirement:
    return Requirement(((op, rtype, name),), error)


def _topics(op: AclOperation, names: Iterable[str | None]) -> list[Requirement]:
    return [_one(op, Res.TOPIC, n, Errors.TOPIC_AUTHORIZATION_FAILED) for n in names if n]


def _group(op: AclOperation, group: str) -> Requirement:
    return _one(op, Res.GROUP, group, Errors.GROUP_AUTHORIZATION_FAILED)


def _cluster(op: AclOperation) -> Requirement:
    return _one(op, Res.CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED)


def _txn(op: AclOperation, txn_id: str) -> Requirement:
    return _one(op, Res.TRANSACTIONAL_ID, txn_id, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


def _config_resources(op: AclOperation, resources: list[dict[str, Any]]) -> list[Requirement]:
    out = []
    for r in resources:
        rtype = _CONFIG_RESOURCE.get(r["resource_type"])
        if rtype == Res.TOPIC:
            out += _topics(op, [r["resource_name"]])
        elif rtype == Res.CLUSTER:
            out.append(_cluster(op))
    return out


def required(
    api_key: ApiKey, body: dict[str, Any], topic_names: dict[Any, str]
) -> list[Requirement]:
    """What the request needs. `topic_names` resolves topic ids (Fetch v13+)."""
    b = body
    k = ApiKey
    if api_key == k.PRODUCE:
        reqs = _topics(Op.WRITE, (t["name"] for t in b["topic_data"]))
        if b.get("transactional_id"):
            reqs.append(_txn(Op.WRITE, b["transactional_id"]))
        return reqs
    if api_key == k.FETCH:
        if (
            b.get("replica_id", -1) >= 0
            or (b.get("replica_state") or {}).get("replica_id", -1) >= 0
        ):
            return [_cluster(Op.CLUSTER_ACTION)]
        names = [t.get("topic") or topic_names.get(t.get("topic_id")) for t in b["topics"]]
        return _topics(Op.READ, names)
    if api_key == k.LIST_OFFSETS:
        return _topics(Op.DESCRIBE, (t["name"] for t in b["topics"]))
    if api_key == k.OFFSET_FOR_LEADER_EPOCH:
        if b.get("replica_id", -1) >= 0:
            return [_cluster(Op.CLUSTER_ACTION)]
        return _topics(Op.DESCRIBE, (t["topic"] for t in b["topics"]))
    if api_key in (k.OFFSET_COMMIT, k.TXN_OFFSET_COMMIT):
        reqs = [_group(Op.READ, b["group_id"]), *_topics(Op.READ, (t["name"] for t in b["topics"]))]
        if api_key == k.TXN_OFFSET_COMMIT:
            reqs.insert(0, _txn(Op.WRITE, b["transactional_id"]))
        return reqs
    if api_key == k.ADD_PARTITIONS_TO_TXN:
        if b.get("transactions"):
            # v4+: the broker-to-coordinator verification form.
            return [_cluster(Op.CLUSTER_ACTION)]
        return [
            _txn(Op.WRITE, b["v3_and_below_transactional_id"]),
            *_topics(Op.WRITE, (t["name"] for t in b["v3_and_below_topics"])),
        ]
    if api_key == k.ADD_OFFSETS_TO_TXN:
        return [_txn(Op.WRITE, b["transactional_id"]), _group(Op.READ, b["group_id"])]
    if api_key == k.END_TXN:
        return [_txn(Op.WRITE, b["transactional_id"])]
    if api_key in (k.ELECT_LEADERS, k.ALTER_PARTITION_REASSIGNMENTS, k.ALTER_REPLICA_LOG_DIRS):
        return [_cluster(Op.ALTER)]
    if api_key == k.LIST_PARTITION_REASSIGNMENTS:
        return [_cluster(Op.DESCRIBE)]
    if api_key in (
        k.WRITE_TXN_MARKERS,
        k.LEADER_AND_ISR,
        k.STOP_REPLICA,
        k.UPDATE_METADATA,
        k.CONTROLLED_SHUTDOWN,
    ):
        return [_cluster(Op.CLUSTER_ACTION)]
    if api_key == k.DESCRIBE_PRODUCERS:
        return _topics(Op.READ, (t["name"] for t in b["topics"]))
    if api_key == k.DESCRIBE_TRANSACTIONS:
        return [_txn(Op.DESCRIBE, tid) for tid in b["transactional_ids"]]
    # ListTransactions: the handler lists only the ids the principal may describe.
    if api_key == k.OFFSET_FETCH:
        groups = b.get("groups") or [{"group_id": b.get("group_id"), "topics": b.get("topics")}]
        reqs = []
        for g in groups:
            if g.get("group_id") is None:
                continue
            reqs.append(_group(Op.DESCRIBE, g["group_id"]))
            reqs += _topics(Op.DESCRIBE, (t["name"] for t in g.get("topics") or []))
        return reqs
    if api_key == k.FIND_COORDINATOR:
        keys = b.get("coordinator_keys") or [b.get("key")]
        if b.get("key_type", 0) == 1:
            return [_txn(Op.DESCRIBE, key) for key in keys if key]
        return [_group(Op.DESCRIBE, key) for key in keys if key is not None]
    if api_key in (k.JOIN_GROUP, k.SYNC_GROUP, k.HEARTBEAT, k.LEAVE_GROUP):
        return [_group(Op.READ, b["group_id"])]
    if api_key == k.CONSUMER_GROUP_HEARTBEAT:
        return [_group(Op.READ, b["group_id"])]
    if api_key in (k.DESCRIBE_GROUPS, k.CONSUMER_GROUP_DESCRIBE):
        return [_group(Op.DESCRIBE, g) for g in b.get("groups") or b.get("group_ids") or []]
    if api_key == k.LIST_GROUPS:
        return [_cluster(Op.DESCRIBE)]
    if api_key == k.DELETE_GROUPS:
        return [_group(Op.DELETE, g) for g in b["groups_names"]]
    if api_key == k.OFFSET_DELETE:
        return [
            _group(Op.DELETE, b["group_id"]),
            *_topics(Op.READ, (t["name"] for t in b["topics"])),
        ]
    if api_key == k.CREATE_TOPICS:
        return [
            Requirement(
                ((Op.CREATE, Res.CLUSTER, CLUSTER_NAME), (Op.CREATE, Res.TOPIC, t["name"])),
                Errors.TOPIC_AUTHORIZATION_FAILED,
            )
            for t in b["topics"]
        ]
    if api_key == k.DELETE_TOPICS:
        names = [t.get("name") for t in b.get("topics") or []] or b.get("topic_names") or []
        return _topics(Op.DELETE, names)
    if api_key == k.CREATE_PARTITIONS:
        return _topics(Op.ALTER, (t["name"] for t in b["topics"]))
    if api_key == k.DELETE_RECORDS:
        return _topics(Op.DELETE, (t["name"] for t in b["topics"]))
    if api_key == k.DESCRIBE_CONFIGS:
        return _config_resources(Op.DESCRIBE_CONFIGS, b["resources"])
    if api_key in (k.ALTER_CONFIGS, k.INCREMENTAL_ALTER_CONFIGS):
        return _config_resources(Op.ALTER_CONFIGS, b["resources"])
    if api_key in (k.DESCRIBE_LOG_DIRS, k.DESCRIBE_CLUSTER, k.DESCRIBE_ACLS):
        return [_cluster(Op.DESCRIBE)]
    if api_key in (k.CREATE_ACLS, k.DELETE_ACLS, k.ALTER_USER_SCRAM_CREDENTIALS):
        return [_cluster(Op.ALTER)]
    if api_key == k.DESCRIBE_USER_SCRAM_CREDENTIALS:
        return [_cluster(Op.DESCRIBE)]
    if api_key == k.DESCRIBE_CLIENT_QUOTAS:
        return [_cluster(Op.DESCRIBE_CONFIGS)]
    if api_key == k.ALTER_CLIENT_QUOTAS:
        return [_cluster(Op.ALTER_CONFIGS)]
    if api_key == k.INIT_PRODUCER_ID:
        if b.get("transactional_id"):
            return [_txn(Op.WRITE, b["transactional_id"])]
        # Idempotent producers: IDEMPOTENT_WRITE on the cluster, or (KIP-679) WRITE on
        # some topic; the latter is checked by `allowed_to_write_somewhere`.
        return [
            Requirement(
                ((Op.IDEMPOTENT_WRITE, Res.CLUSTER, CLUSTER_NAME), (Op.WRITE, Res.TOPIC, "")),
                Errors.CLUSTER_AUTHORIZATION_FAILED,
            )
        ]
    # ApiVersions, SaslHandshake, SaslAuthenticate, Metadata (filtered per topic by its
    # handler) need nothing here.
    return []


def first_denial(
    authorizer: AclAuthorizer,
    principal: str,
    host: str,
    requirements: list[Requirement],
) -> Errors | None:
    """The error of the first requirement that is not met, or None."""
    for req in requirements:
        if not any(
            _allows(authorizer, principal, host, op, rtype, name)
            for op, rtype, name in req.alternatives
        ):
            return req.error
    return None


def _allows(
    authorizer: AclAuthorizer,
    principal: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
) -> bool:
    if rtype == Res.TOPIC and name == "":
        return authorizer.allowed_on_any(principal, host, op, rtype)
    return authorizer.authorize(principal, host, op, rtype, name, log_if_denied=False)


# The operations ACLs can grant on a topic (Kafka's AclEntry.supportedOperations(TOPIC)).
TOPIC_OPERATIONS = (
    Op.READ,
    Op.WRITE,
    Op.CREATE,
    Op.DELETE,
    Op.ALTER,
    Op.DESCRIBE,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
)

# The operations ACLs can grant on the cluster (Kafka's AclEntry.supportedOperations(CLUSTER)).
CLUSTER_OPERATIONS = (
    Op.CREATE,
    Op.ALTER,
    Op.DESCRIBE,
    Op.CLUSTER_ACTION,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
    Op.IDEMPOTENT_WRITE,
)

# The operations ACLs can grant on a group (Kafka's AclEntry.supportedOperations(GROUP)).
GROUP_OPERATIONS = (Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)


def authorized_operations(
    authorizer: AclAuthorizer | None,
    principal: str,
    host: str,
    rtype: ResourceType,
    name: str,
    operations: Iterable[AclOperation],
) -> int:
    """The `operations` the principal may perform on the resource, as the bit field the
    `*_authorized_operations` response fields carry (bit n set for operation code n);
    without an authorizer, every one of them."""
    allowed = (
        op
        for op in operations
        if authorizer is None
        or authorizer.authorize(principal, host, op, rtype, name, log_if_denied=False)
    )
    return sum(1 << int(op) for op in set(allowed))
