"""kafkars-transactions against a real broker: list, describe, describe-producers,
find-hanging, and abort of a hanging transaction by its start offset."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import CliRunner, Result
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from test_transactions import Connection, create_topic, read_values

from kafkars import _core
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


def test_find_hanging_then_abort(make_broker: Callable[..., Broker], topic: str) -> None:
    """A transactional batch its coordinator never heard of (written with KIP-890's
    check off) hangs: find-hanging lists it, an open transaction the coordinator knows
    is not listed, and abort ends it."""
    broker = make_broker(config={"transaction.partition.verification.enable": False})
    create_topic(broker, topic, partitions=2)
    known = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic})
    known.init_transactions(20)
    known.begin_transaction()
    known.produce(topic, value=b"open", partition=1)
    known.flush(10)

    conn = Connection(broker)
    try:
        batch = _core.build_batch(
            [(None, b"stray", 1000, [])],
            producer_id=987_654,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        body = {
            "transactional_id": "nobody",
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        produced = conn.call(0, 9, body)["responses"][0]["partition_responses"][0]
        assert produced["error_code"] == 0
    finally:
        conn.close()

    found = run(broker, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
    assert found.exit_code == 0, found.output
    header, *rows = found.output.splitlines()
    assert header.split()[:3] == ["Topic", "Partition", "ProducerId"]
    assert [r.split()[:3] for r in rows] == [[topic, "0", "987654"]]

    aborted = run(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert aborted.exit_code == 0, aborted.output
    broker_id = str(
        next(
            iter(
                AdminClient({"bootstrap.servers": broker.bootstrap_servers})
                .list_topics(timeout=10)
                .brokers
            )
        )
    )
    again = run(broker, "find-hanging", "--broker-id", broker_id, "--max-transaction-timeout", "0")
    assert again.exit_code == 0 and len(again.output.splitlines()) == 1, again.output
    known.commit_transaction(20)
    assert read_values(broker, topic, "read_committed", 1) == [b"open"]
