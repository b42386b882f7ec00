"""ACLs in ZooKeeper (cluster mode), in the layout of Kafka's ZooKeeper-era AclAuthorizer,
so every broker authorizes with the same ACLs whichever broker created them."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from functools import partial

from kafkars.security.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkars.zk.kafka_zk_client import KafkaZkClient

log = logging.getLogger("kafka.authorizer.logger")


def _java_name(member: str) -> str:
    """TRANSACTIONAL_ID -> TransactionalId: the names Kafka writes in these znodes."""
    return "".join(word.capitalize() for word in member.split("_"))


_RESOURCE_TYPES = {_java_name(t.name): t for t in ResourceType}
_OPERATIONS = {_java_name(o.name): o for o in AclOperation}
_PERMISSIONS = {_java_name(p.name): p for p in AclPermissionType}

Resource = tuple[str, str, str]  # (pattern type, resource type, name), as the znode path


def _resource(b: AclBinding) -> Resource:
    return (b.pattern_type.name, _java_name(b.resource_type.name), b.resource_name)


def _entry(b: AclBinding) -> dict[str, str]:
    return {
        "principal": b.principal,
        "permissionType": _java_name(b.permission.name),
        "operation": _java_name(b.operation.name),
        "host": b.host,
    }


def _with(new: list[dict[str, str]], current: list[dict[str, str]]) -> list[dict[str, str]]:
    return current + [e for e in new if e not in current]


def _without(gone: list[dict[str, str]], current: list[dict[str, str]]) -> list[dict[str, str]]:
    return [e for e in current if e not in gone]


class ZkAclStore:
    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    def load(self) -> set[AclBinding]:
        out: set[AclBinding] = set()
        for (pattern, rtype, name), entries in self.zk.get_all_acls().items():
            for e in entries:
                try:
                    binding = AclBinding(
                        _RESOURCE_TYPES[rtype],
                        name,
                        PatternType[pattern],
                        e["principal"],
                        e["host"],
                        _OPERATIONS[e["operation"]],
                        _PERMISSIONS[e["permissionType"]],
                    )
                except KeyError as missing:
                    log.warning("Skipping an unreadable ACL of %s %s: %s", rtype, name, missing)
                    continue
                out.add(binding)
        return out

    def add(self, bindings: list[AclBinding]) -> None:
        for resource, group in itertools.groupby(sorted(bindings, key=_resource), _resource):
            self.zk.update_resource_acls(*resource, partial(_with, [_entry(b) for b in group]))

    def remove(self, bindings: list[AclBinding]) -> None:
        for resource, group in itertools.groupby(sorted(bindings, key=_resource), _resource):
            self.zk.update_resource_acls(*resource, partial(_without, [_entry(b) for b in group]))

    def watch(self, on_change: Callable[[], None]) -> None:
        self.zk.watch_acl_changes(on_change)
