"""`kafkars-configs`: Kafka's kafka-configs.sh for topics, brokers, users and clients.

    kafkars-configs -b 127.0.0.1:9092 --entity-type topics --entity-name T --describe [--all]
    kafkars-configs -b ... --entity-type topics --entity-name T --alter \\
        --add-config retention.ms=60000,cleanup.policy=compact --delete-config segment.bytes
    kafkars-configs -b ... --entity-type brokers --entity-default --alter --add-config k=v
    kafkars-configs -b ... --entity-type users --entity-name alice --alter \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    kafkars-configs -b ... --entity-type users --entity-name alice --describe
    kafkars-configs -b ... --entity-type clients --entity-name app --alter \\
        --add-config 'producer_byte_rate=1024,consumer_byte_rate=2048'
    kafkars-configs -b ... --entity-type clients --entity-default --describe

Topic and broker alterations go through IncrementalAlterConfigs, as Kafka's tool does;
quotas of users and clients through AlterClientQuotas; SCRAM credentials through
AlterUserScramCredentials. `--command-config FILE` gives client properties.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kafkars.tools import client

_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}
QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
)
_DESCRIBE_CONFIGS, _INCREMENTAL_ALTER_CONFIGS, _DESCRIBE_QUOTAS, _ALTER_QUOTAS = 32, 44, 48, 49
_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_ANY = 0, 1, 2


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--command-config", help="Client properties file (security settings).")
@click.option(
    "--entity-type",
    type=click.Choice(["topics", "brokers", "users", "clients"]),
    required=True,
)
@click.option("--entity-name", help="Topic name, broker id, user or client id.")
@click.option("--entity-default", is_flag=True, help="Brokers, users, clients: the default entity.")
@click.option("--describe", is_flag=True, help="Show the entity's configs.")
@click.option("--all", "all_", is_flag=True, help="--describe: every config, not just overrides.")
@click.option("--alter", is_flag=True, help="Change the entity's configs.")
@click.option("--add-config", "add", default="", help="k1=v1,k2=v2 to set.")
@click.option("--delete-config", "remove", default="", help="k1,k2 to reset to their defaults.")
@client.version_option()
def main(
    bootstrap_server: str,
    command_config: str | None,
    entity_type: str,
    entity_name: str | None,
    entity_default: bool,
    describe: bool,
    all_: bool,
    alter: bool,
    add: str,
    remove: str,
) -> None:
    """Describes and alters the configs of topics and brokers, the quotas of users and
    clients, and users' SCRAM credentials."""
    if describe == alter:
        raise click.UsageError("give exactly one of --describe, --alter")
    if entity_name and entity_default:
        raise click.UsageError("give only one of --entity-name, --entity-default")
    if entity_default and entity_type == "topics":
        raise click.UsageError("--entity-default is for brokers, users and clients")
    if alter and not (entity_name or entity_default):
        raise click.UsageError("--alter needs --entity-name or --entity-default")
    if entity_type == "topics" and not entity_name:
        raise click.UsageError("--entity-type topics needs --entity-name")
    if all_ and entity_type in ("users", "clients"):
        raise click.UsageError("--all is for topics and brokers")
    properties = client.read_properties(command_config)
    if entity_type in ("users", "clients"):
        _principals(
            bootstrap_server,
            properties,
            entity_type,
            entity_name,
            entity_default,
            describe,
            add,
            remove,
        )
        return
    if entity_type == "brokers" and not (entity_name or entity_default):
        raise click.UsageError("--entity-type brokers needs --entity-name or --entity-default")
    if entity_name and entity_type == "brokers" and not entity_name.isdigit():
        raise click.BadParameter(
            f"a broker id is a number, not {entity_name!r}", param_hint="'--entity-name'"
        )
    from confluent_kafka.admin import ConfigResource

    kind = ConfigResource.Type.TOPIC if entity_type == "topics" else ConfigResource.Type.BROKER
    label = (
        "the default broker"
        if entity_default
        else f"topic {entity_name}"
        if entity_type == "topics"
        else f"broker {entity_name}"
    )
    if entity_default:
        wire = client.WireClient.connect(bootstrap_server, properties)
        try:
            if describe:
                _describe_broker_default(wire, all_)
            else:
                _alter_broker_default(wire, add, remove)
        finally:
            wire.close()
        return
    assert entity_name is not None
    admin = client.admin(bootstrap_server, properties)
    resource = ConfigResource(kind, entity_name)
    try:
        if describe:
            _describe(admin, resource, label, all_)
        else:
            _alter(admin, resource, label, add, remove)
    except click.ClickException as e:
        if entity_type == "topics" and e.message.startswith("UNKNOWN_TOPIC_OR_PART"):
            raise click.ClickException(f"Topic '{entity_name}' does not exist") from None
        raise


def _describe(admin: Any, resource: Any, label: str, all_: bool) -> None:
    entries = client.result(admin.describe_configs([resource])[resource])
    rows = [
        (
            name,
            entry.value,
            entry.is_sensitive,
            client.config_source(entry),
            [(s.name, s.value, client.config_source(s)) for s in entry.synonyms.values()],
        )
        for name, entry in entries.items()
    ]
    _print_configs(f"{'All' if all_ else 'Dynamic'} configs for {label} are:", rows, all_)


def _print_configs(
    title: str,
    rows: list[tuple[str, str | None, bool, int, list[tuple[str, str | None, int]]]],
    all_: bool,
) -> None:
    """Kafka's lines, `  name=value sensitive=false synonyms={SOURCE:name=value, ...}`,
    except that an entry the broker gave no synonyms shows its own source, so every line
    says where its value comes from, and a missing value reads `null`, never `None`."""
    dynamic = {1, 2, 3}
    click.echo(title)
    for name, value, sensitive, source, synonyms in sorted(rows):
        if not all_ and source not in dynamic:
            continue
        shown = "null" if sensitive or value is None else value
        chain = ", ".join(
            f"{_SOURCES.get(src, f'SOURCE_{src}')}:{syn}={_value(v, sensitive)}"
            for syn, v, src in synonyms or [(name, value, source)]
        )
        click.echo(f"  {name}={shown} sensitive={str(sensitive).lower()} synonyms={{{chain}}}")


def _value(value: str | None, sensitive: bool) -> str:
    return "null" if sensitive or value is None else value


def _describe_broker_default(wire: client.WireClient, all_: bool) -> None:
    """The cluster-wide dynamic defaults: the broker resource with an empty name, which
    confluent-kafka cannot name, so DescribeConfigs goes on the wire."""
    body = {
        "resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}],
        "include_synonyms": True,
        "include_documentation": False,
    }
    (res,) = wire.call(_DESCRIBE_CONFIGS, 4, body)["results"]
    _check(res["error_code"], res["error_message"])
    rows = [
        (
            c["name"],
            c["value"],
            c["is_sensitive"],
            c["config_source"],
            [(s["name"], s["value"], s["source"]) for s in c["synonyms"]],
        )
        for c in res["configs"]
    ]
    _print_configs("Default configs for brokers in the cluster are:", rows, True)


def _alter_broker_default(wire: client.WireClient, add: str, remove: str) -> None:
    to_set, to_delete = _changes(add, remove)
    ops = [{"name": k, "config_operation": 0, "value": v} for k, v in to_set.items()]
    ops += [{"name": k, "config_operation": 1, "value": None} for k in to_delete]
    body = {
        "resources": [{"resource_type": 4, "resource_name": "", "configs": ops}],
        "validate_only": False,
    }
    (res,) = wire.call(_INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    _check(res["error_code"], res["error_message"])
    click.echo("Completed updating default config for brokers in the cluster.")


def _changes(add: str, remove: str) -> tuple[dict[str, str], list[str]]:
    to_set = client.parse_properties(_split_top_level(add), "--add-config")
    to_delete = [k.strip() for k in remove.split(",") if k.strip()]
    if not to_set and not to_delete:
        raise click.UsageError("--alter needs --add-config and/or --delete-config")
    return to_set, to_delete


def _check(error_code: int, message: str | None) -> None:
    if error_code:
        from kafkars.protocol import Errors

        try:
            name = Errors(error_code).name
        except ValueError:
            name = f"ERROR_{error_code}"
        raise click.ClickException(f"{name}: {message or 'the broker refused the request'}")


def _alter(admin: Any, resource: Any, label: str, add: str, remove: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    to_set, to_delete = _changes(add, remove)
    for name, value in to_set.items():
        resource.add_incremental_config(
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        )
    for name in to_delete:
        resource.add_incremental_config(
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
        )
    client.result(admin.incremental_alter_configs([resource])[resource])
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


def _principals(
    bootstrap: str,
    properties: dict[str, str],
    entity_type: str,
    name: str | None,
    default: bool,
    describe: bool,
    add: str,
    remove: str,
) -> None:
    """Users and clients: quotas (both) and SCRAM credentials (users), split the way
    kafka-configs.sh splits one --add-config between them."""
    kind = "user" if entity_type == "users" else "client-id"
    if describe:
        wire = client.WireClient.connect(bootstrap, properties)
        try:
            _describe_principals(bootstrap, properties, wire, kind, name, default)
        finally:
            wire.close()
        return
    scram_add = [i for i in _split_top_level(add) if i.upper().startswith("SCRAM-")]
    quota_add = [i for i in _split_top_level(add) if not i.upper().startswith("SCRAM-")]
    removed = [n.strip() for n in remove.split(",") if n.strip()]
    scram_remove = [n for n in removed if n.upper().startswith("SCRAM-")]
    quota_remove = [n for n in removed if not n.upper().startswith("SCRAM-")]
    if not (scram_add or quota_add or scram_remove or quota_remove):
        raise click.UsageError("--alter needs --add-config and/or --delete-config")
    if (scram_add or scram_remove) and (kind != "user" or not name):
        raise click.UsageError("SCRAM credentials are for --entity-type users --entity-name")
    quotas = client.parse_properties(quota_add, "--add-config")
    for key, value in [*quotas.items(), *((k, "") for k in quota_remove)]:
        if key not in QUOTA_KEYS:
            raise click.UsageError(
                f"{key} is not a quota of {entity_type}: give one of {', '.join(QUOTA_KEYS)}"
            )
        if value:
            try:
                float(value)
            except ValueError:
                raise click.UsageError(f"--add-config {key} must be a number") from None
    if quotas or quota_remove:
        wire = client.WireClient.connect(bootstrap, properties)
        try:
            _alter_quotas(wire, kind, name, quotas, quota_remove)
        finally:
            wire.close()
    if scram_add or scram_remove:
        assert name is not None
        _alter_scram(client.admin(bootstrap, properties), name, scram_add, scram_remove)
    label = "user-principal" if kind == "user" else "client-id"
    who = f"{label} '{name}'" if name else f"the default {label}"
    click.echo(f"Completed updating config for {who}.")


def _alter_quotas(
    wire: client.WireClient,
    kind: str,
    name: str | None,
    quotas: dict[str, str],
    removed: list[str],
) -> None:
    ops = [{"key": k, "value": float(v), "remove": False} for k, v in quotas.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in removed]
    entity = [{"entity_type": kind, "entity_name": name}]
    body = {"entries": [{"entity": entity, "ops": ops}], "validate_only": False}
    (res,) = wire.call(_ALTER_QUOTAS, 1, body)["entries"]
    _check(res["error_code"], res["error_message"])


def _describe_principals(
    bootstrap: str,
    properties: dict[str, str],
    wire: client.WireClient,
    kind: str,
    name: str | None,
    default: bool,
) -> None:
    """Kafka's lines: `Quota configs for client-id 'app' are producer_byte_rate=1024.0`,
    and for a user its SCRAM credentials. Without a name: every entity with quotas."""
    if default:
        component = {"entity_type": kind, "match_type": _MATCH_DEFAULT, "_match": None}
    elif name is None:
        component = {"entity_type": kind, "match_type": _MATCH_ANY, "_match": None}
    else:
        component = {"entity_type": kind, "match_type": _MATCH_EXACT, "_match": name}
    res = wire.call(_DESCRIBE_QUOTAS, 1, {"components": [component], "strict": True})
    _check(res["error_code"], res["error_message"])
    label = "user-principal" if kind == "user" else "client-id"
    found = False
    for entry in sorted(res["entries"] or [], key=lambda e: str(e["entity"])):
        (entity,) = [e for e in entry["entity"] if e["entity_type"] == kind]
        who = (
            f"{label} '{entity['entity_name']}'"
            if entity["entity_name"] is not None
            else f"the default {label}"
        )
        values = ", ".join(f"{v['key']}={v['value']}" for v in entry["values"])
        click.echo(f"Quota configs for {who} are {values}")
        found = True
    if kind == "user" and name:
        found = _describe_scram(client.admin(bootstrap, properties), name) or found
    if not found and name:
        click.echo(f"No configs for {label} '{name}'.")


def _alter_scram(admin: Any, user: str, add: list[str], remove: list[str]) -> None:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    changes: list[Any] = []
    for item in add:
        name, _, value = item.partition("=")
        if not (value.startswith("[") and value.endswith("]")):
            raise click.UsageError(f"--add-config expects {name}=[password=...], got {item!r}")
        options = client.parse_properties(value[1:-1].split(","), "--add-config")
        if "password" not in options:
            raise click.UsageError(f"--add-config {name}: password= is required")
        try:
            iterations = int(options.get("iterations", 4096))
        except ValueError:
            raise click.UsageError(f"--add-config {name}: iterations must be a number") from None
        info = ScramCredentialInfo(_scram_mechanism(name), iterations)
        changes.append(UserScramCredentialUpsertion(user, info, options["password"].encode()))
    for name in remove:
        changes.append(UserScramCredentialDeletion(user, _scram_mechanism(name)))
    client.result(admin.alter_user_scram_credentials(changes)[user])


def _describe_scram(admin: Any, user: str) -> bool:
    """Prints the user's SCRAM credentials; False when it has none."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        description = admin.describe_user_scram_credentials([user])[user].result(30)
    except KafkaException as e:
        if e.args[0].code() == KafkaError.RESOURCE_NOT_FOUND:
            return False
        raise
    infos = ",".join(
        f"{i.mechanism.name.replace('_', '-')}=iterations={i.iterations}"
        for i in description.scram_credential_infos
    )
    click.echo(f"SCRAM credential configs for user-principal '{user}' are {infos}")
    return True


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
