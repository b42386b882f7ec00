"""SSL listeners (rustls): confluent-kafka clients over TLS, client certificates with
`ssl.client.auth`, and settings refused at start-up with one line."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.broker import Broker
from kafkars.protocol import ApiKey


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def signed(cwd: Path, name: str, subject: str, extensions: str) -> None:
    """A certificate for `subject` signed by the CA; X.509 v3, as webpki requires."""
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", subject, cwd=cwd)  # fmt: skip
    (cwd / f"{name}.ext").write_text(extensions)
    extra = ["-extfile", f"{name}.ext"]
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", *extra, cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=kafkars-test-ca", cwd=d)  # fmt: skip
    signed(d, "server", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    signed(d, "client", "/CN=alice/O=kafkars", "extendedKeyUsage=clientAuth\n")
    (d / "server-keystore.pem").write_bytes(
        (d / "server.key").read_bytes() + (d / "server.pem").read_bytes()
    )
    return d


def ssl_broker(pki: Path, **extra: str) -> Broker:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "server-keystore.pem"),
        "auto.create.topics.enable": "true",
        **extra,
    }
    return Broker(config=config)


def ssl_bootstrap(broker: Broker) -> str:
    (_, _, host, port) = next(x for x in broker.listeners if x[0] == "SSL")
    return f"{host}:{port}"


@pytest.fixture(scope="module")
def tls_broker(pki: Path) -> Iterator[Broker]:
    with ssl_broker(pki) as b:
        yield b


def test_produce_and_consume_over_tls(tls_broker: Broker, pki: Path, topic: str) -> None:
    conf = {
        "bootstrap.servers": ssl_bootstrap(tls_broker),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki / "ca.pem"),
    }
    p = Producer({**conf, "compression.type": "lz4"})
    for i in range(2000):
        p.produce(topic, key=str(i).encode(), value=b"x" * 300 + str(i).encode())
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": "tls", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = 0
    try:
        while got < 2000:
            msgs = c.consume(500, timeout=10)
            assert msgs, f"{got} of 2000 records over TLS"
            for m in msgs:
                assert m.error() is None, m.error()
            got += len(msgs)
    finally:
        c.close()
    assert got == 2000


def test_a_client_that_does_not_trust_the_broker_fails(tls_broker: Broker, topic: str) -> None:
    admin = AdminClient(
        {"bootstrap.servers": ssl_bootstrap(tls_broker), "security.protocol": "SSL"}
    )
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    # The plaintext listener of the same broker still serves.
    assert (
        AdminClient({"bootstrap.servers": tls_broker.bootstrap_servers})
        .list_topics(timeout=10)
        .brokers
    )


def test_client_auth_required(pki: Path) -> None:
    with ssl_broker(
        pki,
        **{
            "ssl.client.auth": "required",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki / "ca.pem"),
        },  # fmt: skip
    ) as b:
        base = {
            "bootstrap.servers": ssl_bootstrap(b),
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki / "ca.pem"),
        }
        with pytest.raises(KafkaException):
            AdminClient(base).list_topics(timeout=3)
        with_cert = {
            **base,
            "ssl.certificate.location": str(pki / "client.pem"),
            "ssl.key.location": str(pki / "client.key"),
        }
        # The principal is the certificate's subject, as Kafka's default builder makes it.
        principals: list[str] = []
        apis = b._server.apis
        metadata = apis.handlers[ApiKey.METADATA]

        def spy(server: object, request: Any) -> Any:
            principals.append(request.principal)
            return metadata(server, request)

        apis.handlers[ApiKey.METADATA] = spy
        assert AdminClient(with_cert).list_topics(timeout=10).brokers
        assert "User:O=kafkars,CN=alice" in principals, principals


def test_principal_mapping_rules(pki: Path, topic: str) -> None:
    """ssl.principal.mapping.rules turns the subject into the short name ACLs use: with
    only User:alice a super user, the mapped client may create a topic; a subject no
    rule maps is refused."""
    trust = {
        "ssl.client.auth": "required",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki / "ca.pem"),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:alice;User:ANONYMOUS",
    }
    client = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki / "ca.pem"),
        "ssl.certificate.location": str(pki / "client.pem"),
        "ssl.key.location": str(pki / "client.key"),
    }
    rules = "RULE:^O=kafkars,CN=(.*)$/$1/L,DEFAULT"
    with ssl_broker(pki, **trust, **{"ssl.principal.mapping.rules": rules}) as b:
        admin = AdminClient({**client, "bootstrap.servers": ssl_bootstrap(b)})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    # Without the rule the principal is the whole DN, which is not a super user.
    with ssl_broker(pki, **trust) as b:
        admin = AdminClient({**client, "bootstrap.servers": ssl_bootstrap(b)})
        with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED|Authorization"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    unmapped = ssl_broker(pki, **trust, **{"ssl.principal.mapping.rules": "RULE:^CN=x$/x/"})
    with unmapped as b, pytest.raises(KafkaException):
        AdminClient({**client, "bootstrap.servers": ssl_bootstrap(b)}).list_topics(timeout=3)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ssl.keystore.type": "JKS"}, "keytool -importkeystore"),
        (
            {"ssl.keystore.type": "PKCS12", "ssl.keystore.password": "wrong"},
            "cannot open it (wrong password?)",
        ),
        ({"ssl.key.password": "wrong"}, "ssl.key.password"),
        ({"ssl.principal.mapping.rules": "RULE:oops"}, "ssl.principal.mapping.rules"),
        ({"ssl.keystore.location": "/nonexistent/keystore.pem"}, "cannot read it"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
        ({"ssl.client.auth": "required"}, "truststore"),
    ],
)
def test_bad_ssl_settings_refuse_to_start(
    pki: Path, tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    settings = {
        "listeners": "SSL://127.0.0.1:0",
        "inter.broker.listener.name": "SSL",
        "log.dirs": str(tmp_path / "data"),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "server-keystore.pem"),
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


def test_pkcs12_stores_and_an_encrypted_pem_key(pki: Path, topic: str) -> None:
    """Key stores as Kafka deployments usually have them: PKCS12 with a password (key and
    trust store), or a PEM key encrypted with ssl.key.password."""
    openssl("pkcs12", "-export", "-inkey", "server.key", "-in", "server.pem",
            "-certfile", "ca.pem", "-out", "server.p12", "-passout", "pass:store-secret",
            cwd=pki)  # fmt: skip
    openssl("pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-out", "trust.p12",
            "-passout", "pass:trust-secret", cwd=pki)  # fmt: skip
    openssl("pkcs8", "-topk8", "-in", "server.key", "-out", "server-encrypted.key",
            "-passout", "pass:key-secret", cwd=pki)  # fmt: skip
    (pki / "server-encrypted.pem").write_bytes(
        (pki / "server-encrypted.key").read_bytes() + (pki / "server.pem").read_bytes()
    )
    stores = [
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki / "server.p12"),
            "ssl.keystore.password": "store-secret",
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(pki / "trust.p12"),
            "ssl.truststore.password": "trust-secret",
            "ssl.client.auth": "requested",
        },
        {
            "ssl.keystore.location": str(pki / "server-encrypted.pem"),
            "ssl.key.password": "key-secret",
        },
    ]
    for extra in stores:
        with ssl_broker(pki, **extra) as broker:
            conf = {
                "bootstrap.servers": ssl_bootstrap(broker),
                "security.protocol": "SSL",
                "ssl.ca.location": str(pki / "ca.pem"),
            }
            p = Producer(conf)
            p.produce(topic, value=b"over a converted store")
            assert p.flush(20) == 0
            c = Consumer({**conf, "group.id": "p12", "auto.offset.reset": "earliest"})
            c.subscribe([topic])
            try:
                m = c.poll(15)
                assert m is not None and m.error() is None
            finally:
                c.close()


def peer_subject(address: str, ca: Path) -> dict[str, str]:
    """The subject of the certificate the listener at `address` presents."""
    import ssl

    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        cert = tls.getpeercert()
    assert cert is not None
    return {k: v for rdn in cert["subject"] for (k, v) in rdn}


def test_certificates_reload_without_a_restart(pki: Path) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    signed(pki, "renewed", "/CN=localhost/O=renewed", "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    renewed = pki / "renewed-keystore.pem"
    renewed.write_bytes((pki / "renewed.key").read_bytes() + (pki / "renewed.pem").read_bytes())
    with ssl_broker(pki) as b:
        address = ssl_bootstrap(b)
        assert "organizationName" not in peer_subject(address, pki / "ca.pem")
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        broker_id = str(next(iter(admin.list_topics(timeout=10).brokers)))

        def alter(value: str) -> None:
            entry = ConfigEntry(
                "listener.name.ssl.ssl.keystore.location",
                value,
                incremental_operation=AlterConfigOpType.SET,
            )
            resource = ConfigResource(
                ConfigResource.Type.BROKER, broker_id, incremental_configs=[entry]
            )
            admin.incremental_alter_configs([resource])[resource].result(10)

        alter(str(renewed))
        assert peer_subject(address, pki / "ca.pem").get("organizationName") == "renewed"
        # A path that cannot be read is refused, and the listener keeps its certificates.
        with pytest.raises(KafkaException):
            alter("/nonexistent.pem")
        assert peer_subject(address, pki / "ca.pem").get("organizationName") == "renewed"
