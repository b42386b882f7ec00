"""ACL denials through the `kafkars` source and sink: a broker with the ACL authorizer,
a super user (admin) who sets things up and a user (alice) with only some ACLs. Each
denial fails the Spark job at once with one line naming the topic and the operation."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
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

pytestmark = pytest.mark.timeout(180)

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    """SASL_PLAINTEXT with the ACL authorizer: deny unless an ACL allows; admin is super."""
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    }
    with Broker(process=True, config=config) as broker:
        yield broker


def _client(broker: Broker, user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


def _spark_options(broker: Broker) -> dict[str, str]:
    """alice, in Spark's Kafka option names."""
    return {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
        'required username="alice" password="alice-secret";',
    }


@pytest.fixture(scope="module")
def topics(secured: Broker) -> dict[str, str]:
    """Topics with 10 records each (written by admin) and alice's ACLs on them:
    `describe_only` (Describe), `readable` (Describe, Read), `hidden` (none)."""
    names = {k: f"acl-{k}-{time.monotonic_ns()}" for k in ("describe_only", "readable", "hidden")}
    admin = AdminClient(_client(secured, "admin"))
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in names.values()]).values():
        f.result(30)
    p = Producer(_client(secured, "admin"))
    for t in names.values():
        for i in range(10):
            p.produce(t, value=b"v%d" % i)
    assert p.flush(30) == 0

    def allow(topic: str, op: AclOperation) -> AclBinding:
        return AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            op,
            AclPermissionType.ALLOW,
        )

    acls = [
        allow(names["describe_only"], AclOperation.DESCRIBE),
        allow(names["readable"], AclOperation.DESCRIBE),
        allow(names["readable"], AclOperation.READ),
    ]
    for f in admin.create_acls(acls).values():
        f.result(30)
    return names


def _read(spark: Any, broker: Broker, topic: str) -> Any:
    r = spark.read.format("kafkars").option("subscribe", topic)
    for k, v in _spark_options(broker).items():
        r = r.option(k, v)
    return r.load()


def _fails_with(action: Any, line: str) -> float:
    """Runs `action`, which must fail with `line` in its error; returns the seconds taken
    (to check it failed at once, well inside the reader's 120 s pollTimeoutMs and the
    sink producer's 300 s message.timeout.ms, rather than after retrying)."""
    start = time.monotonic()
    with pytest.raises(Exception) as info:
        action()
    assert line in str(info.value), str(info.value)[-2000:]
    return time.monotonic() - start


def test_read_denied_names_topic_and_operation(
    spark: Any, secured: Broker, topics: dict[str, str]
) -> None:
    # The ACLs work: what alice may read, she reads.
    assert _read(spark, secured, topics["readable"]).count() == 10
    t = topics["describe_only"]
    took = _fails_with(
        lambda: _read(spark, secured, t).collect(),
        f"Not authorized to Read topic '{t}' (TOPIC_AUTHORIZATION_FAILED)",
    )
    assert took < 60, f"a denied Read took {took:.1f} s: retried instead of failing"


def test_describe_denied_at_planning(spark: Any, secured: Broker, topics: dict[str, str]) -> None:
    t = topics["hidden"]
    took = _fails_with(
        lambda: _read(spark, secured, t).collect(),
        f"Not authorized to Describe topic '{t}' (TOPIC_AUTHORIZATION_FAILED)",
    )
    assert took < 60, f"a denied Describe took {took:.1f} s"


def test_write_denied_names_topic_and_operation(
    spark: Any, secured: Broker, topics: dict[str, str]
) -> None:
    t = topics["readable"]  # Describe and Read, no Write
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    w = df.write.format("kafkars").mode("append").option("topic", t)
    for k, v in _spark_options(secured).items():
        w = w.option(k, v)
    took = _fails_with(w.save, f"Not authorized to Write topic '{t}' (TOPIC_AUTHORIZATION_FAILED)")
    assert took < 60, f"a denied Write took {took:.1f} s"


def test_exactly_once_write_denied_names_topic_and_operation(
    spark: Any, secured: Broker, topics: dict[str, str]
) -> None:
    """The transactional sink: alice may use her transactional ids, groups and the
    markers' topic, but not write the target topic."""
    t = topics["readable"]
    prefix, commits = f"alice-{t}", f"alice-commits-{t}"
    admin = AdminClient(_client(secured, "admin"))
    admin.create_topics([NewTopic(commits, 1, 1)])[commits].result(30)

    def allow(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        pattern = ResourcePatternType.PREFIXED if name == prefix else ResourcePatternType.LITERAL
        return AclBinding(rtype, name, pattern, "User:alice", "*", op, AclPermissionType.ALLOW)

    acls = [
        allow(ResourceType.TRANSACTIONAL_ID, prefix, AclOperation.WRITE),
        allow(ResourceType.TRANSACTIONAL_ID, prefix, AclOperation.DESCRIBE),
        allow(ResourceType.GROUP, prefix, AclOperation.READ),
        allow(ResourceType.TOPIC, commits, AclOperation.DESCRIBE),
        allow(ResourceType.TOPIC, commits, AclOperation.READ),
        allow(ResourceType.TOPIC, commits, AclOperation.CREATE),  # the sink ensures it
    ]
    for f in admin.create_acls(acls).values():
        f.result(30)
    df = spark.createDataFrame([("k", "v")], "key string, value string").coalesce(1)
    w = (
        df.write.format("kafkars")
        .mode("append")
        .option("topic", t)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", prefix)
        .option("commitsTopic", commits)
    )
    for k, v in _spark_options(secured).items():
        w = w.option(k, v)
    took = _fails_with(w.save, f"Not authorized to Write topic '{t}' (TOPIC_AUTHORIZATION_FAILED)")
    assert took < 60, f"a denied transactional Write took {took:.1f} s"
