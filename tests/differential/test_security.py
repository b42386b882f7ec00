"""Security: SaslHandshake and SaslAuthenticate (good and bad exchanges), ACLs
(CreateAcls, DescribeAcls, DeleteAcls) and what a denied principal is answered, SCRAM
credentials (Describe/AlterUserScramCredentials), client quotas.

Both brokers run a second pair of listeners here: SASL_PLAINTEXT with PLAIN and SCRAM,
and an authorizer with `admin` as super user (Kafka's StandardAuthorizer; kafkars takes
the same class name)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import ApiKey
from kafkars.testing.reference_kafka import ReferenceKafka

from .compare import Connection, Pair, Report
from .conftest import COMMON_CONFIG
from .known import KNOWN_DIFFERENCES

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    + " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    + ";"
)
SECURE_CONFIG = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": False,
}
TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED, MATCH, ANY = 3, 4, 2, 1
ALLOW, DENY = 3, 2
READ, WRITE, DESCRIBE, ALL = 3, 4, 8, 2


@pytest.fixture(scope="module")
def secure_kafka() -> Iterator[ReferenceKafka]:
    config = {k: v for k, v in COMMON_CONFIG.items() if k not in ("node.id", "broker.id")}
    config.update(SECURE_CONFIG)
    # The controller listener is spoken by the node itself, as a super user.
    with ReferenceKafka(
        node_id=1,
        config=config,
        sasl_users=USERS,
        features={"transaction.version": 1},
    ) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def secure_kafkars() -> Iterator[Broker]:
    config = {
        **COMMON_CONFIG,
        **SECURE_CONFIG,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }
    with Broker(process=True, config=config) as broker:
        yield broker


def _sasl_address(broker: Broker) -> str:
    (_, _, host, port) = next(x for x in broker.listeners if x[0] == "SASL_PLAINTEXT")
    return f"{host}:{port}"


@pytest.fixture
def secure(secure_kafka: ReferenceKafka, secure_kafkars: Broker, report: Report) -> Iterator[Pair]:
    """A pair on the PLAINTEXT listeners (ANONYMOUS, a super user here)."""
    p = Pair(
        secure_kafka.bootstrap_servers,
        secure_kafkars.bootstrap_servers,
        report,
        KNOWN_DIFFERENCES,
    )
    yield p
    p.close()


@pytest.fixture
def sasl(secure_kafka: ReferenceKafka, secure_kafkars: Broker, report: Report) -> Iterator[Pair]:
    """A pair on the SASL listeners, not yet authenticated."""
    p = Pair(
        secure_kafka.sasl_bootstrap_servers,
        _sasl_address(secure_kafkars),
        report,
        KNOWN_DIFFERENCES,
    )
    yield p
    p.close()


def handshake(mechanism: str) -> dict[str, Any]:
    return {"mechanism": mechanism}


def test_sasl_handshake(sasl: Pair) -> None:
    # Each version on a fresh connection: a handshake starts an exchange.
    for version in sasl.versions(ApiKey.SASL_HANDSHAKE):
        sasl.check(ApiKey.SASL_HANDSHAKE, handshake("PLAIN"), scenario="PLAIN", versions=[version])
        sasl.reconnect()
        sasl.check(
            ApiKey.SASL_HANDSHAKE,
            handshake("GSSAPI"),
            scenario="a mechanism not enabled",
            versions=[version],
        )
        sasl.reconnect()


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def test_sasl_authenticate_plain(sasl: Pair) -> None:
    for version in sasl.versions(ApiKey.SASL_AUTHENTICATE):
        sasl.call(ApiKey.SASL_HANDSHAKE, 1, handshake("PLAIN"))
        sasl.check(
            ApiKey.SASL_AUTHENTICATE,
            {"auth_bytes": plain_token("alice", "alice-secret")},
            scenario="PLAIN, good password",
            versions=[version],
        )
        sasl.reconnect()
        sasl.call(ApiKey.SASL_HANDSHAKE, 1, handshake("PLAIN"))
        sasl.check(
            ApiKey.SASL_AUTHENTICATE,
            {"auth_bytes": plain_token("alice", "wrong")},
            scenario="PLAIN, bad password",
            versions=[version],
        )
        sasl.reconnect()


def test_request_before_authentication_closes(sasl: Pair) -> None:
    """A Kafka request other than ApiVersions/SaslHandshake on a SASL listener before
    authenticating: both brokers close the connection."""
    frame = _core.protocol.encode_request(3, 12, 1, "differential", {"topics": None})
    outcomes = {name: conn.call_raw(bytes(frame)) for name, conn in sasl.conns.items()}
    assert outcomes == {"kafka": None, "kafkars": None}


def _authenticated(broker_address: str, user: str) -> Connection:
    conn = Connection(broker_address)
    conn.call(ApiKey.SASL_HANDSHAKE, 1, handshake("PLAIN"))
    response = conn.call(
        ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": plain_token(user, USERS[user])}
    )
    assert response["error_code"] == 0, response
    return conn


def acl_filter(name: str | None, pattern: int = MATCH) -> dict[str, Any]:
    return {
        "resource_type_filter": TOPIC,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }


def test_acls(secure: Pair, name: str) -> None:
    def creation(version: int) -> dict[str, Any]:
        pattern = PREFIXED if version >= 1 else LITERAL
        return {
            "creations": [
                {
                    "resource_type": TOPIC,
                    "resource_name": f"{name}-v{version}",
                    "resource_pattern_type": pattern,
                    "principal": "User:alice",
                    "host": "*",
                    "operation": READ,
                    "permission_type": ALLOW,
                },
                {
                    "resource_type": GROUP,
                    "resource_name": f"{name}-v{version}",
                    "resource_pattern_type": LITERAL,
                    "principal": "User:alice",
                    "host": "*",
                    "operation": ALL,
                    "permission_type": DENY,
                },
                {
                    "resource_type": TOPIC,
                    "resource_name": "",
                    "resource_pattern_type": LITERAL,
                    "principal": "alice-without-type",
                    "host": "*",
                    "operation": READ,
                    "permission_type": ALLOW,
                },
            ]
        }

    secure.check(ApiKey.CREATE_ACLS, creation, scenario="valid and invalid bindings")

    def describe(version: int) -> dict[str, Any]:
        return acl_filter(f"{name}-v{version}")

    secure.check(ApiKey.DESCRIBE_ACLS, describe, scenario="match a name")

    def delete(version: int) -> dict[str, Any]:
        return {"filters": [acl_filter(f"{name}-v{version}"), acl_filter(f"{name}-none")]}

    secure.check(ApiKey.DELETE_ACLS, delete, scenario="a match and no match")


def test_denied_principal(
    secure: Pair, secure_kafka: ReferenceKafka, secure_kafkars: Broker, report: Report, name: str
) -> None:
    """alice without ACLs: Metadata, Produce, CreateTopics, DescribeConfigs and groups are
    refused as Kafka refuses them."""
    secure.call(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    )
    alice = Pair.__new__(Pair)
    alice.__dict__.update(secure.__dict__)
    alice.conns = {
        "kafka": _authenticated(secure_kafka.sasl_bootstrap_servers, "alice"),
        "kafkars": _authenticated(_sasl_address(secure_kafkars), "alice"),
    }
    alice.normalizers = dict(secure.normalizers)
    try:
        alice.check(
            ApiKey.METADATA,
            {"topics": [{"name": name}], "allow_auto_topic_creation": True},
            scenario="topic without Describe",
            versions=[12],
        )
        alice.check(
            ApiKey.CREATE_TOPICS,
            {
                "topics": [
                    {
                        "name": f"{name}-new",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": 30000,
                "validate_only": False,
            },
            scenario="without Create",
        )
        alice.check(
            ApiKey.DESCRIBE_CONFIGS,
            {
                "resources": [
                    {"resource_type": TOPIC, "resource_name": name, "configuration_keys": None}
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
            scenario="without DescribeConfigs",
        )
        alice.check(
            ApiKey.FIND_COORDINATOR,
            {"key_type": 0, "coordinator_keys": [name]},
            scenario="group without Describe",
            versions=[4],
        )
        alice.check(
            ApiKey.INIT_PRODUCER_ID,
            {"transactional_id": name, "transaction_timeout_ms": 60000},
            scenario="transactional id without Write",
        )
        alice.check(
            ApiKey.DESCRIBE_ACLS, acl_filter(None, ANY), scenario="without cluster Describe"
        )
    finally:
        for conn in alice.conns.values():
            conn.close()
