"""`kafkars-log-dirs`: Kafka's kafka-log-dirs.sh, and the AlterReplicaLogDirs call that
moves replicas between the log dirs of a broker (for kafka-reassign-partitions' `log_dirs`).

    kafkars-log-dirs --bootstrap-server HOST:PORT --describe [--topic-list T] [--broker-list 0]

Prints Kafka's lines: the query, the brokers that answered, then one JSON document
`{"brokers": [{"broker": id, "logDirs": [{"logDir", "error", "partitions": [...]}]}],
"version": 1}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

from kafkars.protocol import ApiKey, Errors
from kafkars.tools import client

DESCRIBE_LOG_DIRS_VERSION = 1
ALTER_REPLICA_LOG_DIRS_VERSION = 1


def describe_log_dirs(
    bootstrap: str,
    topics: Mapping[str, list[int]] | None = None,
    config: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """DescribeLogDirs to the broker at `bootstrap`: its `results` (every log dir with
    its partitions; `topics` limits them)."""
    wire = client.WireClient.connect(bootstrap, config or {})
    try:
        body = {
            "topics": None
            if topics is None
            else [{"topic": t, "partitions": ps} for t, ps in topics.items()]
        }
        response = wire.call(int(ApiKey.DESCRIBE_LOG_DIRS), DESCRIBE_LOG_DIRS_VERSION, body)
    finally:
        wire.close()
    return list(response["results"])


def alter_replica_log_dirs(
    bootstrap: str,
    moves: Mapping[tuple[str, int], str],
    config: dict[str, str] | None = None,
) -> dict[tuple[str, int], int]:
    """AlterReplicaLogDirs to the broker at `bootstrap`: moves each (topic, partition)
    replica of that broker to the given log dir of it. Returns each one's error code
    (0 when the move started; the move itself runs in the broker's background)."""
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, partition), path in moves.items():
        by_dir.setdefault(path, {}).setdefault(topic, []).append(partition)
    body = {
        "dirs": [
            {"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            for path, topics in by_dir.items()
        ]
    }
    wire = client.WireClient.connect(bootstrap, config or {})
    try:
        response = wire.call(
            int(ApiKey.ALTER_REPLICA_LOG_DIRS), ALTER_REPLICA_LOG_DIRS_VERSION, body
        )
    finally:
        wire.close()
    return {
        (t["topic_name"], p["partition_index"]): p["error_code"]
        for t in response["results"]
        for p in t["partitions"]
    }


def _broker_entry(broker_id: int, results: list[dict[str, Any]]) -> dict[str, Any]:
    log_dirs = []
    for r in results:
        error = None if r["error_code"] == 0 else Errors(r["error_code"]).name
        partitions = [
            {
                "partition": f"{t['name']}-{p['partition_index']}",
                "size": p["partition_size"],
                "offsetLag": p["offset_lag"],
                "isFuture": p["is_future_key"],
            }
            for t in r["topics"]
            for p in t["partitions"]
        ]
        log_dirs.append({"partitions": partitions, "error": error, "logDir": r["log_dir"]})
    return {"broker": broker_id, "logDirs": log_dirs}


@click.command(cls=client.Tool)
@click.option("--bootstrap-server", required=True, help="A broker to bootstrap from.")
@click.option("--command-config", help="Client properties file.")
@click.option("--describe", is_flag=True, help="Describe the log dirs of the brokers.")
@click.option("--topic-list", default="", help="Comma-separated topics (default: all).")
@click.option("--broker-list", default="", help="Comma-separated broker ids (default: all).")
@client.version_option()
def main(
    bootstrap_server: str,
    command_config: str | None,
    describe: bool,
    topic_list: str,
    broker_list: str,
) -> None:
    """Describes the log dirs of brokers (DescribeLogDirs)."""
    if not describe:
        raise click.UsageError("--describe is required")
    try:
        wanted = [int(b) for b in broker_list.split(",") if b.strip()]
    except ValueError:
        raise click.UsageError(f"--broker-list must be broker ids, got {broker_list!r}") from None
    config = client.read_properties(command_config)
    topic_names = [t.strip() for t in topic_list.split(",") if t.strip()]
    admin = client.admin(bootstrap_server, config)
    metadata = admin.list_topics(timeout=client.DEFAULT_TIMEOUT_S)
    brokers = {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}
    missing = [b for b in wanted if b not in brokers]
    if missing:
        raise click.ClickException(
            f"the given brokers do not exist from --broker-list: {','.join(map(str, missing))}. "
            f"Current existent brokers: {','.join(map(str, sorted(brokers)))}"
        )
    ids = wanted or sorted(brokers)
    topics = None
    if topic_names:
        topics = {t: sorted(m.partitions) for t, m in metadata.topics.items() if t in topic_names}
    click.echo("Querying brokers for log directories information")
    entries = [_broker_entry(i, describe_log_dirs(brokers[i], topics, config)) for i in ids]
    click.echo(f"Received log directory information from brokers {','.join(map(str, ids))}")
    click.echo(json.dumps({"brokers": entries, "version": 1}, separators=(",", ":")))
