"""Kafka's ACL authorizer (``kafka.security.authorizer.AclAuthorizer`` /
``StandardAuthorizer`` semantics): ACL bindings of (resource pattern, principal, host,
operation, permission), deny before allow, ``super.users``, and
``allow.everyone.if.no.acl.found``. Persisted as one JSON file (single broker), or in
ZooKeeper (cluster mode, `use_store`).

The numeric ids are Kafka's, as the Create/Describe/DeleteAcls APIs carry them.
"""

from __future__ import annotations

import enum
import json
import logging
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafkars.config.store import atomic_write_json

if TYPE_CHECKING:
    from kafkars.security.zk_acl_store import ZkAclStore

log = logging.getLogger("kafka.authorizer.logger")

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# An ALLOW of any of these operations also allows the key (Kafka's implied operations).
IMPLIED_BY = {
    AclOperation.DESCRIBE: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    ),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.ALTER_CONFIGS,),
}


@dataclass(frozen=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def invalid_reason(self) -> str | None:
        """Why Kafka would refuse to create this binding, or None."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return "Resource type must be concrete"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return "Pattern type must be LITERAL or PREFIXED"
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return "Operation must be concrete"
        if self.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return "Permission type must be ALLOW or DENY"
        if ":" not in self.principal:
            return f"Principal {self.principal!r} must look like <type>:<name>"
        if not self.resource_name:
            return "Resource name must not be empty"
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != "kafka-cluster":
            return "The only valid name for the CLUSTER resource is kafka-cluster"
        return None

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@dataclass(frozen=True)
class AclFilter:
    """Describe/DeleteAcls filter: None matches anything in a string field."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and b.resource_type != self.resource_type:
            return False
        if not self._matches_pattern(b):
            return False
        if self.principal is not None and b.principal != self.principal:
            return False
        if self.host is not None and b.host != self.host:
            return False
        if self.operation != AclOperation.ANY and b.operation != self.operation:
            return False
        return self.permission == AclPermissionType.ANY or b.permission == self.permission

    def _matches_pattern(self, b: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            # The bindings that would apply to a resource of that (literal) name.
            if self.resource_name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(b.resource_name)
        if self.pattern_type != PatternType.ANY and b.pattern_type != self.pattern_type:
            return False
        return self.resource_name is None or b.resource_name == self.resource_name


class AclAuthorizer:
    """The ACLs of the cluster and the decision for one action."""

    def __init__(
        self,
        path: Path,
        *,
        super_users: set[str] | None = None,
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.path = path
        self.super_users = super_users or set()
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._lock = threading.Lock()
        self._acls: set[AclBinding] = set()
        self._store: ZkAclStore | None = None
        self._reload_lock = threading.Lock()
        if path.exists():
            for entry in json.loads(path.read_text())["acls"]:
                self._acls.add(
                    AclBinding(
                        ResourceType(entry["resource_type"]),
                        entry["resource_name"],
                        PatternType(entry["pattern_type"]),
                        entry["principal"],
                        entry["host"],
                        AclOperation(entry["operation"]),
                        AclPermissionType(entry["permission"]),
                    )
                )

    def use_store(self, store: ZkAclStore) -> None:
        """Cluster mode: the ACLs are the cluster's, kept in ZooKeeper and reloaded whenever
        any broker changes them."""
        self._store = store
        self.reload()
        store.watch(self.reload)

    def reload(self) -> None:
        assert self._store is not None
        # One at a time: a read that started before a change must not land after one
        # that started after it.
        with self._reload_lock:
            acls = self._store.load()
            with self._lock:
                self._acls = acls

    def _save(self) -> None:
        rows = [
            {k: int(v) if isinstance(v, enum.IntEnum) else v for k, v in asdict(b).items()}
            for b in self._acls
        ]
        rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
        atomic_write_json(self.path, {"version": 1, "acls": rows})

    def acls(self, acl_filter: AclFilter | None = None) -> list[AclBinding]:
        with self._lock:
            return [b for b in self._acls if acl_filter is None or acl_filter.matches(b)]

    def create(self, bindings: list[AclBinding]) -> None:
        if self._store is not None:
            self._store.add(bindings)
            self.reload()  # this broker's next request sees them at once
            return
        with self._lock:
            self._acls.update(bindings)
            self._save()

    def delete(self, acl_filter: AclFilter) -> list[AclBinding]:
        if self._store is not None:
            self.reload()
            with self._lock:
                gone = [b for b in self._acls if acl_filter.matches(b)]
            self._store.remove(gone)
            self.reload()
            return gone
        with self._lock:
            gone = [b for b in self._acls if acl_filter.matches(b)]
            self._acls.difference_update(gone)
            if gone:
                self._save()
            return gone

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
        *,
        log_if_denied: bool = True,
    ) -> bool:
        """Kafka's decision: super users pass; a matching DENY refuses; a matching ALLOW
        (of the operation, of ALL, or of one that implies it) allows; a resource without
        any ACL follows `allow.everyone.if.no.acl.found`."""
        if principal in self.super_users:
            return True
        with self._lock:
            relevant = [b for b in self._acls if b.matches_resource(resource_type, resource_name)]
        allowed = self._decide(relevant, principal, host, operation)
        if not allowed and log_if_denied:
            log.info(
                "Principal = %s is Denied operation = %s from host = %s "
                "on resource = %s:LITERAL:%s",
                principal,
                operation.name,
                host,
                resource_type.name,
                resource_name,
            )
        return allowed

    def allowed_on_any(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether some resource of the type allows `operation` to the principal (Kafka's
        authorizeByResourceType, used for idempotent producers since KIP-679)."""
        if principal in self.super_users:
            return True
        with self._lock:
            candidates = [b for b in self._acls if b.resource_type == resource_type]
        names = {b.resource_name for b in candidates if b.permission == AclPermissionType.ALLOW}
        return any(
            self._decide(
                [b for b in candidates if b.resource_name == name], principal, host, operation
            )
            for name in names
        )

    def _decide(
        self, relevant: list[AclBinding], principal: str, host: str, operation: AclOperation
    ) -> bool:
        if not relevant:
            return self.allow_everyone_if_no_acl_found
        mine = [
            b
            for b in relevant
            if b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, WILDCARD)
        ]
        if any(
            b.permission == AclPermissionType.DENY and b.operation in (operation, AclOperation.ALL)
            for b in mine
        ):
            return False
        granting = (operation, AclOperation.ALL, *IMPLIED_BY.get(operation, ()))
        return any(
            b.permission == AclPermissionType.ALLOW and b.operation in granting for b in mine
        )


# `authorizer.class.name` values served by this authorizer (ZooKeeper-era and KRaft).
AUTHORIZER_CLASS_NAMES = (
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
)


def build_authorizer(config: object, directory: Path) -> AclAuthorizer | None:
    """The authorizer `authorizer.class.name` asks for; None when it is empty."""
    from kafkars.config.definition import ConfigException

    get = config.get  # type: ignore[attr-defined]
    name = str(get("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASS_NAMES:
        raise ConfigException.invalid(
            "authorizer.class.name",
            name,
            f"the built-in ACL authorizer answers to {' or '.join(AUTHORIZER_CLASS_NAMES)}",
        )
    supers = {p.strip() for p in str(get("super.users") or "").split(";") if p.strip()}
    return AclAuthorizer(
        directory / "acls.json",
        super_users=supers,
        allow_everyone_if_no_acl_found=bool(get("allow.everyone.if.no.acl.found")),
    )
