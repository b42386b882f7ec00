"""`kafkars._core.BrokerConnection`, the Python face of the Rust client (`kafkars-client`),
against a real broker: versions negotiated through ApiVersions, requests and responses as
the codec's dicts, SASL logins and their refusals with the broker's error code."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import click
import pytest

from kafkars import _core
from kafkars.broker import Broker
from kafkars.security.client_auth import AuthenticationError
from kafkars.tools.client import WireClient

API_VERSIONS, METADATA, SASL_HANDSHAKE = 18, 3, 17
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret";'
)


def address(broker: Broker, name: str = "PLAINTEXT") -> tuple[str, int]:
    (_, _, host, port) = next(x for x in broker.listeners if x[0] == name)
    return host, int(port)


@pytest.fixture(scope="module")
def plain_broker() -> Iterator[Broker]:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }
    with Broker(config=config) as b:
        yield b


def login(mechanism: str, username: str, password: str) -> dict[str, object]:
    return {
        "tls": None,
        "sasl": {"mechanism": mechanism, "username": username, "password": password},
    }


def test_versions_are_negotiated_per_api(plain_broker: Broker) -> None:
    host, port = address(plain_broker)
    with _core.BrokerConnection(host, port, client_id="test") as conn:
        broker_versions = conn.api_versions()
        codec = {key: (lo, hi) for key, lo, hi in _core.protocol.api_keys().values()}
        for api in (METADATA, API_VERSIONS):
            assert conn.version(api) == min(broker_versions[api][1], codec[api][1])
        metadata = conn.call(METADATA, None, {"topics": None})
        assert [b["port"] for b in metadata["brokers"]] == [port]
        # A version given is sent as it is.
        assert conn.call(METADATA, 1, {"topics": None})["controller_id"] >= 0
    assert conn.closed
    with pytest.raises(ConnectionError, match="closed"):
        conn.call(METADATA, 1, {"topics": None})


def test_a_request_that_cannot_be_encoded_keeps_the_connection(plain_broker: Broker) -> None:
    host, port = address(plain_broker)
    with _core.BrokerConnection(host, port) as conn:
        with pytest.raises(TypeError, match="no field"):
            conn.call(METADATA, 1, {"no_such_field": 1})
        assert conn.call(METADATA, 1, {"topics": None})["brokers"]


def test_sasl_plain_logs_in_and_a_wrong_password_has_the_brokers_code(
    plain_broker: Broker,
) -> None:
    host, port = address(plain_broker, "SASL_PLAINTEXT")
    security = login("PLAIN", "admin", "admin-secret")
    with _core.BrokerConnection(host, port, security=security) as conn:
        assert conn.call(METADATA, None, {"topics": None})["brokers"]
    with pytest.raises(AuthenticationError, match="SASL authentication failed") as refused:
        _core.BrokerConnection(host, port, security=login("PLAIN", "admin", "wrong"))
    assert refused.value.error_code == 58  # SASL_AUTHENTICATION_FAILED
    with pytest.raises(AuthenticationError, match="takes PLAIN") as unknown:
        _core.BrokerConnection(host, port, security=login("SCRAM-SHA-256", "admin", "x"))
    assert unknown.value.error_code == 33  # UNSUPPORTED_SASL_MECHANISM


def test_an_unreachable_broker_is_an_oserror() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionRefusedError):
        _core.BrokerConnection("127.0.0.1", port, timeout_s=2)


def test_a_broker_that_does_not_answer_is_a_timeout() -> None:
    """A listener that takes the connection and never answers: the socket's read timeout
    is TimeoutError (an OSError), and the tools say they timed out, not that the
    connection was lost."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with _core.BrokerConnection("127.0.0.1", port, timeout_s=0.3) as conn:
            with pytest.raises(TimeoutError, match="timed out"):
                conn.call(METADATA, 1, {"topics": None})
            assert conn.closed
        tool = WireClient("127.0.0.1", port, 0.3, {})
        with pytest.raises(click.ClickException, match="timed out waiting for"):
            tool.call(METADATA, 1, {"topics": None})


def test_the_spark_reader_plans_and_fetches_over_sasl(plain_broker: Broker, topic: str) -> None:
    from confluent_kafka import Producer

    from kafkars.security.client_auth import ClientSecurity, SaslLogin
    from kafkars_spark.wire import EARLIEST, LATEST, KafkaClient

    producer = Producer({"bootstrap.servers": plain_broker.bootstrap_servers})
    for i in range(5):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    host, port = address(plain_broker, "SASL_PLAINTEXT")
    security = ClientSecurity("SASL_PLAINTEXT", sasl=SaslLogin("PLAIN", "admin", "admin-secret"))
    with KafkaClient(f"{host}:{port}", security=security) as client:
        assert [p.partition for p in client.metadata([topic])[topic]] == [0]
        assert client.list_offsets({(topic, 0): EARLIEST}) == {(topic, 0): 0}
        assert client.list_offsets({(topic, 0): LATEST}) == {(topic, 0): 5}
        fetched = client.fetch(topic, 0, 0, 5, include_headers=False)
        assert (fetched.error, fetched.high_watermark, fetched.next_offset) == (0, 5, 5)
        assert fetched.capsules is not None
    wrong = ClientSecurity("SASL_PLAINTEXT", sasl=SaslLogin("PLAIN", "admin", "wrong"))
    with (
        KafkaClient(f"{host}:{port}", security=wrong) as client,
        pytest.raises(AuthenticationError),
    ):
        client.metadata([topic])
