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
from test_acls import SECURED_CONFIG, conf

from kafkars.broker import Broker


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    with Broker(process=True, config=SECURED_CONFIG) as b:
        yield b


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
