"""`kafkars-leader-election`: Kafka's kafka-leader-election.sh.

    kafkars-leader-election -b HOST:PORT --election-type PREFERRED --all-topic-partitions
    kafkars-leader-election -b ... --election-type UNCLEAN --topic T --partition 0
    kafkars-leader-election -b ... --election-type PREFERRED --path-to-json-file parts.json

The JSON file is Kafka's: `{"partitions": [{"topic": "T", "partition": 0}, ...]}`.
Prints Kafka's lines: which partitions got a new leader, which needed no election, and
why the others failed.
"""

from __future__ import annotations

import json
from typing import Any

import click

from kafkars.tools import client


def _partitions_from_json(path: str) -> list[tuple[str, int]]:
    try:
        with open(path) as f:
            data = json.load(f)
        return [(str(p["topic"]), int(p["partition"])) for p in data["partitions"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise click.ClickException(f"cannot read partitions from {path}: {e}") from None


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--admin.config", "admin_config", help="Client properties file.")
@click.option(
    "--election-type",
    type=click.Choice(["PREFERRED", "UNCLEAN"], case_sensitive=False),
    required=True,
    help="PREFERRED: back to the first assigned replica; UNCLEAN: any live replica.",
)
@click.option("--topic", help="The topic (with --partition).")
@click.option("--partition", type=int, help="The partition of --topic.")
@click.option("--all-topic-partitions", is_flag=True, help="Every partition of the cluster.")
@click.option("--path-to-json-file", help="Kafka's JSON list of partitions.")
@client.version_option()
def main(
    bootstrap_server: str,
    admin_config: str | None,
    election_type: str,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    path_to_json_file: str | None,
) -> None:
    """Elects partition leaders (ElectLeaders, sent to the controller)."""
    from confluent_kafka import ElectionType, TopicPartition

    given = sum((topic is not None, all_topic_partitions, path_to_json_file is not None))
    if given != 1:
        raise click.UsageError(
            "give exactly one of --topic/--partition, --all-topic-partitions, --path-to-json-file"
        )
    if topic is not None and partition is None:
        raise click.UsageError("--topic needs --partition")
    admin = client.admin(bootstrap_server, client.read_properties(admin_config, "--admin.config"))
    wanted: list[Any] | None
    if all_topic_partitions:
        wanted = None
    elif path_to_json_file is not None:
        wanted = [TopicPartition(t, p) for t, p in _partitions_from_json(path_to_json_file)]
    else:
        assert topic is not None and partition is not None
        wanted = [TopicPartition(topic, partition)]
    kind = ElectionType.PREFERRED if election_type.upper() == "PREFERRED" else ElectionType.UNCLEAN
    results = client.result(admin.elect_leaders(kind, wanted))
    elected, not_needed, failed = [], [], []
    for tp, err in sorted(results.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
        name = f"{tp.topic}-{tp.partition}"
        if err is None:
            elected.append(name)
        elif err.name() == "ELECTION_NOT_NEEDED":
            not_needed.append(name)
        else:
            failed.append(f"{name}: {err.str()}")
    if elected:
        click.echo(
            f"Successfully completed leader election ({election_type.upper()}) for "
            f"partitions {', '.join(elected)}"
        )
    if not_needed:
        click.echo(f"Valid replica already elected for partitions {', '.join(not_needed)}")
    if failed:
        click.echo(
            f"Error completing leader election ({election_type.upper()}) for "
            f"partitions: {'; '.join(failed)}"
        )
        raise SystemExit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
