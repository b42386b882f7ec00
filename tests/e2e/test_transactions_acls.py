"""Transactions under the ACL authorizer: WRITE on the TransactionalId is what lets a
producer start transactions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkars.broker import Broker

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-secret" user_alice="alice-secret";'
)


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    }
    with Broker(process=True, config=config) as b:
        yield b


def conf(broker: Broker, user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


def allow(admin: AdminClient, rtype: ResourceType, name: str, op: AclOperation) -> None:
    binding = AclBinding(
        rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW
    )
    for f in admin.create_acls([binding]).values():
        f.result(10)


def test_transactional_id_write_is_required(secured: Broker) -> None:
    topic, txn_id = f"t-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf(secured, "admin"))
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(10)
    allow(admin, ResourceType.TOPIC, topic, AclOperation.WRITE)

    denied = Producer({**conf(secured, "alice"), "transactional.id": txn_id})
    with pytest.raises(KafkaException) as raised:
        denied.init_transactions(10)
    assert "Transactional Id authorization failed" in str(raised.value)

    allow(admin, ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE)
    p = Producer({**conf(secured, "alice"), "transactional.id": txn_id})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, value=b"allowed", partition=0)
    p.commit_transaction(20)

    seen = read_values_as(secured, topic)
    assert seen == [b"allowed"]


def read_values_as(broker: Broker, topic: str) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            **conf(broker, "admin"),
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([topic])
    out: list[bytes] = []
    for _ in range(50):
        m = c.poll(0.2)
        if m is not None and not m.error():
            out.append(m.value())
        if out:
            break
    c.close()
    return out
