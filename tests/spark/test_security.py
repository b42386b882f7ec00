"""The `kafkars` source and sink against a SASL_SSL listener, with Spark's Kafka option
names (`kafka.security.protocol`, `kafka.sasl.mechanism`, `kafka.sasl.jaas.config`,
`kafka.ssl.truststore.*`): a PEM trust store and a PKCS12 one, PLAIN and SCRAM; a wrong
password fails the read with the broker's SASL error."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkars.broker import Broker

pytestmark = pytest.mark.timeout(240)

ADMIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret";'
)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA (as PEM and as a PKCS12 trust store) and a certificate for 127.0.0.1."""
    d = tmp_path_factory.mktemp("spark-pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.pem", "-days", "2", "-subj", "/CN=kafkars-spark-ca", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
             "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)  # fmt: skip
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2",
             "-extfile", "server.ext", cwd=d)  # fmt: skip
    (d / "server-keystore.pem").write_bytes(
        (d / "server.key").read_bytes() + (d / "server.pem").read_bytes()
    )
    _openssl("pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-out", "trust.p12",
             "-passout", "pass:trust-pw", cwd=d)  # fmt: skip
    return d


@pytest.fixture(scope="module")
def secured(pki: Path) -> Iterator[tuple[Broker, str]]:
    """A broker with a SASL_SSL listener (PLAIN and SCRAM) beside a PLAINTEXT one."""
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": ADMIN_JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "server-keystore.pem"),
    }
    with Broker(process=True, config=config) as broker:
        (_, _, host, port) = next(x for x in broker.listeners if x[0] == "SASL_SSL")
        yield broker, f"{host}:{port}"


def _options(bootstrap: str, pki: Path, **extra: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": bootstrap,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
        'required username="admin" password="admin-secret";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(pki / "ca.pem"),
        **extra,
    }


def test_write_and_read_over_sasl_ssl(
    spark: Any, secured: tuple[Broker, str], pki: Path, topic: str
) -> None:
    _, bootstrap = secured
    rows = [(f"k{i}", f"v{i}") for i in range(50)]
    df = spark.createDataFrame(rows, "key string, value string")
    writer = df.write.format("kafkars").mode("append").option("topic", topic)
    for k, v in _options(bootstrap, pki).items():
        writer = writer.option(k, v)
    writer.save()

    # Read back with a PKCS12 trust store instead of the PEM one.
    options = _options(
        bootstrap,
        pki,
        **{
            "kafka.ssl.truststore.type": "PKCS12",
            "kafka.ssl.truststore.location": str(pki / "trust.p12"),
            "kafka.ssl.truststore.password": "trust-pw",
            "subscribe": topic,
        },
    )
    reader = spark.read.format("kafkars")
    for k, v in options.items():
        reader = reader.option(k, v)
    got = sorted((bytes(r.key).decode(), bytes(r.value).decode()) for r in reader.load().collect())
    assert got == sorted(rows)


def test_a_wrong_password_fails_with_the_sasl_error(
    spark: Any, secured: tuple[Broker, str], pki: Path, topic: str
) -> None:
    _, bootstrap = secured
    options = _options(
        bootstrap,
        pki,
        **{
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="admin" password="wrong";',
            "subscribe": topic,
        },
    )
    reader = spark.read.format("kafkars")
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match="(?i)authentication failed"):
        reader.load().collect()
