"""The `__transaction_state` records, in Kafka's formats: `TransactionLogKey` and
`TransactionLogValue`, messages generated from Kafka's schemas into kafka-protocol and
encoded by `_core.protocol.encode_record` (see vendor/README.md).

Key: record type 0 (`TransactionLogKey`) and the transactional id. Value:
`TransactionLogValue` v0, what Kafka 3.9/4.0 write without transaction version 2 (v1
adds tagged fields for KIP-890's epoch bump on every transaction, which this broker does
not do); both versions are read. A null value is a tombstone: the id expired.
"""

from __future__ import annotations

from typing import Any

from kafkars import _core
from kafkars.coordinator.group.records import partition_for
from kafkars.coordinator.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
)

TRANSACTION_LOG_KEY_VERSION = 0  # Kafka's record type of the key
TRANSACTION_LOG_VALUE_VERSION = 0

__all__ = ["key", "partition_for", "read_key", "read_value", "record_type", "value"]


def key(transactional_id: str) -> bytes:
    return _core.protocol.encode_record(
        "TransactionLogKey", TRANSACTION_LOG_KEY_VERSION, {"transactional_id": transactional_id}
    )


def record_type(data: bytes) -> int:
    """The int16 record type a key starts with."""
    if len(data) < 2:
        raise ValueError("key shorter than its record type")
    return int.from_bytes(data[:2], "big", signed=True)


def read_key(data: bytes) -> str | None:
    """The transactional id, or None for a record type this coordinator does not own."""
    if record_type(data) != TRANSACTION_LOG_KEY_VERSION:
        return None
    _, k = _core.protocol.decode_record("TransactionLogKey", data)
    return str(k["transactional_id"])


def value(txn: TransactionMetadata) -> bytes:
    """The stored form of `txn` (an Empty transaction has no partitions, as Kafka
    requires; others list theirs)."""
    partitions = None
    if txn.state is not TransactionState.EMPTY:
        partitions = [{"topic": t, "partition_ids": ids} for t, ids in txn.topics()]
    return _core.protocol.encode_record(
        "TransactionLogValue",
        TRANSACTION_LOG_VALUE_VERSION,
        {
            "producer_id": txn.producer_id,
            "producer_epoch": txn.producer_epoch,
            "transaction_timeout_ms": txn.txn_timeout_ms,
            "transaction_status": txn.state.id,
            "transaction_partitions": partitions,
            "transaction_last_update_timestamp_ms": txn.txn_last_update_timestamp,
            "transaction_start_timestamp_ms": txn.txn_start_timestamp,
        },
    )


def read_value(transactional_id: str, data: bytes) -> TransactionMetadata:
    _, v = _core.protocol.decode_record("TransactionLogValue", data)
    state = TransactionState.from_id(v["transaction_status"])
    partitions: set[tuple[str, int]] = set()
    if state is not TransactionState.EMPTY:
        for t in v["transaction_partitions"] or []:
            partitions.update((t["topic"], p) for p in t["partition_ids"])
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=v["producer_id"],
        producer_epoch=v["producer_epoch"],
        txn_timeout_ms=v["transaction_timeout_ms"],
        state=state,
        partitions=partitions,
        txn_start_timestamp=v["transaction_start_timestamp_ms"],
        txn_last_update_timestamp=v["transaction_last_update_timestamp_ms"],
    )


def describe_record(key_bytes: bytes, value_bytes: bytes | None) -> dict[str, Any]:
    """A readable form of one record, for tools and tests."""
    txn_id = read_key(key_bytes)
    if txn_id is None:
        return {"type": "unknown"}
    out: dict[str, Any] = {"type": "transaction", "transactional_id": txn_id}
    if value_bytes is not None:
        t = read_value(txn_id, value_bytes)
        out["value"] = {
            "producer_id": t.producer_id,
            "producer_epoch": t.producer_epoch,
            "state": t.state.state_name,
            "partitions": t.topics(),
            "timeout_ms": t.txn_timeout_ms,
        }
    return out
