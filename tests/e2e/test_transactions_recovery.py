"""Kill -9 the broker in the middle of a transaction and restart it: the open
transaction aborts on its timeout, committed ones stay committed, read_committed never
shows aborted records, and the transactional id carries on with a new epoch."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Producer
from test_transactions import create_topic, read_values

from kafkars.broker import Broker

RECOVERY_CONFIG = {
    # Check for timed-out transactions often, so the test waits seconds, not minutes.
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 300,
}


def test_kill_mid_transaction_then_restart(make_broker: Callable[..., Broker], topic: str) -> None:
    broker = make_broker(config=RECOVERY_CONFIG)
    create_topic(broker, topic)
    txn_id = f"recover-{topic}"
    settings = {
        "bootstrap.servers": broker.bootstrap_servers,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 3000,
    }
    committed = [f"c{i}".encode() for i in range(5)]
    p = Producer(settings)
    p.init_transactions(20)
    p.begin_transaction()
    for v in committed:
        p.produce(topic, value=v, partition=0)
    p.commit_transaction(20)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"open{i}".encode(), partition=0)
    p.flush(10)

    broker.kill()  # SIGKILL with the transaction open
    del p
    broker.start()
    started = time.monotonic()

    # The committed records are readable at once; the open transaction's never are.
    assert read_values(broker, topic, "read_committed", len(committed)) == committed
    # Its timeout aborts it and the last stable offset moves past it.
    fresh = Producer({**settings, "bootstrap.servers": broker.bootstrap_servers})
    fresh.init_transactions(30)
    fresh.begin_transaction()
    fresh.produce(topic, value=b"after", partition=0)
    fresh.commit_transaction(20)
    assert time.monotonic() - started < 30
    assert read_values(broker, topic, "read_committed", 6) == [*committed, b"after"]
    everything = read_values(broker, topic, "read_uncommitted", 9)
    assert sorted(everything) == sorted([*committed, b"open0", b"open1", b"open2", b"after"])

    # A clean restart keeps every decision.
    broker.restart()
    assert read_values(broker, topic, "read_committed", 6) == [*committed, b"after"]


def test_transaction_state_survives_a_kill(make_broker: Callable[..., Broker], topic: str) -> None:
    """The coordinator reloads `__transaction_state`: after a kill -9 the same
    transactional id resumes with a higher epoch, and the old instance is fenced."""
    broker = make_broker(config=RECOVERY_CONFIG)
    create_topic(broker, topic)
    settings = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"s-{topic}"}
    first = Producer(settings)
    first.init_transactions(20)
    first.begin_transaction()
    first.produce(topic, value=b"one", partition=0)
    first.commit_transaction(20)
    broker.kill()
    broker.start()
    second = Producer({**settings, "bootstrap.servers": broker.bootstrap_servers})
    second.init_transactions(30)
    second.begin_transaction()
    second.produce(topic, value=b"two", partition=0)
    second.commit_transaction(20)
    assert read_values(broker, topic, "read_committed", 2) == [b"one", b"two"]


def test_transactional_offsets_reload_after_a_kill(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    """`__consumer_offsets` replays transactional offset commits: a committed
    transaction's offsets are the group's after a kill -9, an aborted one's are not."""
    from confluent_kafka import Consumer, TopicPartition

    broker = make_broker(config=RECOVERY_CONFIG)
    create_topic(broker, topic)
    group = f"g-{topic}"
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": group})
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    p.init_transactions(20)
    for offset, commit in ((5, True), (9, False)):
        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        metadata = c.consumer_group_metadata()
        p.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], metadata, 20)
        if commit:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)
    c.close()
    broker.kill()
    broker.start()
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    assert c.committed([TopicPartition(topic, 0)], 10)[0].offset == 5
    c.close()
