"""ZooKeeper security without a ZooKeeper: the JAAS file a broker's login comes from,
how KAFKA_OPTS names it, and which ACLs each znode gets with zookeeper.set.acl."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.security import ACL, Id

from kafkars.config.definition import ConfigException
from kafkars.security.jaas import parse_jaas_file
from kafkars.zk import zk_data
from kafkars.zk.zk_sasl import system_properties, zk_sasl_login

DIGEST = "org.apache.zookeeper.server.auth.DigestLoginModule"
JAAS = f"""
/* Kafka's usual file: the listeners' login and ZooKeeper's */
KafkaServer {{
   org.apache.kafka.common.security.plain.PlainLoginModule required
   username="admin" password="a//b;c";
}};
// ZooKeeper
Client {{
  {DIGEST} required
  username="kafka"
  password="kafka-secret";
}};
"""


def test_jaas_file_sections() -> None:
    sections = parse_jaas_file(JAAS, "f")
    assert list(sections) == ["KafkaServer", "Client"]
    assert sections["KafkaServer"][0].options == {"username": "admin", "password": "a//b;c"}
    assert sections["Client"][0].login_module == DIGEST


@pytest.mark.parametrize(
    "text", ['Client { x required a="b" };', "Client {", 'Client { x required a="b";', "x"]
)
def test_malformed_jaas_file(text: str) -> None:
    with pytest.raises(ConfigException):
        parse_jaas_file(text, "f")


def test_system_properties_of_kafka_opts() -> None:
    opts = "-Xmx1g -Djava.security.auth.login.config='/a b/jaas.conf' -Dx=1=2 -server"
    assert system_properties(opts) == {
        "java.security.auth.login.config": "/a b/jaas.conf",
        "x": "1=2",
    }


def test_login_from_kafka_opts(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS + "Other { " + DIGEST + ' required username="u2" password="p2"; };')
    opts = f"-Djava.security.auth.login.config={jaas}"
    login = zk_sasl_login({"KAFKA_OPTS": opts})
    assert login is not None and (login.username, login.password) == ("kafka", "kafka-secret")
    assert "kafka-secret" not in repr(login)
    other = zk_sasl_login({"KAFKA_OPTS": opts + " -Dzookeeper.sasl.clientconfig=Other"})
    assert other is not None and other.username == "u2"
    assert zk_sasl_login({"KAFKA_OPTS": opts + " -Dzookeeper.sasl.client=false"}) is None
    assert zk_sasl_login({}) is None
    # A file without the section: no login, as Kafka, unless the login is asked for.
    missing = opts + " -Dzookeeper.sasl.clientconfig=Nope"
    assert zk_sasl_login({"KAFKA_OPTS": missing}) is None
    with pytest.raises(ConfigException, match="no Nope section"):
        zk_sasl_login({"KAFKA_OPTS": missing + " -Dzookeeper.sasl.client=true"})


def test_unusable_login(tmp_path: Path) -> None:
    with pytest.raises(ConfigException, match="cannot read"):
        zk_sasl_login({"KAFKA_OPTS": f"-Djava.security.auth.login.config={tmp_path}/none"})
    kerberos = tmp_path / "krb.conf"
    kerberos.write_text(
        "Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };"
    )
    with pytest.raises(ConfigException, match="DIGEST-MD5"):
        zk_sasl_login({"KAFKA_OPTS": f"-Djava.security.auth.login.config={kerberos}"})


def test_default_acls() -> None:
    creator_all = ACL(31, Id("auth", ""))
    world_read = ACL(1, Id("world", "anyone"))
    world_all = ACL(31, Id("world", "anyone"))
    assert zk_data.default_acls(False, "/config/users") == [world_all]
    assert zk_data.default_acls(True, "/brokers/ids/1") == [creator_all, world_read]
    assert zk_data.default_acls(True, "/config") == [creator_all, world_read]
    assert zk_data.default_acls(True, "/config/topics/t") == [creator_all, world_read]
    for sensitive in ("/config/users", "/config/users/alice", "/config/brokers/1"):
        assert zk_data.default_acls(True, sensitive) == [creator_all]
    assert zk_data.default_acls(True, "/delegation_token/tokens/x") == [creator_all]
    assert zk_data.default_acls(True, "/consumers") == [world_all]
