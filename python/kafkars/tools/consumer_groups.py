"""`kafkars-consumer-groups`: Kafka's kafka-consumer-groups.sh for kafkars (or any broker).

    kafkars-consumer-groups -b 127.0.0.1:9092 --list
    kafkars-consumer-groups -b ... --describe --group G
    kafkars-consumer-groups -b ... --delete --group G
    kafkars-consumer-groups -b ... --reset-offsets --group G --topic T --to-earliest --execute

It speaks the wire protocol through confluent-kafka (see `kafkars.tools.client`), so it
sees what every client sees.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kafkars.tools import client


def _committed(admin: Any, group: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {(tp.topic, tp.partition): tp.offset for tp in future.result(10).topic_partitions}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--list", "list_", is_flag=True, help="List every group.")
@click.option("--describe", is_flag=True, help="Members, assignment, offsets and lag.")
@click.option("--delete", is_flag=True, help="Delete an empty group and its offsets.")
@click.option("--reset-offsets", is_flag=True, help="Set a group's committed offsets.")
@click.option("--group", "group_id")
@click.option("--topic")
@click.option("--to-earliest", is_flag=True)
@click.option("--to-latest", is_flag=True)
@click.option("--to-offset", type=int)
@click.option("--execute", is_flag=True, help="Apply the reset (else only show it).")
def main(
    bootstrap_server: str,
    list_: bool,
    describe: bool,
    delete: bool,
    reset_offsets: bool,
    group_id: str | None,
    topic: str | None,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    execute: bool,
) -> None:
    """Lists, describes, deletes consumer groups and resets their offsets."""
    if sum((list_, describe, delete, reset_offsets)) != 1:
        raise click.UsageError("give exactly one of --list, --describe, --delete, --reset-offsets")
    if not list_ and not group_id:
        raise click.UsageError("--group is required")
    admin = client.admin(bootstrap_server)
    if list_:
        result = admin.list_consumer_groups().result(10)
        for g in sorted(result.valid, key=lambda g: g.group_id):
            click.echo(g.group_id)
    elif describe:
        assert group_id is not None
        _describe(admin, bootstrap_server, group_id)
    elif delete:
        try:
            admin.delete_consumer_groups([group_id])[group_id].result(10)
        except Exception as e:
            raise click.ClickException(f"Deleting group {group_id} failed: {e}") from None
        click.echo(f"Deletion of requested consumer groups ('{group_id}') was successful.")
    else:
        assert group_id is not None
        if topic is None or sum((to_earliest, to_latest, to_offset is not None)) != 1:
            raise click.UsageError(
                "--reset-offsets needs --topic and one of --to-earliest/--to-latest/--to-offset"
            )
        _reset(admin, bootstrap_server, group_id, topic, to_earliest, to_latest, to_offset, execute)


def _describe(admin: Any, bootstrap: str, group_id: str) -> None:
    from confluent_kafka import TopicPartition

    described = admin.describe_consumer_groups([group_id])[group_id].result(10)
    owner: dict[tuple[str, int], Any] = {}
    for m in described.members:
        for tp in m.assignment.topic_partitions:
            owner[(tp.topic, tp.partition)] = m
    committed = _committed(admin, group_id)
    consumer = client.consumer(bootstrap, group_id)
    try:
        state = getattr(described.state, "name", described.state)
        click.echo(f"Group {group_id} is {state} with {len(described.members)} member(s)\n")
        header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG")
        rows = [(*header, "CONSUMER-ID", "HOST", "CLIENT-ID")]
        for t, p in sorted(set(committed) | set(owner)):
            _, high = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)
            offset = committed.get((t, p), -1)
            lag = str(high - offset) if offset >= 0 else "-"
            m = owner.get((t, p))
            rows.append(
                (
                    group_id,
                    t,
                    str(p),
                    str(offset) if offset >= 0 else "-",
                    str(high),
                    lag,
                    m.member_id if m else "-",
                    m.host if m else "-",
                    m.client_id if m else "-",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    finally:
        consumer.close()


def _reset(
    admin: Any,
    bootstrap: str,
    group_id: str,
    topic: str,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    execute: bool,
) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    consumer = client.consumer(bootstrap, group_id)
    targets = []
    try:
        for p in client.topic_partitions(admin, topic):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            offset = low if to_earliest else high if to_latest else to_offset
            assert offset is not None
            targets.append(TopicPartition(topic, p, max(low, min(offset, high))))
    finally:
        consumer.close()
    click.echo(f"{'GROUP':<20} {'TOPIC':<20} {'PARTITION':<10} NEW-OFFSET")
    for tp in targets:
        click.echo(f"{group_id:<20} {topic:<20} {tp.partition:<10} {tp.offset}")
    if not execute:
        click.echo("(dry run: add --execute to apply)", err=True)
        return
    request = [ConsumerGroupTopicPartitions(group_id, targets)]
    try:
        admin.alter_consumer_group_offsets(request)[group_id].result(10)
    except Exception as e:
        raise click.ClickException(f"Resetting offsets failed (is the group empty?): {e}") from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
