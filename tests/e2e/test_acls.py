"""ACL authorization (authorizer.class.name): deny by default, super users, ACLs created,
described and deleted through AdminClient, topics hidden from Metadata and from
DescribeTopicPartitions."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkars.broker import Broker
from kafkars.tools.client import WireClient

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-secret" user_alice="alice-secret";'
)


# A SASL/PLAIN listener with the ACL authorizer; admin is a super user, alice is not.
SECURED_CONFIG = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    with Broker(config=SECURED_CONFIG) as b:
        yield b


def conf(broker: Broker, user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


def produce_error(broker: Broker, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    p = Producer({**conf(broker, "alice"), "message.timeout.ms": 5000})
    p.produce(topic, b"v", callback=lambda err, _msg: errors.append(err))
    p.flush(10)
    return errors[0]


def acl(
    topic_or_group: str, op: AclOperation, rtype: ResourceType = ResourceType.TOPIC
) -> AclBinding:
    return AclBinding(
        rtype,
        topic_or_group,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        op,
        AclPermissionType.ALLOW,
    )


def test_acls_end_to_end(secured: Broker, topic: str) -> None:
    admin = AdminClient(conf(secured, "admin"))  # a super user
    admin.create_topics([NewTopic(topic, 1, 1), NewTopic(f"{topic}-hidden", 1, 1)])[topic].result(
        10
    )
    # Deny by default (allow.everyone.if.no.acl.found=false).
    err = produce_error(secured, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    for f in admin.create_acls([acl(topic, AclOperation.WRITE)]).values():
        f.result(10)
    assert produce_error(secured, topic) is None
    # Reading needs READ on the topic and on the group.
    consumer = Consumer(
        {**conf(secured, "alice"), "group.id": f"{topic}-g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    msg = consumer.poll(5)
    assert msg is not None and msg.error() is not None
    consumer.close()
    for f in admin.create_acls(
        [acl(topic, AclOperation.READ), acl(f"{topic}-g", AclOperation.READ, ResourceType.GROUP)]
    ).values():
        f.result(10)
    consumer = Consumer(
        {**conf(secured, "alice"), "group.id": f"{topic}-g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    msg = consumer.poll(15)
    consumer.close()
    assert msg is not None and msg.error() is None and msg.value() == b"v"
    # Metadata hides what alice may not describe.
    visible = AdminClient(conf(secured, "alice")).list_topics(timeout=10).topics
    assert topic in visible and f"{topic}-hidden" not in visible
    # Describe and delete.
    flt = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        "User:alice",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert len(admin.describe_acls(flt).result(10)) == 3
    deleted = admin.delete_acls([flt])[flt].result(10)
    assert len(deleted) == 3
    err = produce_error(secured, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_only_authorized_principals_manage_acls(secured: Broker) -> None:
    alice = AdminClient(conf(secured, "alice"))
    with pytest.raises(KafkaException) as exc:
        for f in alice.create_acls([acl("anything", AclOperation.ALL)]).values():
            f.result(10)
    assert exc.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_kafkars_acls_tool(secured: Broker, tmp_path: Path, topic: str) -> None:
    props = tmp_path / "admin.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=admin\nsasl.password=admin-secret\n"
    )
    base = [sys.executable, "-m", "kafkars.tools.acls", "-b", secured.bootstrap_servers]
    base += ["--command-config", str(props)]

    def run(*args: str) -> str:
        result = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    out = run("--add", "--allow-principal", "User:carol", "--producer", "--topic", topic)
    assert "operation=WRITE" in out and "operation=CREATE" in out
    listed = run("--list", "--topic", topic)
    assert f"name={topic}" in listed and "principal=User:carol" in listed
    assert listed.count("permissionType=ALLOW") == 3
    run(
        "--remove",
        "--allow-principal",
        "User:carol",
        "--operation",
        "Create",
        "--topic",
        topic,
        "--force",
    )
    assert run("--list", "--topic", topic).count("permissionType=ALLOW") == 2
    bad = subprocess.run([*base, "--add", "--topic", topic], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_describe_topic_partitions_refuses_named_and_hides_listed_topics(
    secured: Broker, topic: str
) -> None:
    hidden = f"{topic}-hidden"
    admin = AdminClient(conf(secured, "admin"))
    for f in admin.create_topics([NewTopic(topic, 2, 1), NewTopic(hidden, 1, 1)]).values():
        f.result(10)
    for f in admin.create_acls([acl(topic, AclOperation.DESCRIBE)]).values():
        f.result(10)
    alice = WireClient.connect(secured.bootstrap_servers, conf(secured, "alice"))
    page = {"response_partition_limit": 10, "cursor": None}
    named = alice.call(75, 0, {"topics": [{"name": hidden}, {"name": topic}], **page})
    by_name = {t["name"]: t for t in named["topics"]}
    refused = by_name[hidden]
    assert refused["error_code"] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert refused["partitions"] == [] and refused["topic_id"].int == 0
    allowed = by_name[topic]
    assert allowed["error_code"] == 0 and len(allowed["partitions"]) == 2
    # DESCRIBE (code 8) is all alice may do with it.
    assert allowed["topic_authorized_operations"] == 1 << 8
    listed = [t["name"] for t in alice.call(75, 0, {"topics": [], **page})["topics"]]
    assert topic in listed and hidden not in listed
    alice.close()
