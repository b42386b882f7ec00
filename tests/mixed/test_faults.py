"""Faults in a mixed cluster (issue 25, item 4): SIGKILL of the controller of each kind
and of a partition leader of each kind, under an idempotent acks=all producer, a
transactional producer and a consumer group committing offsets whose coordinators the
killed broker holds. The killed broker is started again and the cluster converges; then
0 acknowledged records lost, 0 written twice, every committed transaction whole and no
aborted record ever read read_committed, committed offsets never behind one seen or
acknowledged before.

Two clusters of three: Kafka brokers 1 and 2 with kafkars broker 3 (Kafka's broker 1 the
controller), and Kafka broker 1 with kafkars brokers 2 and 3 (kafkars' broker 2 the
controller), so each leader killed has a controller of the other kind."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer

from .conftest import LONG, SESSION_TIMEOUT_MS, MixedCluster, mixed_cluster, needs_mixed
from .load import QUIET, Leaderless, Load, coordinated_by
from .test_mixed import create_topic, metadata, wait_for

pytestmark = needs_mixed

OFFSETS = "__consumer_offsets"
TXN_STATE = "__transaction_state"
# offsets.topic.num.partitions and transaction.state.log.num.partitions (conftest).
INTERNAL_PARTITIONS = 5
# How long the load runs with the broker down and after it is back: `make mixed` runs
# longer and kills the broker twice.
UNDER_FAULT = 8.0 if LONG else 1.0
ROUNDS = 2 if LONG else 1

# The cluster shapes: (Kafka brokers, kafkars brokers, kafkars first) and the faults run
# on each in turn, a leader's first (the controller then still the first broker up).
SHAPES = {
    "kafka-controller": ((2, 1, False), [("kafkars-leader", 3), ("kafka-controller", 1)]),
    "kafkars-controller": ((1, 2, True), [("kafka-leader", 1), ("kafkars-controller", 2)]),
}


@pytest.fixture(
    params=[
        # About 100 s each: the CI runs the one where a Kafka follower rejoins from a
        # kafkars leader and the kafkars controller fails over; `make mixed` both.
        pytest.param("kafka-controller", marks=pytest.mark.long),
        "kafkars-controller",
    ]
)
def shape(request: pytest.FixtureRequest) -> Iterator[tuple[MixedCluster, list[tuple[str, int]]]]:
    (kafka, ours, ours_first), faults = SHAPES[request.param]
    for cluster in mixed_cluster(kafka, ours, ours_first=ours_first):
        yield cluster, faults


def create_internal_topics(cluster: MixedCluster) -> None:
    """__consumer_offsets (FindCoordinator for a group) and __transaction_state
    (InitProducerId), each with a leader for every partition."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "warm-up", **QUIET})
    wait_for(lambda: c.committed([], timeout=5) is not None, 60, f"{OFFSETS}")
    c.close()
    p = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "warm-up", **QUIET}
    )
    p.init_transactions(60)
    first = cluster.running()[0]
    for topic in (OFFSETS, TXN_STATE):
        wait_for(
            lambda t=topic: (
                all(md.leader >= 0 for md in metadata(cluster, first, t).partitions.values())
                and len(metadata(cluster, first, t).partitions) == INTERNAL_PARTITIONS
            ),
            60,
            f"{topic}'s leaders",
        )


def converged(cluster: MixedCluster, topics: dict[str, int], size: int) -> bool:
    """Every running broker's metadata gives every partition a leader and an ISR of all."""
    return all(
        len(md.partitions) == partitions
        and all(p.leader >= 0 and len(p.isrs) == size for p in md.partitions.values())
        for b in cluster.running()
        for topic, partitions in topics.items()
        for md in [metadata(cluster, b, topic)]
    )


def test_sigkill(shape: tuple[MixedCluster, list[tuple[str, int]]]) -> None:
    cluster, faults = shape
    create_internal_topics(cluster)
    for name, victim in faults:
        sigkill(cluster, name, victim)


def sigkill(cluster: MixedCluster, name: str, victim: int) -> None:
    """Load running, `victim` killed (ROUNDS times), started again, the cluster
    converged; then the load's checks."""
    controller = cluster.controller()
    if name.endswith("controller"):
        assert controller == victim
    else:
        assert controller != victim and cluster.kind(controller) != cluster.kind(victim)
    # Partition 0 led by the victim with a follower of the other kind, partition 1 the
    # other way round (the victim a follower).
    other = next(b for b in cluster.running() if cluster.kind(b) != cluster.kind(victim))
    third = next(b for b in cluster.running() if b not in (victim, other))
    assignment = [[victim, other, third], [other, victim, third]]
    topic = create_topic(cluster, other, assignment)
    txn_topic = create_topic(cluster, other, assignment)
    group = coordinated_by(cluster, OFFSETS, victim, f"group-{name}")
    transactional_id = coordinated_by(cluster, TXN_STATE, victim, f"txn-{name}")
    topics = {topic: 2, txn_topic: 2, OFFSETS: INTERNAL_PARTITIONS, TXN_STATE: INTERNAL_PARTITIONS}

    started = time.monotonic()
    marks: list[str] = []

    def mark(what: str) -> None:
        marks.append(f"{what} {time.monotonic() - started:.0f}")

    load = Load(cluster, topic, txn_topic, 2, group, transactional_id)
    with Leaderless(cluster, topics) as leaderless:
        load.start()
        try:
            load.wait_progress(60, "before the fault")
            for _ in range(ROUNDS):
                mark("kill")
                cluster.kill(victim)
                leaderless.dead.add(victim)
                survivor = next(b for b in cluster.running())
                wait_for(
                    lambda s=survivor: (
                        metadata(cluster, s, topic).partitions[0].leader not in (-1, victim)
                    ),
                    SESSION_TIMEOUT_MS / 1000 + 30,
                    "a new leader of partition 0",
                )
                mark("new leader")
                if name.endswith("controller"):
                    assert cluster.controller() not in (-1, victim)
                load.wait_progress(60, "with the broker down")
                time.sleep(UNDER_FAULT)
                mark("restart")
                cluster.start_broker(victim)
                leaderless.dead.discard(victim)
                mark("started")
                wait_for(lambda: converged(cluster, topics, 3), 90, "a full ISR everywhere")
                mark("converged")
                load.wait_progress(60, "after the restart")
                time.sleep(UNDER_FAULT)
        finally:
            load.stop()
    mark("stopped")
    figures = load.verify(leaderless.longest)
    mark("verified")
    print(f"SIGKILL {name} (broker {victim}): {figures.line()}; at s: {', '.join(marks)}")
    assert figures.acknowledged > 0 and figures.transactions_committed > 0
    assert figures.lost == 0 and figures.duplicated == 0, figures
    assert figures.committed_records_lost == 0 and figures.aborted_records_seen == 0, figures
    assert figures.group_commits > 0 and figures.offsets_backwards == 0, figures
    assert not figures.notes, figures.notes
    assert_no_failed_partitions(cluster)


def assert_no_failed_partitions(cluster: MixedCluster) -> None:
    """A Kafka follower that cannot take what a leader sent (a batch starting before its
    log end, as when a leader ignores the follower's last fetched epoch) stops fetching
    that partition: "marked as failed". Kafka marks one failed too when its leader is a
    newer epoch ahead (FENCED_LEADER_EPOCH, "has an older epoch"), waiting for the
    controller's LeaderAndIsr, which the converged ISR shows came: not counted."""
    for broker_id, kafka in cluster.kafka.items():
        lines = kafka.log(10_000_000).splitlines()
        failed = []
        for i, line in enumerate(lines):
            if "marked as failed" not in line:
                continue
            name = line.split("Partition ")[-1].split(" ")[0]
            fenced = f"Partition {name} has an older epoch"
            # Other threads' lines may come between the two.
            if not any(fenced in earlier for earlier in lines[max(0, i - 50) : i]):
                failed.append((i, name))
        # The lines about the failed partition before the mark: why it was failed.
        context = (
            [line[:500] for line in lines[: failed[0][0] + 1] if failed[0][1] in line]
            if failed
            else []
        )
        assert not failed, f"Kafka broker {broker_id}: " + "\n".join(context[-8:])
