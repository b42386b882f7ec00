"""`kafkars-configs`: Kafka's kafka-configs.sh for topics and brokers.

    kafkars-configs -b 127.0.0.1:9092 --entity-type topics --entity-name T --describe [--all]
    kafkars-configs -b ... --entity-type topics --entity-name T --alter \\
        --add-config retention.ms=60000,cleanup.policy=compact --delete-config segment.bytes
    kafkars-configs -b ... --entity-type brokers --entity-default --alter --add-config k=v
    kafkars-configs -b ... --entity-type users --entity-name alice --alter \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    kafkars-configs -b ... --entity-type users --entity-name alice --describe

Alterations go through IncrementalAlterConfigs, as Kafka's tool does.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kafkars.tools import client

_SYNONYM_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--entity-type", type=click.Choice(["topics", "brokers", "users"]), required=True)
@click.option("--entity-name", help="Topic name or broker id.")
@click.option("--entity-default", is_flag=True, help="Brokers: the cluster-wide default.")
@click.option("--describe", is_flag=True, help="Show the entity's configs.")
@click.option("--all", "all_", is_flag=True, help="--describe: every config, not just overrides.")
@click.option("--alter", is_flag=True, help="Change the entity's configs.")
@click.option("--add-config", "add", default="", help="k1=v1,k2=v2 to set.")
@click.option("--delete-config", "remove", default="", help="k1,k2 to reset to their defaults.")
def main(
    bootstrap_server: str,
    entity_type: str,
    entity_name: str | None,
    entity_default: bool,
    describe: bool,
    all_: bool,
    alter: bool,
    add: str,
    remove: str,
) -> None:
    """Describes and alters topic and broker configs."""
    from confluent_kafka.admin import ConfigResource

    if describe == alter:
        raise click.UsageError("give exactly one of --describe, --alter")
    if entity_type == "users":
        if not entity_name:
            raise click.UsageError("--entity-type users needs --entity-name")
        admin = client.admin(bootstrap_server)
        if describe:
            _describe_user(admin, entity_name)
        else:
            _alter_user(admin, entity_name, add, remove)
        return
    if entity_default and entity_type != "brokers":
        raise click.UsageError("--entity-default is for --entity-type brokers")
    if bool(entity_name) == entity_default:
        raise click.UsageError("give exactly one of --entity-name, --entity-default")
    kind = ConfigResource.Type.TOPIC if entity_type == "topics" else ConfigResource.Type.BROKER
    resource = ConfigResource(kind, entity_name or "")
    label = (
        "the default broker"
        if entity_default
        else f"topic {entity_name}"
        if entity_type == "topics"
        else f"broker {entity_name}"
    )
    admin = client.admin(bootstrap_server)
    if describe:
        _describe(admin, resource, label, all_)
    else:
        _alter(admin, resource, label, add, remove)


def _describe(admin: Any, resource: Any, label: str, all_: bool) -> None:
    from confluent_kafka.admin import ConfigSource

    entries = _result(admin.describe_configs([resource])[resource])
    dynamic = {
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
    }
    click.echo(f"{'All' if all_ else 'Dynamic'} configs for {label} are:")
    for name, entry in sorted(entries.items()):
        if not all_ and client.config_source(entry) not in dynamic:
            continue
        value = "null" if entry.is_sensitive else entry.value
        synonyms = ", ".join(
            f"{_SYNONYM_SOURCES.get(client.config_source(s))}:{s.name}={s.value}"
            for s in entry.synonyms.values()
        )
        click.echo(
            f"  {name}={value} sensitive={str(entry.is_sensitive).lower()} synonyms={{{synonyms}}}"
        )


def _alter(admin: Any, resource: Any, label: str, add: str, remove: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    to_set = client.parse_properties(filter(None, add.split(",")), "--add-config")
    to_delete = [k.strip() for k in remove.split(",") if k.strip()]
    if not to_set and not to_delete:
        raise click.UsageError("--alter needs --add-config and/or --delete-config")
    for name, value in to_set.items():
        resource.add_incremental_config(
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        )
    for name in to_delete:
        resource.add_incremental_config(
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
        )
    _result(admin.incremental_alter_configs([resource])[resource])
    click.echo(f"Completed updating config for {label}.")


def _split_top_level(text: str) -> list[str]:
    """`a=[x=1,y=2],b=3` -> [`a=[x=1,y=2]`, `b=3`]: commas inside brackets do not split."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current:
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _scram_mechanism(name: str) -> Any:
    from confluent_kafka.admin import ScramMechanism

    try:
        return ScramMechanism[name.replace("-", "_")]
    except KeyError:
        raise click.UsageError(f"unknown SCRAM mechanism {name}") from None


def _alter_user(admin: Any, user: str, add: str, remove: str) -> None:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    changes: list[Any] = []
    for item in _split_top_level(add):
        name, _, value = item.partition("=")
        if not (value.startswith("[") and value.endswith("]")):
            raise click.UsageError(f"--add-config expects {name}=[password=...], got {item!r}")
        options = client.parse_properties(value[1:-1].split(","), "--add-config")
        if "password" not in options:
            raise click.UsageError(f"--add-config {name}: password= is required")
        info = ScramCredentialInfo(_scram_mechanism(name), int(options.get("iterations", 4096)))
        changes.append(UserScramCredentialUpsertion(user, info, options["password"].encode()))
    for name in filter(None, (n.strip() for n in remove.split(","))):
        changes.append(UserScramCredentialDeletion(user, _scram_mechanism(name)))
    if not changes:
        raise click.UsageError("--alter needs --add-config and/or --delete-config")
    _result(admin.alter_user_scram_credentials(changes)[user])
    click.echo(f"Completed updating config for user {user}.")


def _describe_user(admin: Any, user: str) -> None:
    description = _result(admin.describe_user_scram_credentials([user])[user])
    infos = ",".join(
        f"{i.mechanism.name.replace('_', '-')}=iterations={i.iterations}"
        for i in description.scram_credential_infos
    )
    click.echo(f"SCRAM credential configs for user-principal '{user}' are {infos}")


def _result(future: Any) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(30)
    except KafkaException as e:
        err = e.args[0]
        raise click.ClickException(f"{err.name()}: {err.str()}") from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
