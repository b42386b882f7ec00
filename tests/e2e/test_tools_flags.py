"""The tools' Kafka flags against a real broker: the console round trip on a broker with a
group rebalance delay, consumer-groups' views and resets, client quotas, the decoders of
`__consumer_offsets`, and perf-test's `--producer-props k=v k=v`."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkars.broker import Broker
from kafkars.tools import (
    configs,
    console_consumer,
    console_producer,
    consumer_groups,
    dump_log,
    perf_test,
    topics,
)


def run(command: Any, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(command, list(args), input=input, catch_exceptions=False)


def records(result: Result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line]


def commit(broker: Broker, group: str, offsets: dict[tuple[str, int], int]) -> None:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        c.commit(offsets=tps, asynchronous=False)
    finally:
        c.close()


def test_console_round_trip_with_keys_headers_and_the_new_flags(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    # Kafka's production default: a group's first join waits 3 s for more members. Before,
    # `--from-beginning --timeout-ms 5000` printed nothing here: the join ate the timeout.
    broker = make_broker(config={"group.initial.rebalance.delay.ms": 3000})
    b = ["-b", broker.bootstrap_servers]
    assert run(topics.main, *b, "--create", "--topic", topic, "--partitions", "2").exit_code == 0
    lines = "h1:a,h2:b|k1:v1\n|k2:v2\nh3:c|k3:v3\n"
    for partition, text in (("0", lines), ("1", "|k4:v4\n")):
        sent = run(
            console_producer.main, *b, "--topic", topic, "--partition", partition,
            "--property", "parse.key=true", "--property", "key.separator=:",
            "--property", "parse.headers=true", "--property", "headers.delimiter=|",
            "--sync", input=text,
        )  # fmt: skip
        assert sent.exit_code == 0, sent.output

    started = time.monotonic()
    read = run(
        console_consumer.main, *b, "--topic", topic, "--from-beginning", "--timeout-ms", "5000",
        "--property", "print.key=true", "--property", "print.headers=true",
        "--property", "print.partition=true",
    )  # fmt: skip
    assert read.exit_code == 0, read.output
    assert time.monotonic() - started < 12
    assert sorted(records(read)) == sorted(
        [
            "Partition:0\th1:a,h2:b\tk1\tv1",
            "Partition:0\tNO_HEADERS\tk2\tv2",
            "Partition:0\th3:c\tk3\tv3",
            "Partition:1\tNO_HEADERS\tk4\tv4",
        ]
    )
    assert "Processed a total of 4 messages" in read.stderr

    # One partition from an offset, committed records only.
    one = run(
        console_consumer.main, *b, "--topic", topic, "--partition", "0", "--offset", "1",
        "--isolation-level", "read_committed", "--max-messages", "2", "--timeout-ms", "10000",
        "--property", "print.offset=true",
    )  # fmt: skip
    assert records(one) == ["Offset:1\tv2", "Offset:2\tv3"], one.output

    # --include: every topic the expression matches, as whole names.
    other = f"{topic}-other"
    run(topics.main, *b, "--create", "--topic", other, "--partitions", "1")
    run(console_producer.main, *b, "--topic", other, input="v5\n")
    included = run(
        console_consumer.main, *b, "--include", re.escape(topic) + "(-other)?",
        "--from-beginning", "--max-messages", "5", "--timeout-ms", "10000",
    )  # fmt: skip
    assert sorted(records(included)) == ["v1", "v2", "v3", "v4", "v5"], included.output

    # --formatter: Kafka's LoggingMessageFormatter logs each record and prints it.
    logged = run(
        console_consumer.main, *b, "--topic", other, "--from-beginning", "--max-messages", "1",
        "--timeout-ms", "10000", "--formatter", "kafka.tools.LoggingMessageFormatter",
    )  # fmt: skip
    assert records(logged) == ["v5"]
    assert f"Received message: topic {other} partition 0 offset 0" in logged.stderr
    noop = run(console_consumer.main, *b, "--topic", other, "--from-beginning",
               "--max-messages", "1", "--timeout-ms", "10000", "--formatter", "noop")  # fmt: skip
    assert noop.stdout == "" and "Processed a total of 1 messages" in noop.stderr

    # With --group it joins (waiting out the delay) and commits what it read.
    group = f"console-{uuid.uuid4().hex[:8]}"
    joined = run(console_consumer.main, *b, "--topic", topic, "--group", group,
                 "--from-beginning", "--max-messages", "4", "--timeout-ms", "20000")  # fmt: skip
    assert sorted(records(joined)) == ["v1", "v2", "v3", "v4"], joined.output
    described = run(consumer_groups.main, *b, "--describe", "--group", group)
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
    assert [r[1:6] for r in rows] == [[topic, "0", "3", "3", "0"], [topic, "1", "1", "1", "0"]]

    # Missing topics are errors, not silence.
    missing = run(console_consumer.main, *b, "--topic", f"{topic}-missing", "--timeout-ms", "100")
    assert missing.exit_code == 1 and "does not exist" in missing.output
    described = run(topics.main, *b, "--describe", "--topic", f"{topic}-missing")
    assert described.exit_code == 1 and "does not exist" in described.output
    quiet = run(topics.main, *b, "--describe", "--topic", f"{topic}-missing", "--if-exists")
    assert quiet.exit_code == 0 and quiet.output == ""
    for args in (("--describe",), ("--alter", "--add-config", "retention.ms=1")):
        configured = run(configs.main, *b, "--entity-type", "topics",
                         "--entity-name", f"{topic}-missing", *args)  # fmt: skip
        assert configured.exit_code == 1
        assert configured.output == f"Error: Topic '{topic}-missing' does not exist\n"
    pattern = run(topics.main, *b, "--describe", "--topic", re.escape(topic) + ".*")
    assert pattern.stdout.count("PartitionCount") == 2


def test_consumer_groups_views_resets_and_offset_deletion(broker: Broker, topic: str) -> None:
    b = ["-b", broker.bootstrap_servers]
    run(topics.main, *b, "--create", "--topic", topic, "--partitions", "2")
    base = 1_700_000_000_000
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(5):
        p.produce(topic, value=b"x", partition=0, timestamp=base + i * 1000)
        p.produce(topic, value=b"y", partition=1, timestamp=base + i * 1000)
    assert p.flush(10) == 0
    del p
    group = f"g-{uuid.uuid4().hex[:8]}"
    commit(broker, group, {(topic, 0): 2, (topic, 1): 5})
    g = ["--group", group]

    listed = run(consumer_groups.main, *b, "--list", "--state")
    assert [group, "Empty"] in [line.split() for line in listed.stdout.splitlines()]
    stable = run(consumer_groups.main, *b, "--list", "--state", "Stable")
    assert group not in stable.stdout
    state = run(consumer_groups.main, *b, "--describe", *g, "--state")
    assert state.stdout.splitlines()[0].split()[:2] == ["GROUP", "COORDINATOR"]
    assert state.stdout.splitlines()[1].split()[-2:] == ["Empty", "0"]
    members = run(consumer_groups.main, *b, "--describe", *g, "--members", "--verbose")
    assert members.stdout == f"Consumer group '{group}' has no active members.\n"
    every = run(consumer_groups.main, *b, "--describe", "--all-groups")
    assert f"{group}  {topic}" in every.stdout

    def reset(*how: str) -> list[list[str]]:
        out = run(consumer_groups.main, *b, "--reset-offsets", *g, *how)
        assert out.exit_code == 0, out.output
        return [line.split()[2:] for line in out.stdout.splitlines() if line.startswith(group)]

    def committed() -> list[str]:
        out = run(consumer_groups.main, *b, "--describe", *g, "--offsets")
        return [line.split()[3] for line in out.stdout.splitlines() if line.startswith(group)]

    assert reset("--topic", topic, "--to-current") == [["0", "2"], ["1", "5"]]
    assert reset("--topic", f"{topic}:0", "--shift-by", "-1", "--execute") == [["0", "1"]]
    assert committed() == ["1", "5"]
    assert reset("--all-topics", "--shift-by", "10") == [["0", "5"], ["1", "5"]]  # clamped
    at = datetime.fromtimestamp((base + 2500) / 1000, tz=timezone.utc).isoformat()
    assert reset("--topic", topic, "--to-datetime", at, "--execute") == [["0", "3"], ["1", "3"]]
    assert committed() == ["3", "3"]
    assert reset("--topic", topic, "--by-duration", "PT1H") == [["0", "5"], ["1", "5"]]
    assert reset("--topic", topic, "--by-duration", "P36500D") == [["0", "0"], ["1", "0"]]

    deleted = run(consumer_groups.main, *b, "--delete-offsets", *g, "--topic", f"{topic}:1")
    assert deleted.exit_code == 0, deleted.output
    assert [topic, "1", "Successful"] in [line.split() for line in deleted.stdout.splitlines()]
    assert committed() == ["3"]

    missing = run(consumer_groups.main, *b, "--describe", "--group", f"{group}-missing")
    assert missing.exit_code == 1
    assert f"Consumer group '{group}-missing' does not exist." in missing.output
    gone = run(consumer_groups.main, *b, "--delete-offsets", "--group", f"{group}-missing",
               "--topic", topic)  # fmt: skip
    assert gone.exit_code == 1 and "does not exist" in gone.output


def test_configs_client_quotas_broker_defaults_and_sources(
    make_broker: Callable[..., Broker],
) -> None:
    broker = make_broker()
    b = ["-b", broker.bootstrap_servers]
    client = ["--entity-type", "clients", "--entity-name", "app"]
    added = run(configs.main, *b, *client, "--alter",
                "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")  # fmt: skip
    assert added.exit_code == 0, added.output
    assert added.stdout == "Completed updating config for client-id 'app'.\n"
    described = run(configs.main, *b, *client, "--describe")
    assert described.stdout == (
        "Quota configs for client-id 'app' are consumer_byte_rate=2048.0, "
        "producer_byte_rate=1024.0\n"
    )
    run(configs.main, *b, *client, "--alter", "--delete-config", "consumer_byte_rate")
    default = ["--entity-type", "clients", "--entity-default"]
    assert run(configs.main, *b, *default, "--alter",
               "--add-config", "request_percentage=50").exit_code == 0  # fmt: skip
    everyone = run(configs.main, *b, "--entity-type", "clients", "--describe").stdout
    assert everyone.splitlines() == [
        "Quota configs for client-id 'app' are producer_byte_rate=1024.0",
        "Quota configs for the default client-id are request_percentage=50.0",
    ]
    user = ["--entity-type", "users", "--entity-name", "alice"]
    assert run(configs.main, *b, *user, "--alter", "--add-config",
               "consumer_byte_rate=4096").exit_code == 0  # fmt: skip
    assert run(configs.main, *b, *user, "--describe").stdout == (
        "Quota configs for user-principal 'alice' are consumer_byte_rate=4096.0\n"
    )

    # The cluster-wide broker default: a traceback before.
    brokers = ["--entity-type", "brokers", "--entity-default"]
    altered = run(configs.main, *b, *brokers, "--alter", "--add-config", "log.cleaner.threads=2")
    assert altered.exit_code == 0, altered.output
    shown = run(configs.main, *b, *brokers, "--describe")
    assert shown.stdout.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  log.cleaner.threads=2 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}",
    ]

    # --describe --all: every line says where its value comes from, and never `None`.
    node = str(next(iter(_brokers(broker))))
    everything = run(configs.main, *b, "--entity-type", "brokers", "--entity-name", node,
                     "--describe", "--all").stdout.splitlines()  # fmt: skip
    assert len(everything) > 100 and "None" not in "\n".join(everything)
    assert all(re.search(r" synonyms=\{[A-Z_]+:[^=]+=", line) for line in everything[1:])
    assert "  log.cleaner.threads=2 " in "\n".join(everything)


def _brokers(broker: Broker) -> list[int]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    return list(admin.list_topics(timeout=10).brokers)


def test_consumer_offsets_decoded_by_dump_log_and_the_console_consumer(
    broker: Broker, topic: str
) -> None:
    b = ["-b", broker.bootstrap_servers]
    run(topics.main, *b, "--create", "--topic", topic, "--partitions", "1")
    group = f"decoded-{uuid.uuid4().hex[:8]}"
    commit(broker, group, {(topic, 0): 0})

    expected = {
        "key": {"type": 1, "data": {"group": group, "topic": topic, "partition": 0}},
    }
    segments = [
        path
        for path in Path(broker.log_dir).glob("__consumer_offsets-*/*.log")
        if group.encode() in path.read_bytes()
    ]
    assert segments
    dumped = run(dump_log.main, "--files", ",".join(map(str, segments)), "--offsets-decoder")
    assert dumped.exit_code == 0, dumped.output
    ours = [line for line in dumped.stdout.splitlines() if f'"group":"{group}"' in line]
    assert ours, dumped.stdout
    key, payload = re.fullmatch(r"\| offset: .* key: (\{.*\}) payload: (\{.*\})", ours[0]).groups()  # type: ignore[union-attr]
    assert json.loads(key) == expected["key"]
    assert json.loads(payload)["data"]["offset"] == 0

    read = run(
        console_consumer.main, *b, "--topic", "__consumer_offsets", "--from-beginning",
        "--formatter", "offsets", "--timeout-ms", "3000",
    )  # fmt: skip
    mine = [json.loads(line) for line in read.stdout.splitlines() if group in line]
    assert mine and mine[0]["key"] == expected["key"], read.output
    assert mine[0]["value"]["data"]["offset"] == 0


def test_perf_test_takes_several_producer_props_after_one_flag(broker: Broker, topic: str) -> None:
    produced = run(
        perf_test.main, "producer", "--topic", topic, "--num-records", "200",
        "--record-size", "10", "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={broker.bootstrap_servers}", "acks=1",
        "linger.ms=5",
    )  # fmt: skip
    assert produced.exit_code == 0, produced.output
    assert produced.stdout.splitlines()[-1].startswith("200 records sent, ")
    consumed = run(
        perf_test.main, "consumer", "--topic", topic, "--messages", "200",
        "--consumer-props", f"bootstrap.servers={broker.bootstrap_servers}", "client.id=perf",
    )  # fmt: skip
    assert consumed.exit_code == 0, consumed.output
    assert consumed.stdout.splitlines()[-1].split(", ")[4] == "200"


def test_transaction_log_decoded_by_dump_log_and_the_console_consumer(
    broker: Broker, topic: str
) -> None:
    b = ["-b", broker.bootstrap_servers]
    run(topics.main, *b, "--create", "--topic", topic, "--partitions", "1")
    txn_id = f"txn-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"in a transaction")
    p.commit_transaction(30)
    del p

    segments = [
        path
        for path in Path(broker.log_dir).glob("__transaction_state-*/*.log")
        if txn_id.encode() in path.read_bytes()
    ]
    assert segments
    dumped = run(dump_log.main, "--files", ",".join(map(str, segments)),
                 "--transaction-log-decoder", "--skip-record-metadata")  # fmt: skip
    assert dumped.exit_code == 0, dumped.output
    ours = [line for line in dumped.stdout.splitlines() if txn_id in line]
    key, payload = ours[-1].removeprefix("key: ").split(" payload: ")
    assert json.loads(key) == {"type": 0, "data": {"transactionalId": txn_id}}
    states = [json.loads(line.split(" payload: ")[1])["data"] for line in ours]
    assert states[-1]["transactionStatus"] == 4  # CompleteCommit
    assert any(
        s["transactionPartitions"] == [{"topic": topic, "partitionIds": [0]}] for s in states
    )

    read = run(
        console_consumer.main, *b, "--topic", "__transaction_state", "--from-beginning",
        "--formatter", "transaction-log", "--timeout-ms", "3000",
    )  # fmt: skip
    mine = [json.loads(line) for line in read.stdout.splitlines() if txn_id in line]
    assert mine and mine[-1]["key"]["data"]["transactionalId"] == txn_id, read.output
    assert mine[-1]["value"]["data"]["producerId"] >= 0


def test_consumer_groups_with_a_live_member(broker: Broker, topic: str) -> None:
    b = ["-b", broker.bootstrap_servers]
    run(topics.main, *b, "--create", "--topic", topic, "--partitions", "2")
    group = f"live-{uuid.uuid4().hex[:8]}"
    g = ["--group", group]
    member = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "client.id": "tester"}
    )
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert len(member.assignment()) == 2
        member.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)

        members = run(consumer_groups.main, *b, "--describe", *g, "--members", "--verbose")
        header, row = members.stdout.splitlines()
        assert header.split() == [
            "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT",
        ]  # fmt: skip
        assert row.split()[3:] == ["tester", "2", f"{topic}(0,1)"]
        offsets = run(consumer_groups.main, *b, "--describe", *g)
        rows = [line.split() for line in offsets.stdout.splitlines() if line.startswith(group)]
        assert [r[2:6] + r[-1:] for r in rows] == [
            ["0", "0", "0", "0", "tester"],
            ["1", "-", "0", "-", "tester"],
        ]
        state = run(consumer_groups.main, *b, "--describe", *g, "--state")
        assert state.stdout.splitlines()[1].split()[-2:] == ["Stable", "1"]

        # What a live group refuses: each one line and exit code 1.
        reset = run(consumer_groups.main, *b, "--reset-offsets", *g, "--topic", topic,
                    "--to-earliest", "--execute")  # fmt: skip
        assert reset.exit_code == 1
        assert "can only be reset if the group" in reset.stderr and "Stable" in reset.stderr
        kept = run(consumer_groups.main, *b, "--delete-offsets", *g, "--topic", topic)
        assert kept.exit_code == 1 and "GROUP_SUBSCRIBED_TO_TOPIC" in kept.stdout
        busy = run(consumer_groups.main, *b, "--delete", *g)
        assert busy.exit_code == 1 and "NON_EMPTY_GROUP" in busy.stderr
    finally:
        member.close()
