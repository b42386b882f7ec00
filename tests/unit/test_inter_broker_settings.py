"""Which client settings a broker takes for the inter-broker listener: its protocol, its
JAAS login (the listener's mechanism-prefixed entry first), its TLS stores and host-name
check, and the one-line refusal when the login is missing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkars.config import ConfigException, KafkaConfig
from kafkars.security.inter_broker import fetcher_security, inter_broker_security


def login(user: str, password: str) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}";'
    )


@pytest.fixture(scope="module")
def keystore(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem",
         "-out", "cert.pem", "-days", "1", "-subj", "/CN=broker"],
        cwd=d, check=True, capture_output=True,
    )  # fmt: skip
    (d / "store.pem").write_bytes((d / "key.pem").read_bytes() + (d / "cert.pem").read_bytes())
    return d


def test_plaintext_needs_nothing() -> None:
    c = KafkaConfig.from_dict({})
    assert inter_broker_security(c).protocol == "PLAINTEXT"
    assert fetcher_security(c) is None


def test_the_mechanism_prefixed_jaas_login_comes_first() -> None:
    c = KafkaConfig.from_dict(
        {
            "listeners": "INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            "sasl.jaas.config": login("generic", "g"),
            "listener.name.internal.scram-sha-256.sasl.jaas.config": login("broker", "s3cret"),
        }
    )
    security = inter_broker_security(c)
    assert security.protocol == "SASL_PLAINTEXT" and security.tls is None
    assert security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username) == ("SCRAM-SHA-256", "broker")
    assert "s3cret" not in repr(security)
    assert fetcher_security(c) == {
        "tls": None,
        "sasl": {"mechanism": "SCRAM-SHA-256", "username": "broker", "password": "s3cret"},
    }


def test_a_missing_login_is_refused_with_the_setting_to_fix() -> None:
    c = KafkaConfig.from_dict(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";'
            ),
        }
    )
    with pytest.raises(ConfigException, match="username=.*password="):
        inter_broker_security(c)


@pytest.mark.parametrize(("algorithm", "check"), [(None, True), ("", False), ("https", True)])
def test_tls_trusts_the_listener_store_and_checks_host_names_by_default(
    keystore: Path, algorithm: str | None, check: bool
) -> None:
    props = {
        "listeners": "SSL://127.0.0.1:0",
        "security.inter.broker.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore / "store.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(keystore / "cert.pem"),
    }
    if algorithm is not None:
        props["listener.name.ssl.ssl.endpoint.identification.algorithm"] = algorithm
    c = KafkaConfig.from_dict(props)
    security = inter_broker_security(c)
    assert security.tls is not None and security.tls.check_hostname is check
    settings = fetcher_security(c)
    assert settings is not None and settings["sasl"] is None
    assert settings["tls"]["check_hostname"] is check
    assert settings["tls"]["truststore"] == (keystore / "cert.pem").read_bytes()
    assert b"PRIVATE KEY" in settings["tls"]["private_key"]
