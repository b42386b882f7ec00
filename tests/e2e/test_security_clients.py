"""kafka-python, aiokafka and kcat against SSL, SASL_PLAINTEXT (PLAIN and SCRAM) and
SASL_SSL listeners, with certificates made by openssl in the test."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kafkars.broker import Broker

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'


def openssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, Path]]:
    d = tmp_path_factory.mktemp("pki")
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=test-ca")  # fmt: skip
    openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "s.key", "-out", "s.csr",
            "-subj", "/CN=localhost")  # fmt: skip
    (d / "s.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl(d, "x509", "-req", "-in", "s.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "s.pem", "-days", "2", "-extfile", "s.ext")  # fmt: skip
    (d / "ks.pem").write_bytes((d / "s.key").read_bytes() + (d / "s.pem").read_bytes())
    config = {
        "listeners": (
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
            "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(d / "ks.pem"),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "auto.create.topics.enable": "true",
    }
    with Broker(config=config) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        upsert = UserScramCredentialUpsertion("bob", info, b"bob-pw")
        admin.alter_user_scram_credentials([upsert])["bob"].result(10)
        yield b, d


def address(b: Broker, listener: str) -> str:
    (_, _, host, port) = next(x for x in b.listeners if x[0] == listener)
    return f"{host}:{port}"


def create(b: Broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)


CASES = {
    "ssl": ("SSL", {}),
    "plain": ("SASL_PLAINTEXT", {"mechanism": "PLAIN", "user": "alice", "password": "alice-pw"}),
    "scram": (
        "SASL_PLAINTEXT",
        {"mechanism": "SCRAM-SHA-256", "user": "bob", "password": "bob-pw"},
    ),
    "sasl_ssl": ("SASL_SSL", {"mechanism": "PLAIN", "user": "alice", "password": "alice-pw"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kafka_python(broker: tuple[Broker, Path], topic: str, case: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    b, pki = broker
    protocol, sasl = CASES[case]
    create(b, topic)
    conf: dict[str, object] = {
        "bootstrap_servers": address(b, protocol),
        "security_protocol": protocol,
    }
    if "SSL" in protocol:
        conf["ssl_cafile"] = str(pki / "ca.pem")
    if sasl:
        conf |= {
            "sasl_mechanism": sasl["mechanism"],
            "sasl_plain_username": sasl["user"],
            "sasl_plain_password": sasl["password"],
        }
    producer = KafkaProducer(**conf)
    producer.send(topic, b"secured").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=3_000, **conf)
    values = [m.value for m in consumer]
    consumer.close()
    assert values == [b"secured"]


@pytest.mark.parametrize("case", ["scram", "sasl_ssl"])
def test_aiokafka(broker: tuple[Broker, Path], topic: str, case: str) -> None:
    import ssl

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    b, pki = broker
    protocol, sasl = CASES[case]
    create(b, topic)
    conf: dict[str, object] = {
        "bootstrap_servers": address(b, protocol),
        "security_protocol": protocol,
        "sasl_mechanism": sasl["mechanism"],
        "sasl_plain_username": sasl["user"],
        "sasl_plain_password": sasl["password"],
    }
    if "SSL" in protocol:
        conf["ssl_context"] = ssl.create_default_context(cafile=str(pki / "ca.pem"))

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        await producer.send_and_wait(topic, b"async")
        await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
        await consumer.start()
        try:
            msg = await asyncio.wait_for(consumer.getone(), 10)
        finally:
            await consumer.stop()
        return [msg.value]

    assert asyncio.run(run()) == [b"async"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by make system-deps")
@pytest.mark.parametrize("case", ["ssl", "scram"])
def test_kcat(broker: tuple[Broker, Path], topic: str, case: str) -> None:
    b, pki = broker
    protocol, sasl = CASES[case]
    create(b, topic)
    args = ["kcat", "-b", address(b, protocol), "-X", f"security.protocol={protocol}"]
    if "SSL" in protocol:
        args += ["-X", f"ssl.ca.location={pki / 'ca.pem'}"]
    if sasl:
        args += ["-X", f"sasl.mechanisms={sasl['mechanism']}"]
        args += ["-X", f"sasl.username={sasl['user']}", "-X", f"sasl.password={sasl['password']}"]
    produced = subprocess.run(
        [*args, "-P", "-t", topic], input="k1\nk2\n", text=True, capture_output=True, timeout=30
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [*args, "-C", "-t", topic, "-o", "beginning", "-e", "-q"],
        text=True,
        capture_output=True,
        timeout=30,
    )
    assert consumed.stdout.split() == ["k1", "k2"], consumed.stderr


def test_plaintext_client_on_tls_port_fails_cleanly(broker: tuple[Broker, Path]) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    b, _ = broker
    with pytest.raises(KafkaError):
        # kafka-python 3 retries the bootstrap for bootstrap_timeout_ms (30 s by default).
        KafkaProducer(
            bootstrap_servers=address(b, "SSL"),
            request_timeout_ms=3000,
            max_block_ms=3000,
            bootstrap_timeout_ms=3000,
        )
    # The broker goes on serving.
    assert AdminClient({"bootstrap.servers": b.bootstrap_servers}).list_topics(timeout=10).brokers
