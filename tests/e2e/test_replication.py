"""The replication byte path between two real brokers over TCP, driven by hand (the
controller's part, LeaderAndIsr, is played by the test): the Rust replica fetcher copies
the leader's batches as they are, the leader's high watermark and ISR follow the
follower's fetches, acks=all waits for the follower, and a returning follower truncates
the records the new leader never had (leader epochs, OffsetForLeaderEpoch)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kafkars import _core, codec
from kafkars.broker import Broker

TOPIC = "replicated"


@pytest.fixture
def pair() -> Iterator[tuple[Broker, Broker]]:
    with (
        Broker(config={"broker.id": 1, "auto.create.topics.enable": False}) as a,
        Broker(config={"broker.id": 2, "auto.create.topics.enable": False}) as b,
    ):
        yield a, b


def settings(broker: Broker) -> dict[str, Any]:
    return broker._server.dynamic_config.storage_config({})


def lead(broker: Broker, epoch: int, isr: list[int]) -> Any:
    server = broker._server
    if server.metadata_cache.get(TOPIC) is None:
        server.controller.create_topic(TOPIC, 1, {})
    return server.replica_manager.become_leader(
        TOPIC, 0, settings(broker), leader_epoch=epoch, replicas=[1, 2], isr=isr
    )


def follow(broker: Broker, leader: Broker, leader_id: int, epoch: int) -> Any:
    return broker._server.replica_manager.become_follower(
        TOPIC,
        0,
        settings(broker),
        leader_id,
        epoch,
        [1, 2],
        [leader_id],
        leader_endpoint=(leader.host, leader.listeners[0][3]),
    )


def produce(broker: Broker, count: int, acks: str, prefix: str) -> list[int]:
    offsets: list[int] = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": acks, "linger.ms": 0})
    for i in range(count):
        p.produce(
            TOPIC,
            f"{prefix}{i}".encode(),
            partition=0,
            on_delivery=lambda e, m: offsets.append(m.offset()) if e is None else None,
        )
    assert p.flush(15) == 0
    return offsets


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def log_bytes(partition: Any) -> bytes:
    log = partition.log
    return log.read(log.log_start_offset, 1 << 30, log.log_end_offset, True).read_bytes()


def values(partition: Any) -> list[bytes | None]:
    return [r.value for b in codec.decode_batches(log_bytes(partition)) for r in b.records()]


def test_follower_copies_the_leader_and_acks_all_waits_for_it(
    pair: tuple[Broker, Broker],
) -> None:
    a, b = pair
    leader = lead(a, epoch=1, isr=[1])
    follower = follow(b, a, leader_id=1, epoch=1)
    produce(a, 50, "1", "a")
    wait_for(lambda: follower.log.log_end_offset == 50 and follower.high_watermark == 50)
    # The follower's next fetch reaches the high watermark: it joins the ISR.
    wait_for(lambda: leader.isr == [1, 2])
    assert a._server.replica_manager.take_isr_expansions() == [(TOPIC, 0, [1, 2])]
    # The follower holds the leader's batches byte for byte (offsets, epochs, CRCs).
    assert log_bytes(follower) == log_bytes(leader)
    # acks=all is answered once the follower has the records too.
    offsets = produce(a, 20, "all", "b")
    assert sorted(offsets) == list(range(50, 70))
    assert follower.log.log_end_offset >= 70
    assert leader.high_watermark == 70


def test_a_silent_follower_leaves_the_isr(pair: tuple[Broker, Broker]) -> None:
    a, b = pair
    leader = lead(a, epoch=1, isr=[1])
    follower = follow(b, a, leader_id=1, epoch=1)
    produce(a, 5, "1", "a")
    wait_for(lambda: leader.isr == [1, 2])
    # The follower stops fetching; past the lag time the leader drops it. (A fetch already
    # parked on the leader still lands within replica.fetch.wait.max.ms, 500 ms.)
    b._server.replica_fetchers.remove_partitions([(TOPIC, 0)])
    time.sleep(1.0)
    assert a._server.replica_manager.maybe_shrink_isr(300) == [(TOPIC, 0, [1])]
    assert leader.isr == [1]
    assert follower.log.log_end_offset == 5


def test_a_returning_follower_truncates_what_the_new_leader_never_had(
    pair: tuple[Broker, Broker],
) -> None:
    a, b = pair
    lead(a, epoch=1, isr=[1])
    follower = follow(b, a, leader_id=1, epoch=1)
    produce(a, 10, "1", "common")
    wait_for(lambda: follower.log.log_end_offset == 10)
    # B becomes leader at epoch 2 and takes records A never copies...
    b._server.replica_fetchers.remove_partitions([(TOPIC, 0)])
    a._server.replica_manager.become_follower(TOPIC, 0, settings(a), 2, 2, [1, 2], [2])
    lead(b, epoch=2, isr=[2])
    produce(b, 5, "1", "lost")
    assert follower.log.log_end_offset == 15
    # ...then A leads again at epoch 3 with records of its own, and B follows it.
    new_leader = lead(a, epoch=3, isr=[1])
    produce(a, 3, "1", "kept")
    follow(b, a, leader_id=1, epoch=3)
    wait_for(lambda: follower.log.log_end_offset == 13 and follower.high_watermark == 13)
    assert values(follower) == values(new_leader)
    assert not any(v and v.startswith(b"lost") for v in values(follower))
    assert follower.log.end_offset_for_epoch(2) == (1, 10), "epoch 2 is gone from B"
    assert isinstance(new_leader, _core.Partition)
