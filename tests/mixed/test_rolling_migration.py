"""The rolling migration (issue 25, item 3): three Kafka 3.9 brokers, an RF=3 topic and
the internal topics at RF=3, an idempotent acks=all producer running; each Kafka broker is
stopped (controlled shutdown) and a kafkars broker started with its broker.id, log dir and
port, one at a time, then back. A transactional producer and a consumer group committing
offsets run too, their coordinators moving between the kinds with the internal topics'
leaders. Counts what was acknowledged, lost and written twice, the transactions and
group commits (no committed record lost, no aborted one read, no committed offset going
back), and the longest time a partition had no live leader (from the partition state
znodes)."""

from __future__ import annotations

import time

import pytest

from .conftest import MixedCluster, mixed_cluster, needs_mixed
from .load import Leaderless, Load
from .test_faults import (
    INTERNAL_PARTITIONS,
    OFFSETS,
    TXN_STATE,
    assert_no_failed_partitions,
    create_internal_topics,
)
from .test_mixed import create_topic, isr, wait_for

pytestmark = [needs_mixed]


@pytest.fixture
def kafka_trio():  # type: ignore[no-untyped-def]
    yield from mixed_cluster(3, 0)


# CI migrates the three brokers to kafkars; `make mixed` goes there and back again.
@pytest.mark.parametrize(
    "back",
    [
        pytest.param(False, id="to-kafkars"),
        pytest.param(True, id="and-back", marks=pytest.mark.long),
    ],
)
def test_rolling_migration(kafka_trio: MixedCluster, back: bool) -> None:
    cluster = kafka_trio
    everyone = [1, 2, 3]
    assignment = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    topic = create_topic(cluster, 1, assignment)
    txn_topic = create_topic(cluster, 1, assignment)
    create_internal_topics(cluster)
    topics = {topic: 3, txn_topic: 3, OFFSETS: INTERNAL_PARTITIONS, TXN_STATE: INTERNAL_PARTITIONS}
    started = time.monotonic()
    load = Load(cluster, topic, txn_topic, 3, "migrating-group", "migrating-txn")
    with Leaderless(cluster, topics) as leaderless:
        load.start()
        try:
            load.wait_progress(60, "before the migration")
            steps = [(cluster.replace_with_ours, b) for b in everyone]
            if back:
                steps += [(cluster.replace_with_kafka, b) for b in everyone]
            for replace, broker_id in steps:
                replace(broker_id)
                for t, partitions in topics.items():
                    for p in range(partitions):
                        wait_for(
                            lambda t=t, p=p: all(
                                isr(cluster, b, t, p) == everyone for b in everyone
                            ),
                            60,
                            f"a full ISR of {t}-{p} after replacing broker {broker_id}",
                        )
                load.wait_progress(60, f"after replacing broker {broker_id}")
        finally:
            load.stop()
    figures = load.verify(leaderless.longest)
    errors = [e for p in load.producers for e in p.errors]
    print(
        f"rolling migration: {figures.line()}, {len(errors)} delivery errors, "
        f"{time.monotonic() - started:.0f} s"
    )
    kafka, ours = (everyone, []) if back else ([], everyone)
    assert sorted(cluster.our_ids) == ours and sorted(cluster.kafka_ids) == kafka
    assert figures.lost == 0 and figures.duplicated == 0, figures
    assert figures.committed_records_lost == 0 and figures.aborted_records_seen == 0, figures
    assert figures.offsets_backwards == 0 and not figures.notes, figures
    assert_no_failed_partitions(cluster)
