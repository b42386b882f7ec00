"""Brokers talking to each other over a secured inter-broker listener: a cluster whose
only listener is SASL_SSL (PLAIN over mutual TLS, an ACL authorizer that lets only the
brokers' principal do CLUSTER_ACTION), so the controller channel and the Rust replica
fetchers must log in as the broker; and a broker with a wrong inter-broker password."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafkars.security.scram import ScramCredential, ScramCredentialStore
from kafkars.server.kafka_server import CONFIG_STORE_DIR
from kafkars.testing.cluster import Cluster
from kafkars.zk import KafkaZkClient

from .helpers import (
    SESSION_TIMEOUT_MS,
    connection,
    consume_all,
    create_topic,
    leader_failover_under_load,
    needs_zookeeper,
    partition_metadata,
    quiet,
    wait_for,
)

pytestmark = needs_zookeeper

BROKER_PASSWORD = "broker-secret"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def signed(cwd: Path, name: str, subject: str, extensions: str) -> None:
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", subject, cwd=cwd)  # fmt: skip
    (cwd / f"{name}.ext").write_text(extensions)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2",
            "-extfile", f"{name}.ext", cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA; the brokers' certificate (server and, towards other brokers, client) for
    127.0.0.1; a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=kafkars-test-ca", cwd=d)  # fmt: skip
    signed(d, "broker", "/CN=localhost",
           "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
           "extendedKeyUsage=serverAuth,clientAuth\n")  # fmt: skip
    signed(d, "client", "/CN=alice", "extendedKeyUsage=clientAuth\n")
    (d / "broker-keystore.pem").write_bytes(
        (d / "broker.key").read_bytes() + (d / "broker.pem").read_bytes()
    )
    return d


def jaas(password: str) -> str:
    """The listener's PLAIN users, and the broker's own login to the other brokers."""
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="broker" password="{password}" '
        f'user_broker="{BROKER_PASSWORD}" user_alice="alice-secret";'
    )


def broker_config(pki: Path, **extra: Any) -> dict[str, Any]:
    return {
        "listeners": "SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas(BROKER_PASSWORD),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "broker-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
        # Nobody but the brokers (and alice, the test's client) may do anything: a
        # broker that logged in as someone else would be refused LeaderAndIsr and Fetch.
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:broker;User:alice",
        "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
        **extra,
    }


def client_config(pki: Path) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": str(pki / "ca.pem"),
        "ssl.certificate.location": str(pki / "client.pem"),
        "ssl.key.location": str(pki / "client.key"),
    }


def full_log(cluster: Cluster, broker_id: int) -> str:
    path = cluster.brokers[broker_id].log_dir / ".kafkars-server.log"
    return path.read_text(errors="replace")


@pytest.fixture
def secured_cluster(pki: Path) -> Iterator[Cluster]:
    config = broker_config(pki, **{"inter.broker.listener.name": "SASL_SSL"})
    with Cluster(3, config=config, client_config=client_config(pki)) as c:
        yield c
        for broker_id in c.brokers:
            problems = [
                line
                for line in full_log(c, broker_id).splitlines()
                if " WARNING " in line or " ERROR " in line
            ]
            print(f"--- broker {broker_id}", *problems[-15:], sep="\n")


def test_sasl_ssl_cluster_replicates_and_fails_over(secured_cluster: Cluster) -> None:
    cluster = secured_cluster
    topic = create_topic(cluster, 1, **{"min.insync.replicas": "2"})
    assert partition_metadata(cluster, topic, 0)[2] == [1, 2, 3]
    # acks=all waits for the followers: acknowledgements mean they fetched over SASL_SSL,
    # and the returning broker catches up over SASL_SSL.
    leader_failover_under_load(cluster, topic)
    for broker_id in cluster.brokers:
        assert "cannot authenticate" not in full_log(cluster, broker_id), broker_id


def test_a_wrong_inter_broker_password_is_one_error_not_a_crash(pki: Path) -> None:
    config = broker_config(
        pki,
        **{"security.inter.broker.protocol": "SASL_SSL", "replica.lag.time.max.ms": 3000},
    )
    wrong = {"listener.name.sasl_ssl.plain.sasl.jaas.config": jaas("not-the-password")}
    with Cluster(
        3, config=config, broker_configs={3: wrong}, client_config=client_config(pki)
    ) as cluster:
        zk = KafkaZkClient(f"{cluster.zookeeper.connect}/kafkars")
        try:
            # Brokers start in order: the first one is the controller, not broker 3.
            assert zk.get_controller_id() != 3
        finally:
            zk.close()
        topic = create_topic(cluster, 3)
        followed = [p for p in range(3) if partition_metadata(cluster, topic, p)[0] != 3]
        assert followed
        # Broker 3 cannot fetch from the others: it leaves the ISR of their partitions.
        wait_for(
            lambda: all(3 not in partition_metadata(cluster, topic, p)[2] for p in followed),
            30,
            "broker 3 out of the ISR of the partitions it follows",
        )
        for p in set(range(3)) - set(followed):
            assert partition_metadata(cluster, topic, p)[2] == [1, 2, 3]
        # The cluster still takes acks=all writes on the under-replicated partitions.
        producer = Producer(quiet({**connection(cluster), "acks": "all"}))
        for p in followed:
            producer.produce(topic, value=b"x", partition=p)
        assert producer.flush(30) == 0
        # Broker 3 is up, answers clients, and said what is wrong once per leader it
        # follows, not on every retry.
        time.sleep(3)
        only_3 = {**connection(cluster), "bootstrap.servers": cluster.brokers[3].bootstrap_servers}
        admin = AdminClient(quiet(only_3))
        assert topic in admin.list_topics(timeout=10).topics
        errors = [
            line
            for line in full_log(cluster, 3).splitlines()
            if " ERROR " in line and "cannot authenticate" in line
        ]
        leaders = {partition_metadata(cluster, topic, p)[0] for p in followed}
        assert 1 <= len(errors) <= len(leaders), errors
        assert "SASL authentication failed" in errors[0], errors[0]


def test_sasl_plaintext_scram_cluster_with_transactions(tmp_path: Path) -> None:
    """SCRAM-SHA-512 between brokers (the Rust client's SCRAM, for the fetchers and the
    controller and broker channels alike). SCRAM credentials live in each broker's store,
    so every broker gets the users before it starts, as Kafka's `kafka-storage format
    --add-scram` does."""
    mechanism = "SCRAM-SHA-512"
    dirs = {i: tmp_path / f"broker-{i}" for i in (1, 2, 3)}
    for d in dirs.values():
        store = ScramCredentialStore(d / CONFIG_STORE_DIR / "users")
        store.upsert("broker", mechanism, ScramCredential.from_password(mechanism, "b-secret"))
        store.upsert("alice", mechanism, ScramCredential.from_password(mechanism, "a-secret"))
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": mechanism,
        "sasl.mechanism.inter.broker.protocol": mechanism,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="broker" password="b-secret";'
        ),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:broker;User:alice",
    }
    client = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": "a-secret",
    }
    broker_configs = {i: {"log.dirs": str(d)} for i, d in dirs.items()}
    with Cluster(3, config=config, broker_configs=broker_configs, client_config=client) as cluster:
        topic = create_topic(cluster, 3, **{"min.insync.replicas": "3"})
        # Leaders on different brokers: the coordinator sends markers to remote leaders,
        # and those verify the transaction with the coordinator, all over SCRAM.
        producer = Producer(
            quiet({**connection(cluster), "transactional.id": "scram-txn", "acks": "all"})
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(30):
            producer.produce(topic, value=b"commit-%d" % i, partition=i % 3)
        producer.commit_transaction(30)
        producer.begin_transaction()
        for i in range(30):
            producer.produce(topic, value=b"abort-%d" % i, partition=i % 3)
        producer.abort_transaction(30)
        assert sorted(consume_all(cluster, topic, 3)) == sorted(b"commit-%d" % i for i in range(30))
        for p in range(3):
            assert partition_metadata(cluster, topic, p)[2] == [1, 2, 3]
        for broker_id in cluster.brokers:
            assert "cannot authenticate" not in full_log(cluster, broker_id), broker_id


def ssl_cluster(pki: Path, **extra: Any) -> Cluster:
    """SSL only, mutual TLS, with certificates that do not name 127.0.0.1."""
    config = {
        "listeners": "SSL://127.0.0.1:0",
        "security.inter.broker.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "nameless-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        # The brokers' principal is their certificate's subject.
        "super.users": "User:CN=kafkars-broker;User:CN=alice",
        **extra,
    }
    client = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki / "ca.pem"),
        "ssl.certificate.location": str(pki / "client.pem"),
        "ssl.key.location": str(pki / "client.key"),
        "ssl.endpoint.identification.algorithm": "none",
    }
    return Cluster(3, config=config, client_config=client)


@pytest.fixture(scope="module")
def nameless(pki: Path) -> Path:
    signed(pki, "nameless", "/CN=kafkars-broker", "extendedKeyUsage=serverAuth,clientAuth\n")
    (pki / "nameless-keystore.pem").write_bytes(
        (pki / "nameless.key").read_bytes() + (pki / "nameless.pem").read_bytes()
    )
    return pki


def test_ssl_cluster_checks_host_names_unless_told_not_to(nameless: Path) -> None:
    # Kafka's default ("https"): a certificate that does not name the broker's host is
    # refused, so the brokers never hear from the controller.
    refused = ssl_cluster(nameless)
    try:
        # The controller's first connections fail within a second or two of the start.
        with pytest.raises(TimeoutError):
            refused.start(timeout=8)
        logs = "\n".join(full_log(refused, i) for i in refused.brokers)
        assert "certificate verify failed" in logs
        assert "IP address mismatch" in logs or "doesn't match" in logs, logs[-2000:]
    finally:
        refused.stop()
    with ssl_cluster(nameless, **{"ssl.endpoint.identification.algorithm": ""}) as cluster:
        topic = create_topic(cluster, 1, **{"min.insync.replicas": "3"})
        producer = Producer(quiet({**connection(cluster), "acks": "all"}))
        for i in range(50):
            producer.produce(topic, value=b"%d" % i)
        assert producer.flush(30) == 0
        assert sorted(consume_all(cluster, topic, 1)) == sorted(b"%d" % i for i in range(50))
