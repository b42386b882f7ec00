"""The ACL authorizer's decisions, filters and persistence (Kafka's AclAuthorizer rules)."""

from __future__ import annotations

from pathlib import Path

from kafkars.security.authorizer import (
    AclAuthorizer,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def acl(
    name: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    *,
    principal: str = "User:alice",
    host: str = "*",
    rtype: ResourceType = TOPIC,
    pattern: PatternType = LIT,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def test_no_acl_denies_unless_allow_everyone(tmp_path: Path) -> None:
    strict = AclAuthorizer(tmp_path / "a.json")
    assert not strict.authorize("User:alice", "1.2.3.4", Op.READ, TOPIC, "t")
    lax = AclAuthorizer(tmp_path / "b.json", allow_everyone_if_no_acl_found=True)
    assert lax.authorize("User:alice", "1.2.3.4", Op.READ, TOPIC, "t")
    # Once the resource has any ACL, the fallback no longer applies.
    lax.create([acl("t", Op.READ, principal="User:bob")])
    assert not lax.authorize("User:alice", "1.2.3.4", Op.READ, TOPIC, "t")


def test_deny_wins_and_implied_operations(tmp_path: Path) -> None:
    a = AclAuthorizer(tmp_path / "acls.json")
    a.create([acl("t", Op.READ), acl("t", Op.ALL, DENY, host="10.0.0.9")])
    assert a.authorize("User:alice", "1.2.3.4", Op.READ, TOPIC, "t")
    assert a.authorize("User:alice", "1.2.3.4", Op.DESCRIBE, TOPIC, "t")  # READ implies it
    assert not a.authorize("User:alice", "1.2.3.4", Op.WRITE, TOPIC, "t")
    assert not a.authorize("User:alice", "10.0.0.9", Op.READ, TOPIC, "t")  # denied host
    a.create([acl("t", Op.ALTER_CONFIGS)])
    assert a.authorize("User:alice", "1.2.3.4", Op.DESCRIBE_CONFIGS, TOPIC, "t")


def test_wildcards_prefixes_and_super_users(tmp_path: Path) -> None:
    a = AclAuthorizer(tmp_path / "acls.json", super_users={"User:admin"})
    a.create(
        [
            acl("orders-", Op.WRITE, pattern=PRE),
            acl("*", Op.READ, principal="User:*"),
            acl("kafka-cluster", Op.CREATE, rtype=CLUSTER),
        ]
    )
    assert a.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders-eu")
    assert not a.authorize("User:alice", "h", Op.WRITE, TOPIC, "payments")
    assert a.authorize("User:carol", "h", Op.READ, TOPIC, "anything")
    assert a.authorize("User:alice", "h", Op.CREATE, CLUSTER, "kafka-cluster")
    assert not a.authorize("User:alice", "h", Op.READ, GROUP, "g")
    assert a.authorize("User:admin", "h", Op.DELETE, GROUP, "g")


def test_filters_persistence_and_validation(tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    a = AclAuthorizer(path)
    bindings = [acl("orders-", Op.WRITE, pattern=PRE), acl("orders-eu", Op.READ), acl("x", Op.READ)]
    a.create(bindings)
    match = AclFilter(
        TOPIC, "orders-eu", PatternType.MATCH, None, None, Op.ANY, AclPermissionType.ANY
    )
    assert set(a.acls(match)) == set(bindings[:2])
    any_read = AclFilter(
        ResourceType.ANY, None, PatternType.ANY, "User:alice", None, Op.READ, ALLOW
    )
    assert set(a.acls(any_read)) == {bindings[1], bindings[2]}
    # Reloaded from disk: the same ACLs.
    assert set(AclAuthorizer(path).acls()) == set(bindings)
    gone = a.delete(any_read)
    assert set(gone) == {bindings[1], bindings[2]}
    assert AclAuthorizer(path).acls() == [bindings[0]]
    assert acl("c", Op.READ, rtype=CLUSTER).invalid_reason() is not None
    assert acl("t", Op.ANY).invalid_reason() is not None
    assert acl("t", Op.READ, principal="alice").invalid_reason() is not None
    assert acl("t", Op.READ).invalid_reason() is None
