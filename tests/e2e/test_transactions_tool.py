"""kafkars-transactions against a real broker: list, describe, describe-producers, and
abort of a hanging transaction by its start offset."""

from __future__ import annotations

from click.testing import CliRunner, Result
from confluent_kafka import Producer
from test_transactions import create_topic, read_values

from kafkars.broker import Broker
from kafkars.tools import transactions


def run(broker: Broker, *args: str) -> Result:
    return CliRunner().invoke(
        transactions.main,
        ["--bootstrap-server", broker.bootstrap_servers, *args],
        catch_exceptions=False,
    )


def test_list_describe_and_abort(broker: Broker, topic: str) -> None:
    create_topic(broker, topic)
    txn_id = f"tool-{topic}"
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, value=b"committed", partition=0)
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce(topic, value=b"hanging", partition=0)
    p.flush(10)

    listed = run(broker, "list")
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.output.splitlines()
    assert header.split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    mine = [r.split() for r in rows if r.split()[0] == txn_id]
    assert len(mine) == 1 and mine[0][3] == "Ongoing"
    producer_id = mine[0][2]

    described = run(broker, "describe", "--transactional-id", txn_id)
    assert described.exit_code == 0, described.output
    header, row = described.output.splitlines()
    assert header.split()[:5] == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
    ]
    fields = row.split()
    assert fields[1:3] == [txn_id, producer_id] and fields[4] == "Ongoing"
    assert fields[-1] == f"{topic}-0"

    missing = run(broker, "describe", "--transactional-id", "no-such-id")
    assert missing.exit_code == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.output

    producers = run(broker, "describe-producers", "--topic", topic, "--partition", "0")
    assert producers.exit_code == 0, producers.output
    header, row = producers.output.splitlines()
    assert header.split()[-1] == "CurrentTransactionStartOffset"
    # The committed record and its marker come first: the open transaction starts at 2.
    assert row.split()[0] == producer_id and row.split()[-1] == "2"

    # Abort the hanging transaction on the partition, as an operator would.
    aborted = run(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "2")
    assert aborted.exit_code == 0, aborted.output
    assert read_values(broker, topic, "read_committed", 1) == [b"committed"]
    none_open = run(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "2")
    assert none_open.exit_code == 1 and "Could not find any open transactions" in none_open.output
