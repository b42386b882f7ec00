"""Apache Kafka 4.1.1's command-line tools, run by their main classes (what bin/kafka-*.sh
runs), against both brokers."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .support import Target, both

Unique = Callable[[str], str]

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
GET_OFFSET_SHELL = "org.apache.kafka.tools.GetOffsetShell"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
DUMP_LOG_SEGMENTS = "kafka.tools.DumpLogSegments"
API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"


def run(
    target: Target, main_class: str, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs the tool against `target` (--bootstrap-server added) and requires exit code 0."""
    result = target.tool(
        main_class, "--bootstrap-server", target.bootstrap_servers, *args, input=input
    )
    assert result.returncode == 0, (
        f"{main_class} {' '.join(args)} exited with {result.returncode}:\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


def create_topic(target: Target, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def produce(target: Target, topic: str, values: list[str], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value=value.encode(), key=value.encode(), partition=partition)
    assert producer.flush(30) == 0


def broker_id(target: Target) -> int:
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    (node,) = admin.list_topics(timeout=30).brokers
    return int(node)


@both()
def test_topic_command(target: Target, unique: Unique) -> None:
    topic = unique("topic-cmd")
    run(target, TOPIC_COMMAND, "--create", "--topic", topic, "--partitions", "3",
        "--replication-factor", "1", "--config", "retention.ms=1000000")  # fmt: skip
    assert topic in run(target, TOPIC_COMMAND, "--list").stdout.split()
    described = run(target, TOPIC_COMMAND, "--describe", "--topic", topic).stdout
    assert "PartitionCount: 3" in described
    assert "ReplicationFactor: 1" in described
    assert "retention.ms=1000000" in described
    leader = broker_id(target)
    for p in range(3):
        assert re.search(
            rf"Partition: {p}\s+Leader: {leader}\s+Replicas: {leader}\s+Isr: {leader}", described
        ), described
    run(target, TOPIC_COMMAND, "--alter", "--topic", topic, "--partitions", "5")
    assert "PartitionCount: 5" in run(target, TOPIC_COMMAND, "--describe", "--topic", topic).stdout
    run(target, TOPIC_COMMAND, "--delete", "--topic", topic)
    assert topic not in run(target, TOPIC_COMMAND, "--list").stdout.split()


@both()
def test_config_command(target: Target, unique: Unique) -> None:
    topic = unique("config-cmd")
    create_topic(target, topic)
    entity = ("--entity-type", "topics", "--entity-name", topic)
    run(target, CONFIG_COMMAND, "--alter", *entity, "--add-config",
        "retention.ms=5000,max.message.bytes=65536")  # fmt: skip
    described = run(target, CONFIG_COMMAND, "--describe", *entity).stdout
    assert "retention.ms=5000" in described
    assert "max.message.bytes=65536" in described
    run(target, CONFIG_COMMAND, "--alter", *entity, "--delete-config", "retention.ms")
    described = run(target, CONFIG_COMMAND, "--describe", *entity).stdout
    assert "retention.ms" not in described
    assert "max.message.bytes=65536" in described
    # A broker's dynamic config: set, described, removed.
    broker = ("--entity-type", "brokers", "--entity-name", str(broker_id(target)))
    run(target, CONFIG_COMMAND, "--alter", *broker, "--add-config", "log.cleaner.threads=2")
    assert "log.cleaner.threads=2" in run(target, CONFIG_COMMAND, "--describe", *broker).stdout
    run(target, CONFIG_COMMAND, "--alter", *broker, "--delete-config", "log.cleaner.threads")
    assert "log.cleaner.threads" not in run(target, CONFIG_COMMAND, "--describe", *broker).stdout


@both()
def test_console_producer_consumer_and_group_command(target: Target, unique: Unique) -> None:
    topic, group = unique("console"), unique("console-group")
    create_topic(target, topic)
    lines = [f"key{i}:value{i}" for i in range(5)]
    run(target, CONSOLE_PRODUCER, "--topic", topic, "--property", "parse.key=true",
        "--property", "key.separator=:", input="\n".join(lines) + "\n")  # fmt: skip
    consumed = run(target, CONSOLE_CONSUMER, "--topic", topic, "--group", group,
                   "--from-beginning", "--max-messages", "5", "--property", "print.key=true",
                   "--property", "key.separator=:", "--timeout-ms", "30000")  # fmt: skip
    assert consumed.stdout.split() == lines
    assert group in run(target, GROUP_COMMAND, "--list").stdout.split()
    described = run(target, GROUP_COMMAND, "--describe", "--group", group).stdout
    assert re.search(rf"{group}\s+{topic}\s+0\s+5\s+5\s+0\s", described), described
    # --reset-offsets: a dry run changes nothing, --execute moves the committed offset.
    reset = ("--reset-offsets", "--group", group, "--topic", topic)
    planned = run(target, GROUP_COMMAND, *reset, "--to-offset", "2", "--dry-run").stdout
    assert re.search(rf"{group}\s+{topic}\s+0\s+2", planned), planned
    run(target, GROUP_COMMAND, *reset, "--to-earliest", "--execute")
    described = run(target, GROUP_COMMAND, "--describe", "--group", group).stdout
    assert re.search(rf"{group}\s+{topic}\s+0\s+0\s+5\s+5\s", described), described
    run(target, GROUP_COMMAND, *reset, "--shift-by", "3", "--execute")
    described = run(target, GROUP_COMMAND, "--describe", "--group", group).stdout
    assert re.search(rf"{group}\s+{topic}\s+0\s+3\s+5\s+2\s", described), described
    state = run(target, GROUP_COMMAND, "--describe", "--group", group, "--state").stdout
    assert re.search(rf"^{group}\s+\S+\s+\(\d+\)\s+-\s+Empty\s+0\s*$", state, re.M), state
    run(target, GROUP_COMMAND, "--delete", "--group", group)
    assert group not in run(target, GROUP_COMMAND, "--list").stdout.split()


@both()
def test_producer_and_consumer_performance(target: Target, unique: Unique) -> None:
    topic = unique("perf")
    create_topic(target, topic, 2)
    sent = target.tool(PRODUCER_PERF, "--topic", topic, "--num-records", "10000",
                       "--record-size", "100", "--throughput", "-1", "--producer-props",
                       f"bootstrap.servers={target.bootstrap_servers}", "acks=all")  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert re.search(r"^10000 records sent", sent.stdout, re.M), sent.stdout
    read = run(target, CONSUMER_PERF, "--topic", topic, "--messages", "10000",
               "--timeout", "30000")  # fmt: skip
    header, row = read.stdout.strip().splitlines()[-2:]
    names, values = header.split(","), row.split(",")
    stats = {k.strip(): v.strip() for k, v in zip(names, values, strict=True)}
    assert stats["data.consumed.in.nMsg"] == "10000", read.stdout
    assert float(stats["data.consumed.in.MB"]) == pytest.approx(10000 * 100 / 1024 / 1024, 0.01)


@both()
def test_acl_command(target: Target, unique: Unique) -> None:
    topic = unique("acl")
    principal = "User:alice"
    run(target, ACL_COMMAND, "--add", "--allow-principal", principal, "--operation", "Read",
        "--operation", "Describe", "--topic", topic)  # fmt: skip
    run(target, ACL_COMMAND, "--add", "--deny-principal", "User:mallory", "--operation", "All",
        "--topic", topic, "--resource-pattern-type", "prefixed")  # fmt: skip
    listed = run(target, ACL_COMMAND, "--list", "--topic", topic).stdout
    assert f"(principal={principal}, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert f"(principal={principal}, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    every = run(target, ACL_COMMAND, "--list", "--principal", "User:mallory").stdout
    assert "operation=ALL, permissionType=DENY" in every
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=PREFIXED)" in every
    run(target, ACL_COMMAND, "--remove", "--force", "--allow-principal", principal,
        "--operation", "Read", "--operation", "Describe", "--topic", topic)  # fmt: skip
    run(target, ACL_COMMAND, "--remove", "--force", "--deny-principal", "User:mallory",
        "--operation", "All", "--topic", topic, "--resource-pattern-type", "prefixed")  # fmt: skip
    assert principal not in run(target, ACL_COMMAND, "--list", "--topic", topic).stdout
    assert "mallory" not in run(target, ACL_COMMAND, "--list").stdout


@both()
def test_transactions_command(target: Target, unique: Unique) -> None:
    topic, txn = unique("txn-cmd"), unique("txn-id")
    create_topic(target, topic)
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "transactional.id": txn})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    assert producer.flush(30) == 0
    try:
        listed = run(target, TRANSACTIONS_COMMAND, "list").stdout
        assert re.search(rf"^{txn}\s+\d+\s+\d+\s+Ongoing\s*$", listed, re.M), listed
        ongoing = run(target, TRANSACTIONS_COMMAND, "describe", "--transactional-id", txn).stdout
        assert re.search(r"\sOngoing\s", ongoing), ongoing
        assert f"{topic}-0" in ongoing
        producers = run(target, TRANSACTIONS_COMMAND, "describe-producers", "--topic", topic,
                        "--partition", "0").stdout  # fmt: skip
        # ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
        # CurrentTransactionStartOffset: the open transaction started at offset 0.
        assert re.search(r"^\d+\s+0\s+\S+\s+0\s+\d+\s+0\s*$", producers, re.M), producers
        hanging = run(target, TRANSACTIONS_COMMAND, "find-hanging", "--broker-id",
                      str(broker_id(target))).stdout  # fmt: skip
        assert topic not in hanging
    finally:
        producer.commit_transaction(30)
    # The coordinator writes the markers after answering EndTxn: PrepareCommit until then.
    deadline = time.monotonic() + 20
    state = ""
    while "CompleteCommit" not in state and time.monotonic() < deadline:
        state = run(target, TRANSACTIONS_COMMAND, "describe", "--transactional-id", txn).stdout
    assert re.search(r"\sCompleteCommit\s", state), state


@both()
def test_leader_election_command(target: Target, unique: Unique) -> None:
    topic = unique("elect")
    create_topic(target, topic, 2)
    result = run(target, LEADER_ELECTION, "--election-type", "preferred", "--topic", topic,
                 "--partition", "0")  # fmt: skip
    assert f"Valid replica already elected for partitions {topic}-0" in result.stdout
    result = run(target, LEADER_ELECTION, "--election-type", "unclean",
                 "--all-topic-partitions")  # fmt: skip
    assert result.returncode == 0


@both()
def test_reassign_partitions_command(target: Target, unique: Unique, tmp_path: Path) -> None:
    topic = unique("reassign")
    create_topic(target, topic, 2)
    broker = broker_id(target)
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    generated = run(target, REASSIGN, "--generate", "--topics-to-move-json-file", str(topics),
                    "--broker-list", str(broker)).stdout  # fmt: skip
    assert f'"topic":"{topic}"' in generated
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": p, "replicas": [broker], "log_dirs": ["any"]}
                    for p in range(2)
                ],
            }
        )
    )
    run(target, REASSIGN, "--execute", "--reassignment-json-file", str(plan))
    verified = run(target, REASSIGN, "--verify", "--reassignment-json-file", str(plan)).stdout
    assert f"Reassignment of partition {topic}-0 is completed" in verified
    assert run(target, REASSIGN, "--list").stdout == "No partition reassignments found.\n"


@both()
def test_log_dirs_command(target: Target, unique: Unique) -> None:
    topic = unique("logdirs")
    create_topic(target, topic)
    produce(target, topic, ["x" * 100] * 10)
    broker = broker_id(target)
    out = run(target, LOG_DIRS, "--describe", "--broker-list", str(broker),
              "--topic-list", topic).stdout  # fmt: skip
    (line,) = [ln for ln in out.splitlines() if ln.startswith("{")]
    described = json.loads(line)
    assert described["version"] == 1
    (entry,) = described["brokers"]
    assert entry["broker"] == broker
    (log_dir,) = entry["logDirs"]
    assert log_dir["error"] is None
    assert [(p["partition"], p["isFuture"]) for p in log_dir["partitions"]] == [
        (f"{topic}-0", False)
    ]
    assert log_dir["partitions"][0]["size"] > 1000


@both()
def test_get_offset_shell_and_delete_records(
    target: Target, unique: Unique, tmp_path: Path
) -> None:
    topic = unique("offsets")
    create_topic(target, topic, 2)
    produce(target, topic, [f"v{i}" for i in range(7)], partition=0)
    produce(target, topic, [f"v{i}" for i in range(3)], partition=1)
    latest = run(target, GET_OFFSET_SHELL, "--topic", topic).stdout.split()
    assert latest == [f"{topic}:0:7", f"{topic}:1:3"]
    earliest = run(target, GET_OFFSET_SHELL, "--topic", topic, "--time", "-2").stdout.split()
    assert earliest == [f"{topic}:0:0", f"{topic}:1:0"]
    offsets = tmp_path / "delete.json"
    offsets.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 4}]})
    )
    deleted = run(target, DELETE_RECORDS, "--offset-json-file", str(offsets)).stdout
    assert f"partition: {topic}-0\tlow_watermark: 4" in deleted
    earliest = run(target, GET_OFFSET_SHELL, "--topic", topic, "--time", "-2").stdout.split()
    assert earliest == [f"{topic}:0:4", f"{topic}:1:0"]
    # --time -5: the offset of the largest timestamp (KIP-734).
    max_ts = run(target, GET_OFFSET_SHELL, "--topic", f"{topic}", "--partitions", "1",
                 "--time", "-3").stdout.split()  # fmt: skip
    assert len(max_ts) == 1 and max_ts[0].startswith(f"{topic}:1:")


@both()
def test_dump_log_segments_reads_the_broker_segment(target: Target, unique: Unique) -> None:
    topic = unique("dump")
    create_topic(target, topic)
    produce(target, topic, [f"payload-{i}" for i in range(5)])
    # A zstd batch and a committed transaction (its control batch) in the same segment.
    compressed = Producer({"bootstrap.servers": target.bootstrap_servers,
                           "compression.type": "zstd"})  # fmt: skip
    for i in range(20):
        compressed.produce(topic, value=f"zstd-{i}".encode() * 10, partition=0)
    assert compressed.flush(30) == 0
    txn = Producer({"bootstrap.servers": target.bootstrap_servers,
                    "transactional.id": unique("dump-txn")})  # fmt: skip
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(3):
        txn.produce(topic, value=f"txn-{i}".encode(), partition=0)
    txn.commit_transaction(30)
    segment = target.log_dir / f"{topic}-0" / "00000000000000000000.log"
    assert segment.exists(), sorted(p.name for p in segment.parent.iterdir())
    deadline = time.monotonic() + 10
    out = ""
    while "endTxnMarker: COMMIT" not in out and time.monotonic() < deadline:
        result = target.tool(DUMP_LOG_SEGMENTS, "--files", str(segment), "--print-data-log",
                             "--deep-iteration")  # fmt: skip
        assert result.returncode == 0, result.stderr
        out = result.stdout
    assert f"Dumping {segment}" in out
    for i in range(5):
        assert f"payload: payload-{i}" in out, out
    for i in range(20):
        assert f"payload: {f'zstd-{i}' * 10}" in out, out
    batches = [ln for ln in out.splitlines() if ln.startswith("baseOffset:")]
    assert all("isvalid: true" in b for b in batches), out
    assert any("compresscodec: zstd" in b for b in batches), out
    (control,) = [b for b in batches if "isControl: true" in b]
    assert "isTransactional: true" in control
    assert "lastOffset: 28 count: 1" in control, control
    assert "endTxnMarker: COMMIT" in out
    index = segment.with_suffix(".index")
    verified = target.tool(DUMP_LOG_SEGMENTS, "--files", str(index), "--verify-index-only")
    assert verified.returncode == 0, verified.stderr
    assert "Mismatches" not in verified.stdout and "not found" not in verified.stdout, verified


@both()
def test_broker_api_versions_command(target: Target) -> None:
    out = run(target, API_VERSIONS).stdout
    assert f"{target.bootstrap_servers} (id:" in out
    for api in ("Produce(0): ", "Fetch(1): ", "ApiVersions(18): ", "DescribeCluster(60): "):
        assert api in out, out


METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
GROUPS_COMMAND = "org.apache.kafka.tools.GroupsCommand"
CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"


@both(kafkars_xfail="kafkars does not serve DescribeQuorum (no KRaft quorum): the tool exits 1")
def test_metadata_quorum_command(target: Target) -> None:
    out = run(target, METADATA_QUORUM, "describe", "--status").stdout
    leader = broker_id(target)
    assert re.search(rf"^LeaderId:\s+{leader}$", out, re.M), out
    assert re.search(rf'^CurrentVoters:\s+\[\{{"id": {leader}, ', out, re.M), out


@both(
    kafkars_xfail="kafkars's ApiVersions carries no features: FeatureCommand describe prints "
    "nothing (Kafka 4.1 lists metadata.version 4.1-IV1, group.version, transaction.version...)"
)
def test_feature_command(target: Target) -> None:
    out = run(target, FEATURE_COMMAND, "describe").stdout
    features = dict(re.findall(r"^Feature: (\S+)\t.*FinalizedVersionLevel: (\S+)\t", out, re.M))
    assert features.get("metadata.version", "").startswith("4."), out
    assert {"group.version", "transaction.version"} <= set(features), out


@both()
def test_config_command_client_quotas(target: Target, unique: Unique) -> None:
    user = unique("quota-user")
    entity = ("--entity-type", "users", "--entity-name", user)
    run(target, CONFIG_COMMAND, "--alter", *entity, "--add-config",
        "producer_byte_rate=1024,consumer_byte_rate=2048")  # fmt: skip
    out = run(target, CONFIG_COMMAND, "--describe", *entity).stdout
    assert out.strip() == (
        f"Quota configs for user-principal '{user}' are "
        "consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
    ) or out.strip() == (
        f"Quota configs for user-principal '{user}' are "
        "producer_byte_rate=1024.0, consumer_byte_rate=2048.0"
    ), out
    run(target, CONFIG_COMMAND, "--alter", *entity, "--delete-config",
        "producer_byte_rate,consumer_byte_rate")  # fmt: skip
    assert "byte_rate" not in run(target, CONFIG_COMMAND, "--describe", *entity).stdout


@both(
    kafkars_xfail="kafkars has no client metrics resources (KIP-714): IncrementalAlterConfigs "
    "answers INVALID_REQUEST 'Unsupported resource type 16' and ListConfigResources is not served"
)
def test_client_metrics_command(target: Target, unique: Unique) -> None:
    name = unique("metrics")
    run(target, CLIENT_METRICS, "--alter", "--name", name, "--metrics",
        "org.apache.kafka.producer.", "--interval", "1000")  # fmt: skip
    out = run(target, CLIENT_METRICS, "--describe", "--name", name).stdout
    assert f"Client metrics configs for {name} are:" in out
    assert "interval.ms=1000" in out
    assert "metrics=org.apache.kafka.producer." in out


@both()
def test_group_commands_on_a_consumer_protocol_group(target: Target, unique: Unique) -> None:
    topic, group = unique("kip848-tool"), unique("kip848-group")
    create_topic(target, topic, 2)
    produce(target, topic, ["a", "b", "c"])
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": "kip848-client",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == 2
        listed = run(target, GROUPS_COMMAND, "--list").stdout
        assert re.search(rf"^{group}\s+Consumer\s+consumer\s*$", listed, re.M), listed
        members = run(target, GROUP_COMMAND, "--describe", "--group", group, "--members").stdout
        assert re.search(rf"^{group}\s+\S+\s+/127\.0\.0\.1\s+kip848-client\s+2\s*$", members, re.M)
        state = run(target, GROUP_COMMAND, "--describe", "--group", group, "--state").stdout
        assert re.search(rf"^{group}\s+\S+\s+\(\d+\)\s+uniform\s+Stable\s+1\s*$", state, re.M)
    finally:
        consumer.close()


@both()
def test_config_command_cluster_wide_broker_default(target: Target) -> None:
    default = ("--entity-type", "brokers", "--entity-default")
    run(target, CONFIG_COMMAND, "--alter", *default, "--add-config", "log.cleaner.backoff.ms=16000")
    out = run(target, CONFIG_COMMAND, "--describe", *default).stdout
    assert (
        "  log.cleaner.backoff.ms=16000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=16000}"
    ) in out.splitlines(), out
    run(target, CONFIG_COMMAND, "--alter", *default, "--delete-config", "log.cleaner.backoff.ms")
    assert (
        "log.cleaner.backoff.ms" not in run(target, CONFIG_COMMAND, "--describe", *default).stdout
    )


@both(
    kafkars_xfail="kafkars has no group config resources (Kafka 4's consumer.session.timeout.ms "
    "and friends per group): IncrementalAlterConfigs and DescribeConfigs answer INVALID_REQUEST "
    "'Unsupported resource type 32'"
)
def test_config_command_group_configs(target: Target, unique: Unique) -> None:
    entity = ("--entity-type", "groups", "--entity-name", unique("config-group"))
    run(target, CONFIG_COMMAND, "--alter", *entity, "--add-config",
        "consumer.session.timeout.ms=50000")  # fmt: skip
    out = run(target, CONFIG_COMMAND, "--describe", *entity).stdout
    assert "  consumer.session.timeout.ms=50000 sensitive=false" in out, out
    run(target, CONFIG_COMMAND, "--alter", *entity, "--delete-config",
        "consumer.session.timeout.ms")  # fmt: skip
    assert (
        "consumer.session.timeout.ms"
        not in run(target, CONFIG_COMMAND, "--describe", *entity).stdout
    )


VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
MESSAGE_COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@both()
def test_verifiable_producer_consumers_and_transactional_copier(
    target: Target, unique: Unique
) -> None:
    """The tools of Kafka's own system tests: VerifiableProducer, VerifiableConsumer (both
    group protocols) and TransactionalMessageCopier with random aborts (read_committed
    output equal to its input partition)."""
    source, copy = unique("verifiable"), unique("copied")
    create_topic(target, source)
    create_topic(target, copy)
    produced = run(target, VERIFIABLE_PRODUCER, "--topic", source, "--max-messages", "1000",
                   "--acks", "-1").stdout  # fmt: skip
    (summary,) = [e for e in events(produced) if e["name"] == "tool_data"]
    assert (summary["sent"], summary["acked"]) == (1000, 1000)
    for protocol in ("classic", "consumer"):
        group = unique(f"verifiable-{protocol}")
        consumed = run(target, VERIFIABLE_CONSUMER, "--topic", source, "--group-id", group,
                       "--max-messages", "1000", "--reset-policy", "earliest",
                       "--group-protocol", protocol).stdout  # fmt: skip
        seen = events(consumed)
        assert sum(e["count"] for e in seen if e["name"] == "records_consumed") == 1000
        commits = [e for e in seen if e["name"] == "offsets_committed"]
        assert commits and all(e["success"] for e in commits), commits
        assert seen[-1]["name"] == "shutdown_complete"
    result = target.tool(MESSAGE_COPIER, "--broker-list", target.bootstrap_servers,
                         "--input-topic", source, "--input-partition", "0",
                         "--output-topic", copy, "--transactional-id", unique("copier"),
                         "--consumer-group", unique("copier-group"), "--transaction-size", "50",
                         "--enable-random-aborts", "--use-group-metadata")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    # {"stage": "ShutdownComplete", "totalProcessed": N, "remaining": 0, ...} last.
    last = events(result.stdout)[-1]
    assert (last["stage"], last["totalProcessed"], last["remaining"]) == (
        "ShutdownComplete",
        1000,
        0,
    ), result.stdout[-2000:]
    read = {"bootstrap.servers": target.bootstrap_servers, "group.id": unique("reader"),
            "isolation.level": "read_committed", "enable.auto.commit": False}  # fmt: skip
    values: dict[str, list[bytes | None]] = {}
    for topic in (source, copy):
        consumer = Consumer(read)
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                if got:
                    break
                continue
            assert message.error() is None, message.error()
            got.append(message.value())
        consumer.close()
        values[topic] = got
    assert len(values[source]) == 1000
    assert values[copy] == values[source]
