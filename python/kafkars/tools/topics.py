"""`kafkars-topics`: Kafka's kafka-topics.sh for kafkars (or any broker).

    kafkars-topics -b 127.0.0.1:9092 --create --topic T --partitions 3 --config retention.ms=1000
    kafkars-topics -b ... --list [--exclude-internal]
    kafkars-topics -b ... --describe [--topic T]
    kafkars-topics -b ... --alter --topic T --partitions 6
    kafkars-topics -b ... --delete --topic T

As in kafka-topics.sh, `--topic` of --list and --describe is a name or a regular
expression; describing a topic that does not exist is an error unless `--if-exists`.
(--alter and --delete take only an exact name: a regular expression is too easy to get
wrong there.)
`--command-config FILE` gives client properties (security settings).
"""

from __future__ import annotations

import re
import sys
from typing import Any

import click

from kafkars.tools import client


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--command-config", help="Client properties file (security settings).")
@click.option("--create", is_flag=True, help="Create a topic.")
@click.option("--list", "list_", is_flag=True, help="List the topics.")
@click.option("--describe", is_flag=True, help="Partitions, leaders and config overrides.")
@click.option("--alter", is_flag=True, help="Add partitions to a topic.")
@click.option("--delete", is_flag=True, help="Delete a topic.")
@click.option("--topic")
@click.option("--partitions", type=int, help="Partition count (--create, --alter).")
@click.option("--replication-factor", type=int, default=-1, help="Default: the broker's.")
@click.option("--config", "configs", multiple=True, help="A topic config key=value (repeatable).")
@click.option("--if-not-exists", is_flag=True, help="--create: no error if it exists.")
@click.option("--if-exists", is_flag=True, help="--alter/--delete: no error if it is missing.")
@click.option("--exclude-internal", is_flag=True, help="--list/--describe: skip __ topics.")
@client.version_option()
def main(
    bootstrap_server: str,
    command_config: str | None,
    create: bool,
    list_: bool,
    describe: bool,
    alter: bool,
    delete: bool,
    topic: str | None,
    partitions: int | None,
    replication_factor: int,
    configs: tuple[str, ...],
    if_not_exists: bool,
    if_exists: bool,
    exclude_internal: bool,
) -> None:
    """Creates, lists, describes, alters and deletes topics."""
    if sum((create, list_, describe, alter, delete)) != 1:
        raise click.UsageError(
            "give exactly one of --create, --list, --describe, --alter, --delete"
        )
    if (create or alter or delete) and not topic:
        raise click.UsageError("--topic is required")
    if alter and partitions is None:
        raise click.UsageError("--alter needs --partitions")
    if create and partitions is not None and partitions < 1:
        raise click.BadParameter("must be at least 1", param_hint="'--partitions'")
    admin = client.admin(bootstrap_server, client.read_properties(command_config))
    if create:
        assert topic is not None
        _create(admin, topic, partitions, replication_factor, configs, if_not_exists)
        return
    if alter:
        assert topic is not None and partitions is not None
        _run(admin.create_partitions, _new_partitions(topic, partitions), topic, if_exists)
        return
    if delete:
        assert topic is not None
        _run(admin.delete_topics, [topic], topic, if_exists, operation_timeout=30)
        return
    names = _names(admin, topic, exclude_internal)
    if topic is not None and not names and describe:
        if if_exists:
            return
        raise click.ClickException(f"Topic '{topic}' does not exist")
    if list_:
        for name in names:
            click.echo(name)
    else:
        _describe(admin, names)


def _names(admin: Any, topic: str | None, exclude_internal: bool) -> list[str]:
    """The topics `--topic` names: itself, or those its regular expression matches."""
    names = sorted(admin.list_topics(timeout=client.DEFAULT_TIMEOUT_S).topics)
    if exclude_internal:
        names = [n for n in names if not n.startswith("__")]
    if topic is None or topic in names:
        return [n for n in names if topic is None or n == topic]
    try:
        pattern = re.compile(topic)
    except re.error:
        return []
    return [n for n in names if pattern.fullmatch(n)]


def _new_partitions(topic: str, count: int) -> list[Any]:
    from confluent_kafka.admin import NewPartitions

    return [NewPartitions(topic, count)]


def _run(call: Any, arg: Any, topic: str, tolerate_missing: bool, **kwargs: Any) -> None:
    """Runs one admin call on one topic and turns its error into the tool's."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        call(arg, **kwargs)[topic].result(30)
    except KafkaException as e:
        err = e.args[0]
        if tolerate_missing and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return
        raise click.ClickException(f"{err.name()}: {err.str()}") from None


def _create(
    admin: Any,
    topic: str,
    partitions: int | None,
    replication_factor: int,
    configs: tuple[str, ...],
    if_not_exists: bool,
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    new = NewTopic(
        topic,
        num_partitions=-1 if partitions is None else partitions,
        replication_factor=replication_factor,
        config=client.parse_properties(configs, "--config"),
    )
    try:
        admin.create_topics([new], operation_timeout=30)[topic].result(30)
    except KafkaException as e:
        err = e.args[0]
        if if_not_exists and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise click.ClickException(f"{err.name()}: {err.str()}") from None
    click.echo(f"Created topic {topic}.")


def _describe(admin: Any, names: list[str]) -> None:
    from confluent_kafka.admin import ConfigResource, ConfigSource

    metadata = admin.list_topics(timeout=client.DEFAULT_TIMEOUT_S).topics
    for name in names:
        meta = metadata[name]
        parts = [meta.partitions[p] for p in sorted(meta.partitions)]
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        described = client.result(admin.describe_configs([resource])[resource])
        overrides = ",".join(
            f"{k}={v.value}"
            for k, v in sorted(described.items())
            if client.config_source(v) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        )
        rf = len(parts[0].replicas) if parts else 0
        click.echo(
            f"Topic: {name}\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}"
            f"\tConfigs: {overrides}"
        )
        for p in parts:
            click.echo(
                f"\tTopic: {name}\tPartition: {p.id}\tLeader: {p.leader}"
                f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isrs))}"
            )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
