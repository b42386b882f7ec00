"""`kafkars-consumer-groups`: Kafka's kafka-consumer-groups.sh for kafkars (or any broker).

    kafkars-consumer-groups -b 127.0.0.1:9092 --list [--state [Stable,Empty]]
    kafkars-consumer-groups -b ... --describe --group G [--members [--verbose] | --state]
    kafkars-consumer-groups -b ... --describe --all-groups
    kafkars-consumer-groups -b ... --delete --group G [--group G2 | --all-groups]
    kafkars-consumer-groups -b ... --reset-offsets --group G --topic T[:0,1] --to-earliest \\
        [--to-latest | --to-current | --to-offset N | --shift-by N |
         --to-datetime 2026-01-31T12:00:00.000 | --by-duration PT1H30M] [--execute]
    kafkars-consumer-groups -b ... --delete-offsets --group G --topic T[:0,1]

It speaks the wire protocol through confluent-kafka (see `kafkars.tools.client`), so it
sees what every client sees; OffsetDelete, which confluent-kafka lacks, goes through
kafkars' own codec to the group's coordinator. `--timeout` (ms, default 5000, as Kafka's)
bounds each wait for the broker; `--command-config FILE` gives client properties.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import click

from kafkars.tools import client

_OFFSET_DELETE = 47
# confluent-kafka's ConsumerGroupState names, as Kafka's tools print them.
_STATES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}


@dataclass
class Options:
    """What every action needs: where the broker is and how long to wait for it."""

    bootstrap: str
    properties: dict[str, str]
    timeout_s: float

    def admin(self) -> Any:
        return client.admin(self.bootstrap, self.properties, self.timeout_s)

    def result(self, future: Any) -> Any:
        return client.result(future, self.timeout_s)


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--command-config", help="Client properties file (security settings).")
@click.option(
    "--timeout",
    "timeout_ms",
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="ms to wait for the broker.",
)
@click.option("--list", "list_", is_flag=True, help="List the groups.")
@click.option("--describe", is_flag=True, help="Offsets and lag (or --members, --state).")
@click.option("--delete", is_flag=True, help="Delete empty groups and their offsets.")
@click.option("--reset-offsets", is_flag=True, help="Set a group's committed offsets.")
@click.option("--delete-offsets", is_flag=True, help="Delete a group's offsets of topics.")
@click.option("--group", "groups", multiple=True, help="Consumer group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Every group.")
@click.option("--topic", "topics", multiple=True, help="T or T:0,1 (repeatable).")
@click.option("--all-topics", is_flag=True, help="--reset-offsets: every topic with offsets.")
@click.option("--members", is_flag=True, help="--describe: the members and their partitions.")
@click.option("--offsets", is_flag=True, help="--describe: offsets and lag (the default).")
@click.option(
    "--state",
    is_flag=False,
    flag_value="",
    default=None,
    help="--describe: the group's state; --list: with states, or only these (Stable,Empty).",
)
@click.option("--verbose", is_flag=True, help="--describe --members: the assignment too.")
@click.option("--to-earliest", is_flag=True)
@click.option("--to-latest", is_flag=True)
@click.option("--to-current", is_flag=True)
@click.option("--to-offset", type=int)
@click.option("--shift-by", type=int, help="Move the committed offset by N (may be < 0).")
@click.option("--to-datetime", help="The first offset at or after YYYY-MM-DDTHH:mm:SS.sss.")
@click.option("--by-duration", help="The first offset at or after now minus PnDTnHnMnS.")
@click.option("--dry-run", is_flag=True, help="Only show the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Apply the reset.")
@client.version_option()
def main(
    bootstrap_server: str,
    command_config: str | None,
    timeout_ms: int,
    list_: bool,
    describe: bool,
    delete: bool,
    reset_offsets: bool,
    delete_offsets: bool,
    groups: tuple[str, ...],
    all_groups: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    members: bool,
    offsets: bool,
    state: str | None,
    verbose: bool,
    to_earliest: bool,
    to_latest: bool,
    to_current: bool,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: str | None,
    by_duration: str | None,
    dry_run: bool,
    execute: bool,
) -> None:
    """Lists, describes and deletes consumer groups, and resets and deletes their offsets."""
    actions = (list_, describe, delete, reset_offsets, delete_offsets)
    if sum(actions) != 1:
        raise click.UsageError(
            "give exactly one of --list, --describe, --delete, --reset-offsets, --delete-offsets"
        )
    if not list_ and not groups and not all_groups:
        raise click.UsageError("--group or --all-groups is required")
    if groups and all_groups:
        raise click.UsageError("give --group or --all-groups, not both")
    if describe and sum((members, offsets, state is not None)) > 1:
        raise click.UsageError("--describe takes at most one of --members, --offsets, --state")
    if describe and state:
        raise click.UsageError("--describe --state takes no value (states filter --list)")
    if (members or offsets or verbose) and not describe:
        raise click.UsageError("--members, --offsets and --verbose go with --describe")
    if state is not None and not (list_ or describe):
        raise click.UsageError("--state goes with --list or --describe")
    if dry_run and execute:
        raise click.UsageError("give --dry-run or --execute, not both")
    if delete_offsets and (all_groups or len(groups) != 1 or not topics):
        raise click.UsageError("--delete-offsets needs one --group and --topic")
    strategy = _strategy(
        to_earliest, to_latest, to_current, to_offset, shift_by, to_datetime, by_duration
    )
    if reset_offsets:
        if strategy is None:
            raise click.UsageError(
                "--reset-offsets needs one of --to-earliest, --to-latest, --to-current, "
                "--to-offset, --shift-by, --to-datetime, --by-duration"
            )
        if bool(topics) == all_topics:
            raise click.UsageError("--reset-offsets needs --topic or --all-topics")
    elif strategy is not None or all_topics or execute or dry_run:
        raise click.UsageError("reset options go with --reset-offsets")
    specs = [_topic_spec(t) for t in topics]
    wanted_states = _wanted_states(state) if list_ else None

    opts = Options(bootstrap_server, client.read_properties(command_config), timeout_ms / 1000)
    admin = opts.admin()
    if list_:
        _list(opts, admin, wanted_states)
        return
    names = list(groups) if groups else _group_ids(opts, admin)
    if delete:
        _delete(opts, admin, names)
    elif describe:
        for i, g in enumerate(names):
            if i:
                click.echo("")
            view = "members" if members else "state" if state is not None else "offsets"
            _describe(opts, admin, g, view, verbose, missing_ok=all_groups)
    elif reset_offsets:
        assert strategy is not None
        for g in names:
            _reset(opts, admin, g, specs, strategy, execute)
    else:
        _delete_offsets(opts, admin, names[0], specs)


# -- --list -------------------------------------------------------------------------------------
def _group_ids(opts: Options, admin: Any) -> list[str]:
    listed = opts.result(admin.list_consumer_groups())
    return sorted(g.group_id for g in listed.valid)


def _state_name(state: Any) -> str:
    name = getattr(state, "name", str(state))
    return _STATES.get(name, name)


def _wanted_states(state: str | None) -> set[str] | None:
    """`--list --state [S1,S2]`: None (no state column), set() (all, with states) or the
    lower-case states to show."""
    if state is None:
        return None
    wanted = {s.strip().lower() for s in state.split(",") if s.strip()}
    known = {s.lower() for s in _STATES.values()}
    if wanted - known:
        raise click.BadParameter(
            f"{', '.join(sorted(wanted - known))}: states are {', '.join(_STATES.values())}",
            param_hint="'--state'",
        )
    return wanted


def _list(opts: Options, admin: Any, wanted: set[str] | None) -> None:
    listed = sorted(opts.result(admin.list_consumer_groups()).valid, key=lambda g: g.group_id)
    if wanted is None:
        for g in listed:
            click.echo(g.group_id)
        return
    rows = [
        (g.group_id, _state_name(g.state))
        for g in listed
        if not wanted or _state_name(g.state).lower() in wanted
    ]
    _table([("GROUP", "STATE"), *rows])


# -- --describe ---------------------------------------------------------------------------------
def _describe_group(opts: Options, admin: Any, group_id: str) -> Any:
    described = opts.result(admin.describe_consumer_groups([group_id])[group_id])
    return described


def _committed(opts: Options, admin: Any, group_id: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group_id)]
    found = opts.result(admin.list_consumer_group_offsets(request)[group_id])
    return {(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions if tp.offset >= 0}


def _exists(described: Any, committed: dict[tuple[str, int], int]) -> bool:
    return _state_name(described.state) != "Dead" or bool(committed)


def _describe(
    opts: Options, admin: Any, group_id: str, view: str, verbose: bool, missing_ok: bool
) -> None:
    described = _describe_group(opts, admin, group_id)
    committed = _committed(opts, admin, group_id)
    if not _exists(described, committed):
        if missing_ok:
            return
        raise click.ClickException(f"Consumer group '{group_id}' does not exist.")
    state = _state_name(described.state)
    if view == "state":
        coordinator = described.coordinator
        _table(
            [
                ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                (
                    group_id,
                    f"{coordinator.host}:{coordinator.port} ({coordinator.id})",
                    described.partition_assignor or "-",
                    state,
                    str(len(described.members)),
                ),
            ]
        )
        return
    if not described.members:
        click.echo(f"Consumer group '{group_id}' has no active members.")
    if view == "members":
        header: tuple[str, ...] = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        rows: list[tuple[str, ...]] = [(*header, "ASSIGNMENT") if verbose else header]
        for m in sorted(described.members, key=lambda m: m.member_id):
            tps = m.assignment.topic_partitions if m.assignment else []
            row = (group_id, m.member_id, m.host, m.client_id, str(len(tps)))
            rows.append((*row, _assignment(tps)) if verbose else row)
        if described.members:
            _table(rows)
        return
    owner: dict[tuple[str, int], Any] = {}
    for m in described.members:
        for tp in m.assignment.topic_partitions if m.assignment else []:
            owner[(tp.topic, tp.partition)] = m
    keys = sorted(set(committed) | set(owner))
    ends = _log_offsets(opts, admin, keys, "latest")
    header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG")
    rows = [(*header, "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for t, p in keys:
        offset = committed.get((t, p))
        end = ends.get((t, p))
        m = owner.get((t, p))
        rows.append(
            (
                group_id,
                t,
                str(p),
                "-" if offset is None else str(offset),
                "-" if end is None else str(end),
                "-" if offset is None or end is None else str(max(end - offset, 0)),
                m.member_id if m else "-",
                m.host if m else "-",
                m.client_id if m else "-",
            )
        )
    _table(rows)


def _assignment(tps: list[Any]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items()))


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def _log_offsets(
    opts: Options, admin: Any, keys: list[tuple[str, int]], spec: str | int
) -> dict[tuple[str, int], int]:
    """Each partition's earliest or latest offset, or the first at or after a timestamp
    (-1 when no record is that new), through ListOffsets. Missing partitions are left out."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    if not keys:
        return {}
    offset_spec = (
        OffsetSpec.earliest()
        if spec == "earliest"
        else OffsetSpec.latest()
        if spec == "latest"
        else OffsetSpec.for_timestamp(int(spec))
    )
    request = {TopicPartition(t, p): offset_spec for t, p in keys}
    out = {}
    for tp, future in admin.list_offsets(request, request_timeout=opts.timeout_s).items():
        try:
            out[(tp.topic, tp.partition)] = future.result(opts.timeout_s).offset
        except KafkaException:
            continue
    return out


# -- --delete -----------------------------------------------------------------------------------
def _delete(opts: Options, admin: Any, names: list[str]) -> None:
    if not names:
        click.echo("No consumer groups to delete.")
        return
    failed = []
    for g, future in admin.delete_consumer_groups(names).items():
        try:
            opts.result(future)
        except click.ClickException as e:
            failed.append(f"{g}: {e.message}")
    if failed:
        raise click.ClickException(f"Deletion of some consumer groups failed: {'; '.join(failed)}")
    quoted = ", ".join(f"'{g}'" for g in names)
    click.echo(f"Deletion of requested consumer groups ({quoted}) was successful.")


# -- --reset-offsets ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Strategy:
    kind: str  # earliest, latest, current, offset, shift, timestamp
    value: int = 0


_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)


def parse_datetime(text: str) -> int:
    """`2026-01-31T12:00:00[.000][Z|+01:00]` as ms since the epoch; without a zone, local
    time, as Kafka's tool reads it."""
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not YYYY-MM-DDTHH:mm:SS.sss", param_hint="'--to-datetime'"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # local time
    return max(int(parsed.timestamp() * 1000), 0)


def parse_duration(text: str) -> timedelta:
    """ISO 8601's `PnDTnHnMnS` (Kafka's --by-duration), e.g. `PT1H30M`, `P2D`."""
    m = _DURATION.fullmatch(text.strip())
    if not m or not any(m.groupdict().values()) or text.strip().upper().endswith("T"):
        raise click.BadParameter(f"{text!r} is not PnDTnHnMnS", param_hint="'--by-duration'")
    d, h, mins, s = (m.group(k) for k in "dhms")
    return timedelta(
        days=int(d or 0), hours=int(h or 0), minutes=int(mins or 0), seconds=float(s or 0)
    )


def _ago_ms(duration: timedelta) -> int:
    # Not below 0: ListOffsets reads negative timestamps as "latest" and "earliest".
    return max(int((time.time() - duration.total_seconds()) * 1000), 0)


def _strategy(
    to_earliest: bool,
    to_latest: bool,
    to_current: bool,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: str | None,
    by_duration: str | None,
) -> Strategy | None:
    given = [
        Strategy("earliest") if to_earliest else None,
        Strategy("latest") if to_latest else None,
        Strategy("current") if to_current else None,
        Strategy("offset", to_offset) if to_offset is not None else None,
        Strategy("shift", shift_by) if shift_by is not None else None,
        Strategy("timestamp", parse_datetime(to_datetime)) if to_datetime is not None else None,
        Strategy("timestamp", _ago_ms(parse_duration(by_duration)))
        if by_duration is not None
        else None,
    ]  # fmt: skip
    chosen = [s for s in given if s is not None]
    if len(chosen) > 1:
        raise click.UsageError("give only one reset strategy")
    return chosen[0] if chosen else None


def _topic_spec(text: str) -> tuple[str, list[int] | None]:
    """`T` -> (T, None: every partition); `T:0,2` -> (T, [0, 2])."""
    name, sep, parts = text.partition(":")
    if not name:
        raise click.BadParameter(f"{text!r} has no topic name", param_hint="'--topic'")
    if not sep:
        return name, None
    try:
        return name, sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise click.BadParameter(f"{text!r} is not T or T:0,1", param_hint="'--topic'") from None


def _partitions(
    opts: Options,
    admin: Any,
    specs: list[tuple[str, list[int] | None]],
    committed: dict[tuple[str, int], int],
) -> list[tuple[str, int]]:
    if not specs:  # --all-topics: what the group has offsets for
        return sorted(committed)
    out = []
    for topic, wanted in specs:
        existing = client.topic_partitions(admin, topic, opts.timeout_s)
        for p in wanted if wanted is not None else existing:
            if p not in existing:
                raise click.ClickException(f"Topic '{topic}' has no partition {p}")
            out.append((topic, p))
    return sorted(set(out))


def _reset(
    opts: Options,
    admin: Any,
    group_id: str,
    specs: list[tuple[str, list[int] | None]],
    strategy: Strategy,
    execute: bool,
) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    committed = _committed(opts, admin, group_id)
    keys = _partitions(opts, admin, specs, committed)
    low = _log_offsets(opts, admin, keys, "earliest")
    high = _log_offsets(opts, admin, keys, "latest")
    at_time = (
        _log_offsets(opts, admin, keys, strategy.value) if strategy.kind == "timestamp" else {}
    )
    targets = []
    for key in keys:
        lo, hi = low.get(key, 0), high.get(key, 0)
        current = committed.get(key)
        if strategy.kind == "earliest":
            offset = lo
        elif strategy.kind == "latest":
            offset = hi
        elif strategy.kind == "current":
            offset = hi if current is None else current
        elif strategy.kind == "offset":
            offset = strategy.value
        elif strategy.kind == "shift":
            if current is None:
                raise click.ClickException(
                    f"cannot shift the offset of {key[0]}-{key[1]}: group '{group_id}' "
                    "has committed none"
                )
            offset = current + strategy.value
        else:
            found = at_time.get(key, -1)
            offset = hi if found < 0 else found
        targets.append(TopicPartition(key[0], key[1], max(lo, min(offset, hi))))
    _table(
        [
            ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
            *((group_id, tp.topic, str(tp.partition), str(tp.offset)) for tp in targets),
        ]
    )
    if not execute:
        click.echo("(dry run: add --execute to apply)", err=True)
        return
    if not targets:
        return
    # As Kafka's tool: a live member would overwrite the reset with its next commit.
    state = _state_name(_describe_group(opts, admin, group_id).state)
    if state not in ("Empty", "Dead"):
        raise click.ClickException(
            f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
            f"current state is {state}."
        )
    request = [ConsumerGroupTopicPartitions(group_id, targets)]
    try:
        opts.result(admin.alter_consumer_group_offsets(request)[group_id])
    except click.ClickException as e:
        raise click.ClickException(
            f"Resetting offsets of group '{group_id}' failed (is the group empty?): {e.message}"
        ) from None


# -- --delete-offsets ---------------------------------------------------------------------------
def _delete_offsets(
    opts: Options, admin: Any, group_id: str, specs: list[tuple[str, list[int] | None]]
) -> None:
    from kafkars.protocol import Errors

    described = _describe_group(opts, admin, group_id)
    if not _exists(described, _committed(opts, admin, group_id)):
        raise click.ClickException(f"Consumer group '{group_id}' does not exist.")
    keys = _partitions(opts, admin, specs, {})
    by_topic: dict[str, list[int]] = {}
    for t, p in keys:
        by_topic.setdefault(t, []).append(p)
    body = {
        "group_id": group_id,
        "topics": [
            {"name": t, "partitions": [{"partition_index": p} for p in ps]}
            for t, ps in by_topic.items()
        ],
    }
    coordinator = described.coordinator
    wire = client.WireClient(coordinator.host, coordinator.port, opts.timeout_s, opts.properties)
    try:
        response = wire.call(_OFFSET_DELETE, 0, body)
    finally:
        wire.close()

    def name(code: int) -> str:
        try:
            return Errors(code).name
        except ValueError:
            return f"ERROR_{code}"

    if response["error_code"]:
        raise click.ClickException(
            f"Deleting offsets of group '{group_id}' failed: {name(response['error_code'])}"
        )
    rows = [("TOPIC", "PARTITION", "STATUS")]
    failed = 0
    for t in response["topics"]:
        for p in t["partitions"]:
            code = p["error_code"]
            failed += bool(code)
            rows.append(
                (t["name"], str(p["partition_index"]), name(code) if code else "Successful")
            )
    verb = "failed" if failed else "succeeded"
    topics = ", ".join(by_topic)
    click.echo(f"Request {verb} for deleting offsets of topic(s) {topics} of group {group_id}")
    _table(rows)
    if failed:
        raise click.exceptions.Exit(1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
