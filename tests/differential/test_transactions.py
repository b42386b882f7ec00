"""Transactions and producers: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit, DescribeProducers, DescribeTransactions, ListTransactions.

Apache Kafka runs with `transaction.version=1` (conftest): kafkars implements the
classic transaction protocol, and a client picks the protocol from that feature."""

from __future__ import annotations

import time
from typing import Any

from kafkars.protocol import ApiKey

from .compare import Pair
from .test_groups import find_coordinator
from .test_records import seed

TXN = 1


def init(txn_id: str | None, timeout_ms: int = 60000) -> dict[str, Any]:
    return {
        "transactional_id": txn_id,
        "transaction_timeout_ms": timeout_ms,
        "producer_id": -1,
        "producer_epoch": -1,
        "enable_2_pc": False,
        "keep_prepared_txn": False,
    }


RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def init_producer_id(pair: Pair, body: dict[str, Any]) -> dict[str, Any]:
    """InitProducerId on both until neither answers a retriable error (Kafka's first
    answers wait for its transaction log and its producer id block)."""
    deadline = time.monotonic() + 30
    while True:
        answers = pair.call(ApiKey.INIT_PRODUCER_ID, 4, body)
        codes = {r["error_code"] for r in answers.values()}
        if not codes & RETRIABLE:
            for broker, r in answers.items():
                assert r["error_code"] == 0, (broker, r)
            return answers
        assert time.monotonic() < deadline, answers
        time.sleep(0.1)


class Producer:
    """A transactional producer on each broker (ids differ)."""

    def __init__(self, pair: Pair, txn_id: str) -> None:
        self.pair, self.txn_id = pair, txn_id
        find_coordinator(pair, txn_id, key_type=TXN)
        answers = init_producer_id(pair, init(txn_id))
        self.ids = {b: (r["producer_id"], r["producer_epoch"]) for b, r in answers.items()}

    def check(
        self, api_key: int, body: Any, scenario: str, epoch_delta: int = 0, **kw: Any
    ) -> list[dict[str, dict[str, Any]]]:
        """`pair.check` with each broker's producer id and epoch put in the body."""
        real_call = self.pair.call

        def call(key: int, version: int, request: dict[str, Any]) -> dict[str, Any]:
            both = {}
            for broker, conn in self.pair.conns.items():
                pid, epoch = self.ids[broker]
                filled = _fill(request, pid, epoch + epoch_delta)
                both[broker] = conn.call(key, version, filled)
            return both

        self.pair.call = call  # type: ignore[method-assign]
        try:
            return self.pair.check(api_key, body, scenario=scenario, **kw)
        finally:
            self.pair.call = real_call  # type: ignore[method-assign]


PID, EPOCH = "<producer id>", "<producer epoch>"


def _fill(value: Any, pid: int, epoch: int) -> Any:
    if value == PID:
        return pid
    if value == EPOCH:
        return epoch
    if isinstance(value, dict):
        return {k: _fill(v, pid, epoch) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, pid, epoch) for v in value]
    return value


def add_partitions(txn_id: str, topic: str, version: int, partitions: list[int]) -> Any:
    if version >= 4:
        return {
            "transactions": [
                {
                    "transactional_id": txn_id,
                    "producer_id": PID,
                    "producer_epoch": EPOCH,
                    "verify_only": False,
                    "topics": [{"name": topic, "partitions": partitions}],
                }
            ]
        }
    return {
        "v3_and_below_transactional_id": txn_id,
        "v3_and_below_producer_id": PID,
        "v3_and_below_producer_epoch": EPOCH,
        "v3_and_below_topics": [{"name": topic, "partitions": partitions}],
    }


def end(txn_id: str, commit: bool) -> dict[str, Any]:
    return {
        "transactional_id": txn_id,
        "producer_id": PID,
        "producer_epoch": EPOCH,
        "committed": commit,
    }


def test_init_producer_id(pair: Pair, name: str) -> None:
    init_producer_id(pair, init(None))
    pair.check(ApiKey.INIT_PRODUCER_ID, init(None), scenario="idempotent producer")
    for version in pair.versions(ApiKey.INIT_PRODUCER_ID):
        txn_id = f"{name}-v{version}"
        find_coordinator(pair, txn_id, key_type=TXN)
        pair.check(
            ApiKey.INIT_PRODUCER_ID, init(txn_id), scenario="transactional", versions=[version]
        )
    pair.check(
        ApiKey.INIT_PRODUCER_ID,
        init(f"{name}-long", timeout_ms=10_000_000),
        scenario="timeout above transaction.max.timeout.ms",
    )


def test_transaction_flow(pair: Pair, name: str) -> None:
    seed(pair, name, partitions=2)
    # Clients send v3 from one producer (v4+ is the brokers' batched form).
    client_versions = [v for v in pair.versions(ApiKey.ADD_PARTITIONS_TO_TXN) if v <= 3]
    for version in client_versions:
        producer = Producer(pair, f"{name}-v{version}")
        producer.check(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            add_partitions(producer.txn_id, name, version, [0, 1]),
            "add partitions",
            versions=[version],
        )
        producer.check(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            add_partitions(producer.txn_id, name, version, [0]),
            "add the same partition again",
            versions=[version],
        )
        producer.check(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            add_partitions(producer.txn_id, f"{name}-missing", version, [0]),
            "unknown topic",
            versions=[version],
        )
        producer.check(ApiKey.END_TXN, end(producer.txn_id, commit=False), "abort", versions=[3])


def test_end_txn_every_version(pair: Pair, name: str) -> None:
    seed(pair, name)
    for version in pair.versions(ApiKey.END_TXN):
        producer = Producer(pair, f"{name}-v{version}")
        producer.check(
            ApiKey.END_TXN,
            end(producer.txn_id, commit=True),
            "commit with nothing added",
            versions=[version],
        )
        producer.check(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            add_partitions(producer.txn_id, name, 3, [0]),
            "add partitions",
            versions=[3],
        )
        producer.check(
            ApiKey.END_TXN,
            end(producer.txn_id, commit=True),
            "commit",
            versions=[version],
        )


def test_fencing_and_wrong_ids(pair: Pair, name: str) -> None:
    seed(pair, name)
    producer = Producer(pair, name)
    producer.check(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        add_partitions(name, name, 3, [0]),
        "stale epoch",
        epoch_delta=-1,
        versions=[3],
    )
    producer.check(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        add_partitions(name, name, 3, [0]),
        "epoch from the future",
        epoch_delta=3,
        versions=[3],
    )
    producer.check(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        add_partitions(f"{name}-other", name, 3, [0]),
        "transactional id never initialised",
        versions=[3],
    )
    producer.check(ApiKey.END_TXN, end(name, commit=False), "abort with nothing added")


def test_offsets_in_a_transaction(pair: Pair, name: str) -> None:
    seed(pair, name)
    group = f"{name}-group"
    find_coordinator(pair, group)
    for version in pair.versions(ApiKey.ADD_OFFSETS_TO_TXN):
        producer = Producer(pair, f"{name}-v{version}")
        producer.check(
            ApiKey.ADD_OFFSETS_TO_TXN,
            {
                "transactional_id": producer.txn_id,
                "producer_id": PID,
                "producer_epoch": EPOCH,
                "group_id": group,
            },
            "add a group",
            versions=[version],
        )

        def txn_commit(v: int, txn_id: str = producer.txn_id) -> dict[str, Any]:
            return {
                "transactional_id": txn_id,
                "group_id": group,
                "producer_id": PID,
                "producer_epoch": EPOCH,
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": name,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 2,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            }

        txn_versions = pair.versions(ApiKey.TXN_OFFSET_COMMIT)
        producer.check(
            ApiKey.TXN_OFFSET_COMMIT,
            txn_commit,
            "commit offsets",
            versions=txn_versions[version % len(txn_versions) :][:2],
        )
        producer.check(ApiKey.END_TXN, end(producer.txn_id, commit=True), "commit", versions=[3])


def test_describe_and_list(pair: Pair, name: str) -> None:
    seed(pair, name)
    producer = Producer(pair, name)
    producer.check(
        ApiKey.ADD_PARTITIONS_TO_TXN, add_partitions(name, name, 3, [0]), "add", versions=[3]
    )
    pair.check(
        ApiKey.DESCRIBE_TRANSACTIONS,
        {"transactional_ids": [name, f"{name}-missing"]},
        scenario="ongoing and unknown",
    )
    pair.check(
        ApiKey.LIST_TRANSACTIONS,
        {"state_filters": ["Ongoing"], "producer_id_filters": [], "duration_filter": -1},
        scenario="ongoing",
    )
    pair.check(
        ApiKey.DESCRIBE_PRODUCERS,
        {"topics": [{"name": name, "partition_indexes": [0, 4]}]},
        scenario="idempotent producer's partition and unknown partition",
    )
    producer.check(ApiKey.END_TXN, end(name, commit=False), "abort", versions=[3])
