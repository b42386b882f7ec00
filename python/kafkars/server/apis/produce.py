"""Produce: Python checks each partition; Rust appends, waits and answers.

The handler resolves every partition to its `_core.Partition` handle or to the error it
gets (unknown topic, bad acks, KIP-890 verification) and hands them to
`_core.ReplicaManager.produce`, which validates (the Rust LogValidator: CRC, structure,
keys of compacted topics, CreateTime bounds, with per-record errors) and appends them
with the GIL released, builds the response and sends it, or for acks=-1 parks it in the
Rust produce purgatory until the high watermarks reach the appends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

# (index, Partition or None, error_code, error_message, record_errors, records)
PlannedAppend = tuple[int, Any, int, str | None, list[tuple[int, str]], Any]


def _verify_transaction(
    apis: KafkaApis, transactional_id: str | None, topic: str, index: int, records: Any
) -> None:
    """KIP-890 part 1: a transactional batch goes only to a partition added to the
    producer's open transaction."""
    coordinator = apis.transaction_coordinator
    producer = records.transactional_producer()
    if producer is None or coordinator is None:
        return
    if not apis.config.get("transaction.partition.verification.enable"):
        return
    error = apis.txn_verifier.verify(transactional_id, producer[0], producer[1], (topic, index))
    if error is not Errors.NONE:
        raise KafkaError(error, f"Partition {topic}-{index} is not in the open transaction")


def _plan_partition(
    apis: KafkaApis, topic: str, data: dict[str, Any], acks: int, transactional_id: str | None
) -> PlannedAppend:
    index = data["index"]
    records = data["records"]
    try:
        if acks not in (-1, 0, 1):
            raise KafkaError(Errors.INVALID_REQUIRED_ACKS)
        handle = apis.replica_manager.find_partition(topic, index)
        if handle is None or apis.metadata_cache.get(topic) is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if records is None or len(records) == 0:
            raise KafkaError(Errors.INVALID_RECORD, "empty record set")
        _verify_transaction(apis, transactional_id, topic, index, records)
    except KafkaError as e:
        return (index, None, int(e.code), e.message, [], None)
    return (index, handle, 0, None, [], records)


def handle_produce(apis: KafkaApis, request: Any) -> None:
    body = request.body
    acks = body["acks"]
    transactional_id = body.get("transactional_id")
    topics = [
        (
            t["name"],
            [
                _plan_partition(apis, t["name"], d, acks, transactional_id)
                for d in t["partition_data"]
            ],
        )
        for t in body["topic_data"]
    ]
    throttle_ms = apis.record_produce_bytes(request) if apis.quota_store.has_quotas() else 0
    apis.delayed_operations.produce(request, acks, body["timeout_ms"], topics, throttle_ms)
