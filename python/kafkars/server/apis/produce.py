"""Produce: validate and append each partition's record set in Rust."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.server.errors import Errors, KafkaError, RecordValidationError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis


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
    error = coordinator.verify_produce(transactional_id, producer[0], producer[1], (topic, index))
    if error is not Errors.NONE:
        raise KafkaError(error, f"Partition {topic}-{index} is not in the open transaction")


def _partition_result(
    apis: KafkaApis,
    topic: str,
    data: dict[str, Any],
    acks: int,
    transactional_id: str | None = None,
) -> dict[str, Any]:
    index = data["index"]
    result: dict[str, Any] = {"index": index, "base_offset": -1, "log_append_time_ms": -1}
    records = data["records"]
    try:
        if records is None or len(records) == 0:
            raise KafkaError(Errors.INVALID_RECORD, "empty record set")
        _verify_transaction(apis, transactional_id, topic, index, records)
        info = apis.replica_manager.append(topic, index, records, acks)
    except KafkaError as e:
        result["error_code"] = int(e.code)
        result["error_message"] = e.message
        result["log_start_offset"] = -1
        if isinstance(e, RecordValidationError):
            result["record_errors"] = [
                {"batch_index": i, "batch_index_error_message": m} for i, m in e.record_errors
            ]
        return result
    result["error_code"] = 0
    result["base_offset"] = info.first_offset
    result["log_append_time_ms"] = info.log_append_time
    result["log_start_offset"] = info.log_start_offset
    result["_last_offset"] = info.last_offset
    return result


def handle_produce(apis: KafkaApis, request: Any) -> dict[str, Any] | None:
    body = request.body
    acks = body["acks"]
    responses = []
    for topic_data in body["topic_data"]:
        name = topic_data["name"]
        partitions = []
        for data in topic_data["partition_data"]:
            if acks not in (-1, 0, 1):
                partitions.append(
                    {"index": data["index"], "error_code": int(Errors.INVALID_REQUIRED_ACKS)}
                )
            elif apis.metadata_cache.get(name) is None:
                partitions.append(
                    {"index": data["index"], "error_code": int(Errors.UNKNOWN_TOPIC_OR_PARTITION)}
                )
            else:
                partitions.append(
                    _partition_result(apis, name, data, acks, body.get("transactional_id"))
                )
        responses.append({"name": name, "partition_responses": partitions})
    if acks == 0:
        # The client expects no answer; errors surface to it as metadata refreshes.
        request.send_no_response()
        return None
    response = {"responses": responses, "throttle_time_ms": 0}
    # acks=all waits in the Rust produce purgatory until the high watermarks reach the
    # appends; `pending` names each partition by its position in the response.
    pending = []
    for i, t in enumerate(responses):
        for j, p in enumerate(t["partition_responses"]):
            last_offset = p.pop("_last_offset", None)
            if acks == -1 and last_offset is not None:
                handle = apis.replica_manager.find_partition(t["name"], p["index"])
                if handle is not None:
                    pending.append((i, j, handle, last_offset + 1))
    if pending:
        apis.delayed_operations.watch_produce(request, response, pending, body["timeout_ms"])
        return None
    return response
