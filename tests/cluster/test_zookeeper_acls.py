"""zookeeper.set.acl: brokers log in to ZooKeeper with SASL DIGEST-MD5 (the JAAS file
named in KAFKA_OPTS) and create their znodes with Kafka's default ACLs: anyone reads,
only the brokers' identity writes, and nobody else reads the credential paths."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id

from kafkars.broker import Broker
from kafkars.testing.cluster import Cluster
from kafkars.testing.zookeeper import ZooKeeperServer
from kafkars.zk import zk_data

from .helpers import (
    SESSION_TIMEOUT_MS,
    Producing,
    consume_all,
    create_topic,
    needs_zookeeper,
    partition_metadata,
    quiet,
    wait_for,
)

pytestmark = [
    needs_zookeeper,
    pytest.mark.skipif(
        importlib.util.find_spec("puresasl") is None,
        reason="needs pure-sasl, a dependency since zookeeper.set.acl (make dev installs it)",
    ),
]

USER, PASSWORD = "kafka", "kafka-secret"


def kafka_opts(tmp_path: Path, password: str) -> dict[str, str]:
    jaas = tmp_path / f"zookeeper_jaas_{password}.conf"
    jaas.write_text(
        "// the brokers' ZooKeeper login\n"
        "Client {\n"
        "  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  username="{USER}"\n'
        f'  password="{password}";\n'
        "};\n"
    )
    return {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={jaas}"}


@pytest.fixture
def zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(sasl_users={USER: PASSWORD}) as zk:
        yield zk


@contextmanager
def client(zookeeper: ZooKeeperServer, *, login: bool) -> Iterator[KazooClient]:
    """A ZooKeeper client under the brokers' chroot, with their login or none."""
    sasl = {"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD}
    zk = KazooClient(
        f"{zookeeper.connect}/kafkars", timeout=10, sasl_options=sasl if login else None
    )
    zk.start(10)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def test_only_the_brokers_write_and_read_credentials(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    config = {"zookeeper.set.acl": True, "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS}
    env = kafka_opts(tmp_path, PASSWORD)
    with (
        Cluster(3, config=config, zookeeper=zookeeper, env=env) as cluster,
        client(zookeeper, login=False) as anonymous,
        client(zookeeper, login=True) as as_broker,
    ):
        topic = create_topic(cluster, 1, **{"min.insync.replicas": "2"})
        producer = Producer(quiet({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}))
        for i in range(100):
            producer.produce(topic, value=b"%d" % i)
        assert producer.flush(30) == 0

        # World-readable, as Kafka leaves them for tools and monitoring.
        assert sorted(anonymous.get_children(zk_data.BROKER_IDS)) == ["1", "2", "3"]
        anonymous.get(zk_data.broker_path(1))
        anonymous.get(zk_data.topic_path(topic))
        acls, _ = anonymous.get_acls(zk_data.partition_state_path(topic, 0))
        assert set(acls) == {
            ACL(31, Id("sasl", USER)),  # everything for the brokers' identity
            ACL(1, Id("world", "anyone")),  # reading for anyone
        }
        # Not writable without the brokers' login.
        with pytest.raises(NoAuthError):
            anonymous.set(zk_data.CONTROLLER, zk_data.encode_controller(99))
        with pytest.raises(NoAuthError):
            anonymous.delete(zk_data.CONTROLLER)
        with pytest.raises(NoAuthError):
            anonymous.create(zk_data.topic_path("x"), b"{}")
        with pytest.raises(NoAuthError):
            anonymous.set(zk_data.topic_path(topic), b"{}")
        with pytest.raises(NoAuthError):
            anonymous.create(zk_data.CONTROLLER_EPOCH + "_x", b"")
        # Credentials are not even readable.
        for path in ("/config/users", "/config/brokers"):
            with pytest.raises(NoAuthError):
                anonymous.get_children(path)
            assert as_broker.get_acls(path)[0] == [ACL(31, Id("sasl", USER))]
        anonymous.get_children("/config/topics")
        # The old consumers' path stays open (Kafka's exception).
        anonymous.create("/consumers/anyone", b"")

        # The controller still writes: a leader's death fails its partition over.
        with Producing(cluster, topic) as producing:
            acked = producing.acked
            wait_for(lambda: len(acked) > 100, 20, "acknowledgements")
            leader, _, _ = partition_metadata(cluster, topic, 0)
            cluster.kill(leader)
            wait_for(
                lambda: partition_metadata(cluster, topic, 0)[0] not in (leader, -1),
                SESSION_TIMEOUT_MS / 1000 + 10,
                "a new leader",
            )
            count = len(acked)
            wait_for(lambda: len(acked) > count + 100, 30, "acknowledgements from it")
        assert not producing.errors, producing.errors[:3]
        values = consume_all(cluster, topic, 1)
        assert set(acked) | {b"%d" % i for i in range(100)} <= set(values)


def _fatal_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]


@pytest.mark.parametrize("login", ["wrong password", "no login"])
def test_a_broker_that_cannot_log_in_stops_with_one_line(
    zookeeper: ZooKeeperServer, tmp_path: Path, login: str
) -> None:
    # Without a login: an empty KAFKA_OPTS, whatever the environment's is.
    no_login = {"KAFKA_OPTS": ""}
    env = kafka_opts(tmp_path, "not-the-password") if login == "wrong password" else no_login
    broker = Broker(
        process=True,
        env=env,
        config={
            "broker.id": 1,
            "zookeeper.connect": f"{zookeeper.connect}/kafkars",
            "zookeeper.set.acl": True,
        },
    )
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="broker exited with 1"):
        broker.start()
    try:
        assert time.monotonic() - started < 20
        lines = _fatal_lines(broker.server_log())
        assert len(lines) == 1, lines
        expected = (
            "zookeeper.set.acl is true" if env == no_login else "refused the SASL login of 'kafka'"
        )
        assert expected in lines[0], lines[0]
    finally:
        broker.stop()
