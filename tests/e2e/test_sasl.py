"""SASL listeners: PLAIN users from the listener's JAAS config, SCRAM-SHA-256/512
credentials managed through AlterUserScramCredentials, SASL_SSL over TLS, and what an
unauthenticated connection may not do."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kafkars import _core
from kafkars.broker import Broker

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice \\"quoted\\" secret";'
)


def listener(broker: Broker, name: str) -> str:
    (_, _, host, port) = next(x for x in broker.listeners if x[0] == name)
    return f"{host}:{port}"


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[Broker]:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "auto.create.topics.enable": "true",
        "group.initial.rebalance.delay.ms": "0",
    }
    with Broker(config=config) as b:
        yield b


def client(broker: Broker, mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": listener(broker, "SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def round_trip(conf: dict[str, str], topic: str, n: int = 50) -> None:
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, value=str(i).encode())
    assert p.flush(20) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = 0
    try:
        while got < n:
            msgs = c.consume(n, timeout=10)
            assert msgs, f"{got} of {n}"
            assert all(m.error() is None for m in msgs)
            got += len(msgs)
    finally:
        c.close()


def assert_authentication_fails(conf: dict[str, str]) -> None:
    errors: list[object] = []
    admin = AdminClient({**conf, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)
    admin.poll(1)  # error_cb runs from poll
    assert any("Authentication failed" in str(e) for e in errors), errors


def test_plain(sasl_broker: Broker, topic: str) -> None:
    round_trip(client(sasl_broker, "PLAIN", "alice", 'alice "quoted" secret'), topic)


def test_plain_wrong_password_fails(sasl_broker: Broker) -> None:
    assert_authentication_fails(client(sasl_broker, "PLAIN", "alice", "wrong"))
    assert_authentication_fails(client(sasl_broker, "PLAIN", "mallory", "x"))


@pytest.mark.parametrize(
    ("mechanism", "confluent"),
    [
        ("SCRAM-SHA-256", ScramMechanism.SCRAM_SHA_256),
        ("SCRAM-SHA-512", ScramMechanism.SCRAM_SHA_512),
    ],
)
def test_scram(sasl_broker: Broker, topic: str, mechanism: str, confluent: ScramMechanism) -> None:
    admin = AdminClient({"bootstrap.servers": sasl_broker.bootstrap_servers})
    info = ScramCredentialInfo(confluent, 4096)
    upsert = UserScramCredentialUpsertion("bob", info, b"bob-secret")
    admin.alter_user_scram_credentials([upsert])["bob"].result(10)
    described = admin.describe_user_scram_credentials(["bob"])["bob"].result(10)
    assert confluent in {i.mechanism for i in described.scram_credential_infos}
    round_trip(client(sasl_broker, mechanism, "bob", "bob-secret"), topic)
    assert_authentication_fails(client(sasl_broker, mechanism, "bob", "not-it"))
    # Deleted credentials no longer authenticate.
    admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", confluent)])[
        "bob"
    ].result(10)
    assert_authentication_fails(client(sasl_broker, mechanism, "bob", "bob-secret"))


def test_unauthenticated_requests_close_the_connection(sasl_broker: Broker) -> None:
    host, port = listener(sasl_broker, "SASL_PLAINTEXT").rsplit(":", 1)
    # Blocking (no timeout): MSG_WAITALL then waits for the whole frame.
    with socket.create_connection((host, int(port))) as s:
        # ApiVersions is allowed before authentication...
        s.sendall(_core.protocol.encode_request(18, 0, 1, "raw", {}))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        assert len(s.recv(size, socket.MSG_WAITALL)) == size
        # ...Metadata is not: Kafka closes the connection.
        s.sendall(_core.protocol.encode_request(3, 1, 2, "raw", {"topics": None}))
        assert s.recv(4) == b""


def test_sasl_ssl(tmp_path: Path) -> None:
    import subprocess

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "s.key", "-out", "s.csr",
            "-subj", "/CN=localhost")  # fmt: skip
    (tmp_path / "s.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "s.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "s.pem", "-days", "2", "-extfile", "s.ext")  # fmt: skip
    (tmp_path / "ks.pem").write_bytes(
        (tmp_path / "s.key").read_bytes() + (tmp_path / "s.pem").read_bytes()
    )
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tmp_path / "ks.pem"),
    }
    with Broker(config=config) as b:
        conf = {
            "bootstrap.servers": listener(b, "SASL_SSL"),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(tmp_path / "ca.pem"),
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
        assert AdminClient(conf).list_topics(timeout=10).brokers


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({}, "GSSAPI is not"),
        (
            {"sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN"},
            "no JAAS configuration",
        ),
    ],
)
def test_bad_sasl_settings_refuse_to_start(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    import subprocess
    import sys

    settings = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "log.dirs": str(tmp_path / "data"),
        **overrides,
    }
    args = [sys.executable, "-m", "kafkars.server.cli"]
    for k, v in settings.items():
        args += ["--override", f"{k}={v}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert message in output, output
    assert "Traceback" not in output


def test_sessions_expire_without_reauthentication() -> None:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "800",
    }
    with Broker(config=config) as b:
        host, port = listener(b, "SASL_PLAINTEXT").rsplit(":", 1)
        with socket.create_connection((host, int(port))) as s:
            correlation = 0

            def call(api_key: int, version: int, body: dict[str, object]) -> dict[str, Any]:
                nonlocal correlation
                correlation += 1
                codec = _core.protocol
                s.sendall(codec.encode_request(api_key, version, correlation, "raw", body))
                size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
                frame = s.recv(size, socket.MSG_WAITALL)
                return codec.decode_response(api_key, version, correlation, frame)

            assert call(17, 1, {"mechanism": "PLAIN"})["error_code"] == 0
            auth = call(36, 2, {"auth_bytes": b"\x00admin\x00admin-secret"})
            assert (auth["error_code"], auth["session_lifetime_ms"]) == (0, 800)
            assert call(3, 1, {"topics": None})["brokers"]
            time.sleep(1.0)
            # Past its lifetime the session serves nothing but a re-authentication.
            s.sendall(_core.protocol.encode_request(3, 1, 99, "raw", {"topics": None}))
            assert s.recv(4) == b""


def test_scram_users_through_kafkars_configs(sasl_broker: Broker) -> None:
    import subprocess
    import sys

    base = [sys.executable, "-m", "kafkars.tools.configs", "-b", sasl_broker.bootstrap_servers]
    user = ["--entity-type", "users", "--entity-name", "carol"]
    add = "SCRAM-SHA-256=[iterations=8192,password=carol-pw],SCRAM-SHA-512=[password=carol-pw]"
    altered = subprocess.run(
        [*base, *user, "--alter", "--add-config", add], capture_output=True, text=True
    )
    assert altered.returncode == 0, altered.stderr
    described = subprocess.run([*base, *user, "--describe"], capture_output=True, text=True)
    assert "SCRAM-SHA-256=iterations=8192" in described.stdout, described.stderr
    assert "SCRAM-SHA-512=iterations=4096" in described.stdout
    conf = client(sasl_broker, "SCRAM-SHA-512", "carol", "carol-pw")
    assert AdminClient(conf).list_topics(timeout=10).brokers
    bad = subprocess.run([*base, *user, "--alter", "--add-config", "SCRAM-SHA-256=pw"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
