"""The Kafka-style command-line tools against a real broker process."""

from __future__ import annotations

import re
import subprocess
import sys

from click.testing import CliRunner

from kafkars.broker import Broker
from kafkars.tools import configs, console_consumer, console_producer, perf_test, topics


def broker_id(broker: Broker) -> int:
    from confluent_kafka.admin import AdminClient

    brokers = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    return next(iter(brokers.brokers))


def run(command, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(command, list(args), input=input, catch_exceptions=False)


def test_topics_create_list_describe_alter_delete(broker: Broker, topic: str) -> None:
    b = ["-b", broker.bootstrap_servers]
    created = run(topics.main, *b, "--create", "--topic", topic, "--partitions", "3",
                  "--config", "retention.ms=86400000")  # fmt: skip
    assert created.exit_code == 0, created.output
    assert created.output == f"Created topic {topic}.\n"
    again = run(topics.main, *b, "--create", "--topic", topic, "--partitions", "3")
    assert again.exit_code != 0 and "TOPIC_ALREADY_EXISTS" in again.output
    quiet = run(topics.main, *b, "--create", "--topic", topic, "--if-not-exists")
    assert quiet.exit_code == 0 and quiet.output == ""
    assert topic in run(topics.main, *b, "--list").output.splitlines()

    described = run(topics.main, *b, "--describe", "--topic", topic).output.splitlines()
    assert described[0] == (
        f"Topic: {topic}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=86400000"
    )
    node = broker_id(broker)
    assert described[1:] == [
        f"\tTopic: {topic}\tPartition: {p}\tLeader: {node}\tReplicas: {node}\tIsr: {node}"
        for p in range(3)
    ]

    assert run(topics.main, *b, "--alter", "--topic", topic, "--partitions", "5").exit_code == 0
    described = run(topics.main, *b, "--describe", "--topic", topic).output
    assert "PartitionCount: 5" in described
    shrink = run(topics.main, *b, "--alter", "--topic", topic, "--partitions", "2")
    assert shrink.exit_code != 0 and "INVALID_PARTITIONS" in shrink.output

    assert run(topics.main, *b, "--delete", "--topic", topic).exit_code == 0
    assert topic not in run(topics.main, *b, "--list").output.splitlines()
    missing = run(topics.main, *b, "--delete", "--topic", topic)
    assert missing.exit_code != 0 and "UNKNOWN_TOPIC" in missing.output
    assert run(topics.main, *b, "--delete", "--topic", topic, "--if-exists").exit_code == 0


def test_console_producer_then_consumer(broker: Broker, topic: str) -> None:
    b = ["-b", broker.bootstrap_servers]
    run(topics.main, *b, "--create", "--topic", topic, "--partitions", "1")
    sent = run(
        console_producer.main, *b, "--topic", topic,
        "--property", "parse.key=true", "--property", "key.separator=:",
        "--property", "parse.headers=true", "--property", "headers.delimiter=|",
        input="h1:a,h1:b|k1:v1\n|k2:v2\nh2:c|k3:with:colons\n",
    )  # fmt: skip
    assert sent.exit_code == 0, sent.output
    bad = run(console_producer.main, *b, "--topic", topic, "--property", "parse.key=true",
              input="no separator here\n")  # fmt: skip
    assert bad.exit_code != 0 and "No key separator" in bad.output

    read = run(
        console_consumer.main, *b, "--topic", topic, "--from-beginning",
        "--max-messages", "3", "--timeout-ms", "20000",
        "--property", "print.key=true", "--property", "print.offset=true",
        "--property", "print.partition=true", "--property", "print.headers=true",
    )  # fmt: skip
    assert read.exit_code == 0, read.output
    lines = [line for line in read.output.splitlines() if not line.startswith("Processed")]
    assert lines == [
        "Partition:0\tOffset:0\th1:a,h1:b\tk1\tv1",
        "Partition:0\tOffset:1\tNO_HEADERS\tk2\tv2",
        "Partition:0\tOffset:2\th2:c\tk3\twith:colons",
    ]

    # One partition from an offset, values only, and a timestamp on each line.
    tail = run(console_consumer.main, *b, "--topic", topic, "--partition", "0", "--offset", "1",
               "--max-messages", "2", "--timeout-ms", "20000",
               "--property", "print.timestamp=true")  # fmt: skip
    values = [line for line in tail.output.splitlines() if not line.startswith("Processed")]
    assert [re.sub(r"^CreateTime:\d+\t", "", v) for v in values] == ["v2", "with:colons"]
    assert all(re.match(r"CreateTime:\d{13}\t", v) for v in values)


def test_configs_describe_and_alter(broker: Broker, topic: str) -> None:
    b = ["-b", broker.bootstrap_servers]
    run(topics.main, *b, "--create", "--topic", topic, "--partitions", "1")
    entity = ["--entity-type", "topics", "--entity-name", topic]
    altered = run(configs.main, *b, *entity, "--alter",
                  "--add-config", "retention.ms=60000,cleanup.policy=compact")  # fmt: skip
    assert altered.exit_code == 0, altered.output
    assert altered.output == f"Completed updating config for topic {topic}.\n"
    dynamic = run(configs.main, *b, *entity, "--describe").output.splitlines()
    assert dynamic[0] == f"Dynamic configs for topic {topic} are:"
    assert [line.split()[0] for line in dynamic[1:]] == [
        "cleanup.policy=compact",
        "retention.ms=60000",
    ]
    assert "DYNAMIC_TOPIC_CONFIG:retention.ms=60000" in dynamic[2]

    run(configs.main, *b, *entity, "--alter", "--delete-config", "retention.ms")
    everything = run(configs.main, *b, *entity, "--describe", "--all").output.splitlines()
    assert everything[0] == f"All configs for topic {topic} are:"
    assert any(line.split()[0] == "retention.ms=604800000" for line in everything)
    bad = run(configs.main, *b, *entity, "--alter", "--add-config", "retention.ms=soon")
    assert bad.exit_code != 0 and "INVALID_CONFIG" in bad.output

    node = str(broker_id(broker))
    brokers = run(configs.main, *b, "--entity-type", "brokers", "--entity-name", node,
                  "--describe", "--all").output  # fmt: skip
    assert "  num.partitions=4 " in brokers


def test_perf_test_producer_and_consumer(broker: Broker, topic: str) -> None:
    b = ["-b", broker.bootstrap_servers]
    produced = run(perf_test.main, "producer", *b, "--topic", topic, "--num-records", "5000",
                   "--record-size", "100", "--producer-props", "linger.ms=5")  # fmt: skip
    assert produced.exit_code == 0, produced.output
    assert re.fullmatch(
        r"5000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
        r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.",
        produced.output.splitlines()[-1],
    )
    consumed = run(perf_test.main, "consumer", *b, "--topic", topic, "--messages", "5000")
    assert consumed.exit_code == 0, consumed.output
    header, row = consumed.output.splitlines()[-2:]
    assert header.startswith("start.time, end.time, data.consumed.in.MB")
    fields = row.split(", ")
    assert fields[4] == "5000" and abs(float(fields[2]) - 5000 * 100 / 1024 / 1024) < 1e-3


def test_tools_run_as_commands(broker: Broker, topic: str) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "kafkars.tools.topics", "-b", broker.bootstrap_servers, "--list"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
