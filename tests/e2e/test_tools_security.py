"""The tools on a SASL listener, with the properties file a Kafka user already has
(`--command-config`, Java's `sasl.jaas.config`) or librdkafka's keys: through
confluent-kafka and through the tools' own wire client (quotas, broker defaults)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner, Result

from kafkars.broker import Broker
from kafkars.tools import configs, consumer_groups, topics

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret";'
)


def run(command: object, *args: str) -> Result:
    return CliRunner().invoke(command, list(args), catch_exceptions=False)  # type: ignore[arg-type]


def listener(broker: Broker, name: str) -> str:
    (_, _, host, port) = next(x for x in broker.listeners if x[0] == name)
    return f"{host}:{port}"


def properties(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_tools_authenticate_with_plain_and_scram(
    make_broker: Callable[..., Broker], tmp_path: Path, topic: str
) -> None:
    broker = make_broker(
        config={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        }
    )
    b = ["-b", listener(broker, "SASL_PLAINTEXT")]
    # What kafka-configs.sh users write: Java's JAAS line, which librdkafka does not take.
    java = properties(
        tmp_path / "admin.properties",
        [
            "security.protocol=SASL_PLAINTEXT",
            "sasl.mechanism=PLAIN",
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="admin" password="admin-secret";',
        ],
    )
    admin = ["--command-config", java]
    created = run(topics.main, *b, *admin, "--create", "--topic", topic, "--partitions", "1")
    assert created.exit_code == 0, created.output
    quota = ["--entity-type", "clients", "--entity-name", "app"]
    added = run(
        configs.main, *b, *admin, *quota, "--alter", "--add-config", "producer_byte_rate=1e6"
    )
    assert added.exit_code == 0, added.output
    scram = "SCRAM-SHA-512=[iterations=4096,password=carol-pw]"
    user = ["--entity-type", "users", "--entity-name", "carol"]
    assert run(configs.main, *b, *admin, *user, "--alter", "--add-config", scram).exit_code == 0

    # librdkafka's keys and SCRAM: the wire client's own SCRAM exchange, then confluent-kafka.
    carol = properties(
        tmp_path / "carol.properties",
        [
            "security.protocol=SASL_PLAINTEXT",
            "sasl.mechanism=SCRAM-SHA-512",
            "sasl.username=carol",
            "sasl.password=carol-pw",
        ],
    )
    described = run(configs.main, *b, "--command-config", carol, *quota, "--describe")
    assert described.exit_code == 0, described.output
    assert (
        described.stdout == "Quota configs for client-id 'app' are producer_byte_rate=1000000.0\n"
    )
    defaults = run(configs.main, *b, "--command-config", carol, "--entity-type", "brokers",
                   "--entity-default", "--describe")  # fmt: skip
    assert defaults.exit_code == 0, defaults.output
    listed = run(consumer_groups.main, *b, "--command-config", carol, "--list")
    assert listed.exit_code == 0, listed.output

    wrong = properties(
        tmp_path / "wrong.properties",
        [
            "security.protocol=SASL_PLAINTEXT",
            "sasl.mechanism=SCRAM-SHA-512",
            "sasl.username=carol",
            "sasl.password=not-it",
        ],
    )
    refused = run(configs.main, *b, "--command-config", wrong, *quota, "--describe")
    assert refused.exit_code == 1
    assert refused.output.startswith("Error: SASL authentication failed")
    assert len(refused.output.splitlines()) == 1
