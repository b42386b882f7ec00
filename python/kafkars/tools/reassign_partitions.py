"""`kafkars-reassign-partitions`: Kafka's kafka-reassign-partitions.sh (cluster mode).

    kafkars-reassign-partitions -b HOST:PORT --generate \\
        --topics-to-move-json-file topics.json --broker-list 1,2,3
    kafkars-reassign-partitions -b ... --execute --reassignment-json-file plan.json
    kafkars-reassign-partitions -b ... --verify --reassignment-json-file plan.json
    kafkars-reassign-partitions -b ... --cancel --reassignment-json-file plan.json
    kafkars-reassign-partitions -b ... --list

The files are Kafka's JSON: topics to move `{"topics": [{"topic": "T"}], "version": 1}`, a
plan `{"version": 1, "partitions": [{"topic": "T", "partition": 0, "replicas": [1, 2]}]}`.
Reassignments go to the controller as AlterPartitionReassignments and are followed with
ListPartitionReassignments (KIP-455). A plan's `log_dirs` entries other than "any" move
those replicas to that log dir of their broker (AlterReplicaLogDirs, once the replica
exists there). Replication throttles (`--throttle`) are not implemented by kafkars and
are refused.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from kafkars.controller.replica_placement import assign_replicas
from kafkars.protocol import ApiKey, Errors, KafkaError
from kafkars.tools import client
from kafkars.tools.log_dirs import alter_replica_log_dirs, describe_log_dirs

Plan = dict[tuple[str, int], list[int]]
# A replica's wanted log dir: (topic, partition, broker) -> absolute path on that broker.
LogDirs = dict[tuple[str, int, int], str]


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise click.ClickException(f"cannot read {path}: {e}") from None
    if not isinstance(data, dict):
        raise click.ClickException(f"{path}: expected a JSON object")
    return data


def read_plan(path: str) -> tuple[Plan, LogDirs]:
    """A reassignment plan (Kafka's JSON), checked as Kafka's tool checks it, and the log
    dirs it names for replicas ("any" leaves the choice to the broker)."""
    data = _read_json(path)
    plan: Plan = {}
    log_dirs: LogDirs = {}
    try:
        for entry in data["partitions"]:
            tp = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(b) for b in entry["replicas"]]
            dirs = entry.get("log_dirs") or ["any"] * len(replicas)
            if len(dirs) != len(replicas):
                raise click.ClickException(
                    f"{path}: partition {tp[0]}-{tp[1]} has {len(dirs)} log_dirs "
                    f"for {len(replicas)} replicas"
                )
            for broker, d in zip(replicas, dirs, strict=True):
                if d != "any":
                    log_dirs[(tp[0], tp[1], broker)] = str(d)
            if tp in plan:
                raise click.ClickException(f"{path}: partition {tp[0]}-{tp[1]} is listed twice")
            if not replicas or len(set(replicas)) != len(replicas):
                raise click.ClickException(
                    f"{path}: partition {tp[0]}-{tp[1]} has an empty or duplicated replica list"
                )
            plan[tp] = replicas
    except (KeyError, TypeError, ValueError) as e:
        raise click.ClickException(f"{path}: not a reassignment plan ({e})") from None
    if not plan:
        raise click.ClickException(f"{path}: the plan lists no partitions")
    return plan, log_dirs


def plan_json(plan: Plan) -> str:
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
                for (t, p), r in sorted(plan.items())
            ],
        },
        separators=(",", ":"),
    )


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return f"error {code}"


def _names(tps: Any) -> str:
    return ",".join(f"{t}-{p}" for t, p in sorted(tps))


class Reassignments:
    """The cluster's current assignment (Metadata) and its controller (for the KIP-455
    requests)."""

    def __init__(self, bootstrap: str, properties: dict[str, str]) -> None:
        self.bootstrap = bootstrap
        self.properties = properties
        self.admin = client.admin(bootstrap, properties)

    def current(self, topics: set[str] | None = None) -> Plan:
        metadata = self.admin.list_topics(timeout=client.DEFAULT_TIMEOUT_S)
        out: Plan = {}
        for name, topic in metadata.topics.items():
            if topics is not None and name not in topics:
                continue
            for p, part in topic.partitions.items():
                out[(name, p)] = list(part.replicas)
        return out

    def brokers(self) -> dict[int, str | None]:
        """Every broker's id and rack (DescribeCluster)."""
        cluster = client.result(self.admin.describe_cluster())
        return {node.id: node.rack for node in cluster.nodes}

    def address(self, broker: int) -> str:
        cluster = client.result(self.admin.describe_cluster())
        for node in cluster.nodes:
            if node.id == broker:
                return f"{node.host}:{node.port}"
        raise click.ClickException(f"broker {broker} is not in the cluster")

    def move_log_dirs(self, log_dirs: LogDirs, timeout_s: float) -> dict[tuple[str, int, int], str]:
        """AlterReplicaLogDirs to each broker named; a replica the reassignment has not
        created yet (REPLICA_NOT_AVAILABLE) is asked again until `timeout_s`, as Kafka's
        tool does. Returns the replicas that failed, with why."""
        pending = dict(log_dirs)
        failed: dict[tuple[str, int, int], str] = {}
        deadline = time.monotonic() + timeout_s
        while pending:
            for broker in sorted({b for _, _, b in pending}):
                moves = {(t, p): d for (t, p, b), d in pending.items() if b == broker}
                codes = alter_replica_log_dirs(self.address(broker), moves, self.properties)
                for (t, p), code in codes.items():
                    if code != int(Errors.REPLICA_NOT_AVAILABLE):
                        d = pending.pop((t, p, broker))
                        if code:
                            failed[(t, p, broker)] = f"{_error_name(code)} ({d})"
            if pending and time.monotonic() > deadline:
                for key in pending:
                    failed[key] = "the replica was not created in time"
                break
            if pending:
                time.sleep(0.2)
        return failed

    def replica_dir(self, topic: str, partition: int, broker: int) -> tuple[str | None, bool]:
        """Where a replica's log is on `broker` (DescribeLogDirs) and whether a move of
        it is still running there (a future replica exists)."""
        found, moving = None, False
        results = describe_log_dirs(self.address(broker), {topic: [partition]}, self.properties)
        for result in results:
            for t in result["topics"]:
                for p in t["partitions"]:
                    if t["name"] == topic and p["partition_index"] == partition:
                        if p["is_future_key"]:
                            moving = True
                        else:
                            found = result["log_dir"]
        return found, moving

    def _controller(self) -> client.WireClient:
        cluster = client.result(self.admin.describe_cluster())
        node = cluster.controller
        if node is None:
            raise click.ClickException("the cluster has no controller right now; try again")
        return client.WireClient(node.host, node.port, config=self.properties)

    def alter(self, plan: dict[tuple[str, int], list[int] | None]) -> dict[tuple[str, int], str]:
        """Sends the plan; returns the partitions that failed, with why."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (t, p), replicas in sorted(plan.items()):
            topics.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
        body = {
            "timeout_ms": 30000,
            "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        wire = self._controller()
        try:
            reply = wire.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, body)
        finally:
            wire.close()
        if reply["error_code"]:
            raise click.ClickException(
                f"the controller refused the reassignment: "
                f"{reply['error_message'] or _error_name(reply['error_code'])}"
            )
        failed = {}
        for topic in reply["responses"]:
            for p in topic["partitions"]:
                if p["error_code"]:
                    why = p["error_message"] or _error_name(p["error_code"])
                    failed[(topic["name"], p["partition_index"])] = why
        return failed

    def ongoing(self) -> dict[tuple[str, int], dict[str, list[int]]]:
        wire = self._controller()
        try:
            reply = wire.call(
                ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 30000, "topics": None}
            )
        finally:
            wire.close()
        if reply["error_code"]:
            raise click.ClickException(
                f"cannot list reassignments: {_error_name(reply['error_code'])}"
            )
        return {
            (t["name"], p["partition_index"]): {
                "replicas": p["replicas"],
                "adding": p["adding_replicas"],
                "removing": p["removing_replicas"],
            }
            for t in reply["topics"]
            for p in t["partitions"]
        }


def _generate(
    r: Reassignments, topics_file: str, broker_list: str, disable_rack_aware: bool
) -> None:
    data = _read_json(topics_file)
    try:
        topics = {str(t["topic"]) for t in data["topics"]}
        brokers = sorted({int(b) for b in broker_list.split(",") if b.strip()})
    except (KeyError, TypeError, ValueError) as e:
        raise click.ClickException(
            f"bad --topics-to-move-json-file or --broker-list: {e}"
        ) from None
    known = r.brokers()
    unknown = set(brokers) - set(known)
    if unknown:
        raise click.ClickException(f"unknown broker ids in --broker-list: {sorted(unknown)}")
    current = r.current(topics)
    missing = topics - {t for t, _ in current}
    if missing:
        raise click.ClickException(f"unknown topics: {', '.join(sorted(missing))}")
    proposed: Plan = {}
    for topic in sorted(topics):
        parts = sorted(p for t, p in current if t == topic)
        factor = len(current[(topic, parts[0])])
        try:
            racks = dict.fromkeys(brokers) if disable_rack_aware else {b: known[b] for b in brokers}
            assigned = assign_replicas(racks, len(parts), factor)
        except KafkaError as e:
            raise click.ClickException(e.message or e.code.name) from None
        for p in parts:
            proposed[(topic, p)] = assigned[p]
    click.echo("Current partition replica assignment")
    click.echo(plan_json(current))
    click.echo("")
    click.echo("Proposed partition reassignment configuration")
    click.echo(plan_json(proposed))


def _execute(r: Reassignments, plan: Plan, log_dirs: LogDirs, timeout_s: float) -> None:
    current = r.current({t for t, _ in plan})
    missing = set(plan) - set(current)
    if missing:
        raise click.ClickException(f"unknown partitions: {_names(missing)}")
    click.echo("Current partition replica assignment")
    click.echo("")
    click.echo(plan_json({tp: current[tp] for tp in plan}))
    click.echo("")
    click.echo("Save this to use as the --reassignment-json-file option during rollback")
    failed = r.alter(dict(plan))
    for (t, p), why in sorted(failed.items()):
        click.echo(f"Error reassigning partition {t}-{p}: {why}", err=True)
    started = set(plan) - set(failed)
    if started:
        click.echo(f"Successfully started partition reassignments for {_names(started)}")
    wanted = {k: d for k, d in log_dirs.items() if k[:2] in started}
    dir_failed = r.move_log_dirs(wanted, timeout_s) if wanted else {}
    for (t, p, b), why in sorted(dir_failed.items()):
        click.echo(f"Error moving replica {t}-{p}-{b} to its log dir: {why}", err=True)
    moved = sorted(set(wanted) - set(dir_failed))
    if moved:
        names = ",".join(f"{t}-{p}-{b}" for t, p, b in moved)
        click.echo(f"Successfully started log directory move for: {names}")
    if failed or dir_failed:
        raise SystemExit(1)


def _verify(r: Reassignments, plan: Plan, log_dirs: LogDirs) -> None:
    ongoing = r.ongoing()
    current = r.current({t for t, _ in plan})
    click.echo("Status of partition reassignment:")
    done = True
    for tp, target in sorted(plan.items()):
        name = f"{tp[0]}-{tp[1]}"
        if tp in ongoing:
            click.echo(f"Reassignment of partition {name} is still in progress.")
            done = False
        elif current.get(tp) == target:
            click.echo(f"Reassignment of partition {name} is completed.")
        else:
            have = ",".join(map(str, current.get(tp, [])))
            click.echo(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{have} rather than {','.join(map(str, target))}."
            )
            done = False
    if log_dirs:
        click.echo("Status of replica log directory movement:")
    for (t, p, b), wanted in sorted(log_dirs.items()):
        where, moving = r.replica_dir(t, p, b)
        name = f"{t}-{p}-{b}"
        if where == wanted and not moving:
            click.echo(f"Replica {name} is in log dir {wanted}.")
        elif moving:
            click.echo(f"Replica {name} is still moving to log dir {wanted}.")
            done = False
        else:
            click.echo(f"Replica {name} is in log dir {where} rather than {wanted}.")
            done = False
    if not done:
        raise SystemExit(1)


def _cancel(r: Reassignments, plan: Plan) -> None:
    failed = r.alter(dict.fromkeys(plan))
    cancelled = set(plan) - set(failed)
    if cancelled:
        click.echo(f"Successfully cancelled partition reassignments for: {_names(cancelled)}")
    not_running = [tp for tp, why in failed.items() if "NO_REASSIGNMENT" in why.upper()]
    if not_running:
        click.echo(f"None of the specified partition moves are active: {_names(not_running)}")
    errors = {tp: why for tp, why in failed.items() if tp not in not_running}
    for (t, p), why in sorted(errors.items()):
        click.echo(f"Error cancelling the reassignment of {t}-{p}: {why}", err=True)
    if errors:
        raise SystemExit(1)


def _list(r: Reassignments) -> None:
    ongoing = r.ongoing()
    if not ongoing:
        click.echo("No partition reassignments found.")
        return
    click.echo("Current partition reassignments:")
    for (t, p), a in sorted(ongoing.items()):

        def ids(key: str, a: dict[str, list[int]] = a) -> str:
            return ",".join(map(str, a[key]))

        click.echo(
            f"{t}-{p}: replicas: {ids('replicas')}. adding: {ids('adding')}. "
            f"removing: {ids('removing')}."
        )


@click.command(cls=client.Tool)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--command-config", help="Client properties file.")
@click.option(
    "--generate", is_flag=True, help="Propose an assignment for --topics-to-move-json-file."
)
@click.option("--execute", is_flag=True, help="Start the reassignment in --reassignment-json-file.")
@click.option("--verify", is_flag=True, help="Check the reassignment in --reassignment-json-file.")
@click.option(
    "--cancel", is_flag=True, help="Cancel the reassignments in --reassignment-json-file."
)
@click.option("--list", "list_", is_flag=True, help="List the reassignments in progress.")
@click.option("--reassignment-json-file", help="Kafka's reassignment plan.")
@click.option("--topics-to-move-json-file", help="Kafka's list of topics to move (--generate).")
@click.option("--broker-list", help="Brokers to move to, comma-separated (--generate).")
@click.option("--disable-rack-aware", is_flag=True, help="--generate ignores the brokers' racks.")
@click.option(
    "--timeout",
    type=int,
    default=10000,
    show_default=True,
    help="How long (ms) --execute waits for a replica to exist before moving its log dir.",
)
@click.option("--throttle", type=int, help="Not supported: kafkars has no replication quotas.")
@client.version_option()
def main(
    bootstrap_server: str,
    command_config: str | None,
    generate: bool,
    execute: bool,
    verify: bool,
    cancel: bool,
    list_: bool,
    reassignment_json_file: str | None,
    topics_to_move_json_file: str | None,
    broker_list: str | None,
    disable_rack_aware: bool,
    timeout: int,
    throttle: int | None,
) -> None:
    """Moves partition replicas between brokers (AlterPartitionReassignments)."""
    if sum((generate, execute, verify, cancel, list_)) != 1:
        raise click.UsageError(
            "give exactly one of --generate, --execute, --verify, --cancel, --list"
        )
    if throttle is not None:
        raise click.UsageError("--throttle is not supported: kafkars has no replication quotas")
    if generate and not (topics_to_move_json_file and broker_list):
        raise click.UsageError("--generate needs --topics-to-move-json-file and --broker-list")
    if (execute or verify or cancel) and not reassignment_json_file:
        raise click.UsageError("--execute, --verify and --cancel need --reassignment-json-file")
    plan, log_dirs = read_plan(reassignment_json_file) if reassignment_json_file else ({}, {})
    properties = client.read_properties(command_config)
    client.check_reachable(bootstrap_server)
    r = Reassignments(bootstrap_server, properties)
    if generate:
        assert topics_to_move_json_file and broker_list
        _generate(r, topics_to_move_json_file, broker_list, disable_rack_aware)
    elif execute:
        _execute(r, plan, log_dirs, timeout / 1000)
    elif verify:
        _verify(r, plan, log_dirs)
    elif cancel:
        _cancel(r, plan)
    else:
        _list(r)


if __name__ == "__main__":  # pragma: no cover
    main()
