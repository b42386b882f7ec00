"""kafkars-transactions: list, describe, find hanging and abort transactions, with the
flags and output of Kafka's kafka-transactions.sh.

    kafkars-transactions --bootstrap-server HOST:PORT list
    kafkars-transactions --bootstrap-server HOST:PORT describe --transactional-id tx
    kafkars-transactions --bootstrap-server HOST:PORT describe-producers --topic t --partition 0
    kafkars-transactions --bootstrap-server HOST:PORT abort --topic t --partition 0 --start-offset 4
    kafkars-transactions --bootstrap-server HOST:PORT find-hanging --broker-id 1

confluent-kafka has no call for these APIs, so the tool speaks them on the wire
(ListTransactions, DescribeTransactions, DescribeProducers, WriteTxnMarkers). `abort`
ends a hanging transaction on one partition as Kafka's does: an ABORT marker written by
the partition leader for the producer whose open transaction starts at `--start-offset`
(or the producer named by `--producer-id/--producer-epoch/--coordinator-epoch`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import click

from kafkars.protocol import Errors
from kafkars.tools import client

METADATA, FIND_COORDINATOR, WRITE_TXN_MARKERS = 3, 10, 27
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
COORDINATOR_TYPE_TRANSACTION = 1


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Kafka's TransactionsCommand table: left-aligned columns, two spaces apart."""
    cells = [[str(h) for h in headers]] + [
        ["None" if v is None else str(v) for v in r] for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _check(code: int, what: str) -> None:
    if code != 0:
        name = Errors(code).name if code in Errors._value2member_map_ else str(code)
        raise click.ClickException(f"{what}: {name}")


class Context:
    def __init__(self, bootstrap: str, command_config: str | None) -> None:
        self.bootstrap = bootstrap
        self.config = client.read_properties(command_config)

    def connect(self) -> client.WireClient:
        return client.WireClient.connect(self.bootstrap, self.config)


@click.group(cls=client.ToolGroup)
@click.option("-b", "--bootstrap-server", default="127.0.0.1:9092", show_default=True)
@click.option("--command-config", help="Client properties file (security settings).")
@client.version_option()
@click.pass_context
def main(ctx: click.Context, bootstrap_server: str, command_config: str | None) -> None:
    """List, describe and abort transactions."""
    ctx.obj = Context(bootstrap_server, command_config)


@main.command(name="list")
@click.option(
    "--duration-filter",
    type=int,
    default=-1,
    help="Only transactions open for longer than this many milliseconds.",
)
@click.pass_obj
def list_(obj: Context, duration_filter: int) -> None:
    """List the transactions the coordinator knows."""
    wire = obj.connect()
    try:
        coordinator = _coordinator_id(wire, "")
        response = wire.call(
            LIST_TRANSACTIONS,
            1,
            {"state_filters": [], "producer_id_filters": [], "duration_filter": duration_filter},
        )
    finally:
        wire.close()
    _check(response["error_code"], "ListTransactions failed")
    rows = [
        (t["transactional_id"], coordinator, t["producer_id"], t["transaction_state"])
        for t in response["transaction_states"]
    ]
    _table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)


def _coordinator_id(wire: client.WireClient, transactional_id: str) -> int:
    """The coordinator's broker id (FindCoordinator with the transaction key type)."""
    response = wire.call(
        FIND_COORDINATOR,
        3,
        {"key": transactional_id or "-", "key_type": COORDINATOR_TYPE_TRANSACTION},
    )
    _check(response["error_code"], "FindCoordinator failed")
    return int(response["node_id"])


@main.command()
@click.option("--transactional-id", required=True, help="The transaction to describe.")
@click.pass_obj
def describe(obj: Context, transactional_id: str) -> None:
    """Describe one transaction: its producer, state, timeout and partitions."""
    wire = obj.connect()
    try:
        coordinator = _coordinator_id(wire, transactional_id)
        response = wire.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})
    finally:
        wire.close()
    state = response["transaction_states"][0]
    _check(state["error_code"], f"Failed to describe transaction {transactional_id}")
    ongoing = state["transaction_state"] == "Ongoing"
    start = state["transaction_start_time_ms"] if ongoing else None
    duration = int(time.time() * 1000) - start if start is not None and start >= 0 else None
    partitions = ",".join(f"{t['topic']}-{p}" for t in state["topics"] for p in t["partitions"])
    _table(
        [
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TransactionDurationMs",
            "TopicPartitions",
        ],
        [
            (
                coordinator,
                state["transactional_id"],
                state["producer_id"],
                state["producer_epoch"],
                state["transaction_state"],
                state["transaction_timeout_ms"],
                start,
                duration,
                partitions,
            )
        ],
    )


def _producers(wire: client.WireClient, topic: str, partition: int) -> list[dict[str, Any]]:
    response = wire.call(
        DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [partition]}]}
    )
    result = response["topics"][0]["partitions"][0]
    _check(result["error_code"], f"Failed to describe producers of {topic}-{partition}")
    return list(result["active_producers"])


@main.command(name="describe-producers")
@click.option("--topic", required=True)
@click.option("--partition", type=int, required=True)
@click.option("--broker-id", type=int, help="Ask this broker (the single broker answers).")
@click.pass_obj
def describe_producers(obj: Context, topic: str, partition: int, broker_id: int | None) -> None:
    """The producers with state on one partition and their open transactions."""
    wire = obj.connect()
    try:
        producers = _producers(wire, topic, partition)
    finally:
        wire.close()
    rows = [
        (
            p["producer_id"],
            p["producer_epoch"],
            p["coordinator_epoch"] if p["coordinator_epoch"] >= 0 else None,
            p["last_sequence"],
            p["last_timestamp"],
            p["current_txn_start_offset"] if p["current_txn_start_offset"] >= 0 else None,
        )
        for p in producers
    ]
    _table(
        [
            "ProducerId",
            "ProducerEpoch",
            "LatestCoordinatorEpoch",
            "LastSequence",
            "LastTimestamp",
            "CurrentTransactionStartOffset",
        ],
        rows,
    )


@main.command()
@click.option("--topic", required=True, help="The partition's topic.")
@click.option("--partition", type=int, required=True)
@click.option("--start-offset", type=int, help="First offset of the transaction to abort.")
@click.option("--producer-id", type=int, help="With --producer-epoch and --coordinator-epoch.")
@click.option("--producer-epoch", type=int)
@click.option("--coordinator-epoch", type=int)
@click.pass_obj
def abort(
    obj: Context,
    topic: str,
    partition: int,
    start_offset: int | None,
    producer_id: int | None,
    producer_epoch: int | None,
    coordinator_epoch: int | None,
) -> None:
    """Abort a hanging transaction on one partition."""
    wire = obj.connect()
    try:
        if start_offset is not None:
            matches = [
                p
                for p in _producers(wire, topic, partition)
                if p["current_txn_start_offset"] == start_offset
            ]
            if not matches:
                raise click.ClickException(
                    f"Could not find any open transactions starting at offset {start_offset} "
                    f"on partition {topic}-{partition}"
                )
            found = matches[0]
            producer_id, producer_epoch = found["producer_id"], found["producer_epoch"]
            coordinator_epoch = max(found["coordinator_epoch"], 0)
        elif None in (producer_id, producer_epoch, coordinator_epoch):
            raise click.UsageError(
                "give --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch"
            )
        marker = {
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "transaction_result": False,
            "coordinator_epoch": coordinator_epoch,
            "topics": [{"name": topic, "partition_indexes": [partition]}],
        }
        response = wire.call(WRITE_TXN_MARKERS, 1, {"markers": [marker]})
    finally:
        wire.close()
    code = response["markers"][0]["topics"][0]["partitions"][0]["error_code"]
    _check(code, f"Failed to abort the transaction of producer {producer_id}")
    click.echo(f"Aborted the transaction of producer {producer_id} on {topic}-{partition}")


def _partitions(
    wire: client.WireClient, topic: str | None, partition: int | None, broker_id: int | None
) -> list[tuple[str, int]]:
    """The partitions to search: one, a topic's, or every one `broker_id` leads."""
    if topic is not None and partition is not None:
        return [(topic, partition)]
    wanted = None if topic is None else [{"name": topic}]
    response = wire.call(METADATA, 12, {"topics": wanted, "allow_auto_topic_creation": False})
    out = []
    for t in response["topics"]:
        if t["error_code"] != 0:
            _check(t["error_code"], f"Failed to describe topic {t['name']}")
        for p in t["partitions"]:
            if broker_id is None or p["leader_id"] == broker_id:
                out.append((t["name"], p["partition_index"]))
    return sorted(out)


@main.command(name="find-hanging")
@click.option("--broker-id", type=int, help="Search the partitions this broker leads.")
@click.option("--topic", help="Search this topic's partitions.")
@click.option("--partition", type=int, help="With --topic: only this partition.")
@click.option(
    "--max-transaction-timeout",
    type=int,
    default=15,
    show_default=True,
    help="Minutes a transaction may stay open before it is a suspect.",
)
@click.pass_obj
def find_hanging(
    obj: Context,
    broker_id: int | None,
    topic: str | None,
    partition: int | None,
    max_transaction_timeout: int,
) -> None:
    """Open transactions older than the longest timeout that their coordinator does not
    know on that partition: candidates for `abort`."""
    if broker_id is None and topic is None:
        raise click.UsageError("give --broker-id or --topic")
    if partition is not None and topic is None:
        raise click.UsageError("--partition needs --topic")
    now = int(time.time() * 1000)
    limit_ms = max_transaction_timeout * 60 * 1000
    wire = obj.connect()
    rows = []
    try:
        for tp in _partitions(wire, topic, partition, broker_id):
            for p in _producers(wire, *tp):
                start = p["current_txn_start_offset"]
                if start < 0 or now - p["last_timestamp"] < limit_ms:
                    continue
                if _coordinator_has_it(wire, p["producer_id"], tp):
                    continue
                rows.append(
                    (
                        tp[0],
                        tp[1],
                        p["producer_id"],
                        p["producer_epoch"],
                        p["coordinator_epoch"],
                        start,
                        p["last_timestamp"],
                        (now - p["last_timestamp"]) // 60_000,
                    )
                )
    finally:
        wire.close()
    _table(
        [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ],
        rows,
    )


def _coordinator_has_it(wire: client.WireClient, producer_id: int, tp: tuple[str, int]) -> bool:
    """Whether the producer's transactional id has an open transaction on `tp`."""
    listed = wire.call(
        LIST_TRANSACTIONS,
        0,
        {"state_filters": ["Ongoing"], "producer_id_filters": [producer_id]},
    )
    ids = [t["transactional_id"] for t in listed["transaction_states"]]
    if not ids:
        return False
    described = wire.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ids})
    return any(
        s["error_code"] == 0
        and s["producer_id"] == producer_id
        and tp[1] in [p for t in s["topics"] if t["topic"] == tp[0] for p in t["partitions"]]
        for s in described["transaction_states"]
    )


if __name__ == "__main__":  # pragma: no cover
    main()
