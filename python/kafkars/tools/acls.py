"""`kafkars-acls`: Kafka's kafka-acls.sh for kafkars (or any broker with an authorizer).

    kafkars-acls -b HOST:PORT --add --allow-principal User:alice --operation Read --topic T
    kafkars-acls -b ... --add --allow-principal User:alice --producer --topic T
    kafkars-acls -b ... --add --allow-principal User:bob --consumer --topic T --group G
    kafkars-acls -b ... --list [--topic T] [--principal User:alice]
    kafkars-acls -b ... --remove --allow-principal User:alice --operation Read --topic T --force

`--command-config FILE` gives client properties (security.protocol, sasl.*, ssl.*) as
Kafka's tools take them.
"""

from __future__ import annotations

from typing import Any

import click

from kafkars.tools import client

OPERATIONS = (
    "All", "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction",
    "DescribeConfigs", "AlterConfigs", "IdempotentWrite",
)  # fmt: skip
PATTERN_TYPES = ("LITERAL", "PREFIXED", "ANY", "MATCH")


def _enum_name(op: str) -> str:
    """`DescribeConfigs` -> `DESCRIBE_CONFIGS` (confluent-kafka's enum names)."""
    out = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(op))
    return out.upper()


def _resources(
    topics: tuple[str, ...], groups: tuple[str, ...], cluster: bool, txn_ids: tuple[str, ...]
) -> list[tuple[str, str]]:
    out = [("TOPIC", t) for t in topics] + [("GROUP", g) for g in groups]
    out += [("TRANSACTIONAL_ID", t) for t in txn_ids]
    if cluster:
        out.append(("BROKER", "kafka-cluster"))
    return out


def _shown(rtype: str) -> str:
    # confluent-kafka calls Kafka's CLUSTER resource type BROKER.
    return "CLUSTER" if rtype == "BROKER" else rtype


def _describe(binding: Any) -> str:
    return (
        f"(principal={binding.principal}, host={binding.host}, "
        f"operation={binding.operation.name}, permissionType={binding.permission_type.name})"
    )


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--command-config", help="Client properties file (security settings).")
@click.option("--add", is_flag=True, help="Add ACLs.")
@click.option("--remove", is_flag=True, help="Remove ACLs.")
@click.option("--list", "list_", is_flag=True, help="List ACLs.")
@click.option("--allow-principal", multiple=True, help="e.g. User:alice (repeatable).")
@click.option("--deny-principal", multiple=True, help="e.g. User:mallory (repeatable).")
@click.option("--allow-host", multiple=True, help="Hosts for --allow-principal (default *).")
@click.option("--deny-host", multiple=True, help="Hosts for --deny-principal (default *).")
@click.option("--principal", help="--list: only this principal's ACLs.")
@click.option(
    "--operation",
    "operations",
    multiple=True,
    type=click.Choice(OPERATIONS, case_sensitive=False),
    help="Operation (repeatable).",
)
@click.option("--topic", "topics", multiple=True, help="Topic (repeatable).")
@click.option("--group", "groups", multiple=True, help="Consumer group (repeatable).")
@click.option("--transactional-id", "txn_ids", multiple=True, help="Transactional id.")
@click.option("--cluster", is_flag=True, help="The cluster resource.")
@click.option(
    "--resource-pattern-type",
    type=click.Choice(PATTERN_TYPES, case_sensitive=False),
    default="LITERAL",
    show_default=True,
)
@click.option("--producer", is_flag=True, help="Shortcut: Write, Describe, Create on --topic.")
@click.option(
    "--consumer", is_flag=True, help="Shortcut: Read, Describe on --topic, Read on --group."
)
@click.option("--force", is_flag=True, help="--remove without asking.")
@client.version_option()
def main(
    bootstrap_server: str,
    command_config: str | None,
    add: bool,
    remove: bool,
    list_: bool,
    allow_principal: tuple[str, ...],
    deny_principal: tuple[str, ...],
    allow_host: tuple[str, ...],
    deny_host: tuple[str, ...],
    principal: str | None,
    operations: tuple[str, ...],
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    txn_ids: tuple[str, ...],
    cluster: bool,
    resource_pattern_type: str,
    producer: bool,
    consumer: bool,
    force: bool,
) -> None:
    """Adds, lists and removes ACLs."""
    import confluent_kafka.admin

    # Typed loosely: its filters take None for "any", which its stubs do not say.
    ca: Any = confluent_kafka.admin
    AclBinding, AclBindingFilter = ca.AclBinding, ca.AclBindingFilter
    AclOperation, AclPermissionType = ca.AclOperation, ca.AclPermissionType
    ResourcePatternType, ResourceType = ca.ResourcePatternType, ca.ResourceType

    if sum((add, remove, list_)) != 1:
        raise click.UsageError("give exactly one of --add, --remove, --list")
    resources = _resources(topics, groups, cluster, txn_ids)
    if (add or remove) and not resources:
        raise click.UsageError("give a resource: --topic, --group, --transactional-id or --cluster")
    if add and not (operations or producer or consumer):
        raise click.UsageError("--add needs --operation, --producer or --consumer")
    if add and not (allow_principal or deny_principal):
        raise click.UsageError("--add needs --allow-principal or --deny-principal")
    admin = client.admin(bootstrap_server, client.read_properties(command_config))
    pattern = ResourcePatternType[resource_pattern_type.upper()]

    def ops_for(rtype: str) -> list[str]:
        chosen = [_enum_name(o) for o in operations]
        if producer and rtype == "TOPIC":
            chosen += ["WRITE", "DESCRIBE", "CREATE"]
        if consumer and rtype == "TOPIC":
            chosen += ["READ", "DESCRIBE"]
        if consumer and rtype == "GROUP":
            chosen += ["READ"]
        return sorted(set(chosen))

    entries = [(p, h, "ALLOW") for p in allow_principal for h in (allow_host or ("*",))]
    entries += [(p, h, "DENY") for p in deny_principal for h in (deny_host or ("*",))]
    if add:
        bindings = [
            AclBinding(
                ResourceType[rtype], name, pattern, p, h, AclOperation[op], AclPermissionType[perm]
            )
            for rtype, name in resources
            for op in ops_for(rtype)
            for p, h, perm in entries
        ]
        for future in admin.create_acls(bindings).values():
            _result(future)
        for rtype, name in resources:
            click.echo(
                f"Adding ACLs for resource `ResourcePattern(resourceType={_shown(rtype)}, "
                f"name={name}, patternType={pattern.name})`:"
            )
            for b in bindings:
                if (b.restype.name, b.name) == (rtype, name):
                    click.echo(f" \t{_describe(b)}")
        return
    if remove:
        if not force and not click.confirm("Are you sure you want to remove ACLs?"):
            return
        filters = []
        for rtype, name in resources:
            if entries:
                for p, h, perm in entries:
                    for op in ops_for(rtype) or ["ANY"]:
                        filters.append(
                            AclBindingFilter(
                                ResourceType[rtype],
                                name,
                                pattern,
                                p,
                                h,
                                AclOperation[op],
                                AclPermissionType[perm],
                            )  # fmt: skip
                        )
            else:
                filters.append(
                    AclBindingFilter(
                        ResourceType[rtype],
                        name,
                        pattern,
                        None,
                        None,
                        AclOperation.ANY,
                        AclPermissionType.ANY,
                    )  # fmt: skip
                )
        for future in admin.delete_acls(filters).values():
            _result(future)
        click.echo(f"Removed ACLs matching {len(filters)} filter(s).")
        return
    filters = [
        AclBindingFilter(
            ResourceType[rtype],
            name,
            pattern,
            principal,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )  # fmt: skip
        for rtype, name in resources
    ] or [
        AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            principal,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )  # fmt: skip
    ]
    by_resource: dict[tuple[str, str, str], list[Any]] = {}
    for f in filters:
        for b in _result(admin.describe_acls(f)):
            by_resource.setdefault(
                (b.restype.name, b.name, b.resource_pattern_type.name), []
            ).append(b)
    for (rtype, name, ptype), bindings in sorted(by_resource.items()):
        click.echo(
            "Current ACLs for resource "
            f"`ResourcePattern(resourceType={_shown(rtype)}, name={name}, patternType={ptype})`:"
        )
        for b in bindings:
            click.echo(f" \t{_describe(b)}")
        click.echo("")


def _result(future: Any) -> Any:
    return client.result(future, client.DEFAULT_TIMEOUT_S)


if __name__ == "__main__":  # pragma: no cover
    main()
