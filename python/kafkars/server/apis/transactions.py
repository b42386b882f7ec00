"""Transaction APIs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, WriteTxnMarkers, and the admin views DescribeProducers,
DescribeTransactions and ListTransactions.

Each handler turns the request dict into a `TransactionCoordinator` call (or, for
TxnOffsetCommit, a `GroupCoordinator` call checked against the transaction).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkars.coordinator.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkars.protocol import Errors, KafkaError
from kafkars.security.authorizer import AclOperation, ResourceType
from kafkars.server.apis.groups import partition_exists, requested_offsets
from kafkars.server.error_responses import respond_or_error

if TYPE_CHECKING:
    from kafkars.coordinator.transaction import TransactionCoordinator
    from kafkars.coordinator.transaction.transaction_coordinator import InitProducerIdResult
    from kafkars.server.kafka_apis import KafkaApis

# The first version of each API whose clients know PRODUCER_FENCED; older ones are told
# INVALID_PRODUCER_EPOCH, as Kafka does.
_PRODUCER_FENCED_SINCE = {"init": 4, "add_partitions": 2, "add_offsets": 2, "end": 2, "txn_oc": 3}


def _coordinator(apis: KafkaApis) -> TransactionCoordinator:
    coordinator = apis.transaction_coordinator
    assert coordinator is not None  # created at start-up, before requests are served
    return coordinator


def _for_version(error: Errors, version: int, api: str) -> int:
    if error is Errors.PRODUCER_FENCED and version < _PRODUCER_FENCED_SINCE[api]:
        return int(Errors.INVALID_PRODUCER_EPOCH)
    return int(error)


# -- InitProducerId -----------------------------------------------------------------------
# These handlers answer once the coordinator's write is in the ISR of __transaction_state
# (from whichever thread completes it); the handler thread returns at once.
def handle_init_producer_id(apis: KafkaApis, request: Any) -> None:
    body = request.body
    version = request.api_version
    transactional_id = body["transactional_id"]
    if transactional_id is not None:
        apis.transaction_state_manager.ensure_topic()

    def respond(result: InitProducerIdResult) -> None:
        respond_or_error(
            request,
            lambda: {
                "throttle_time_ms": 0,
                "error_code": _for_version(result.error, version, "init"),
                "producer_id": result.producer_id,
                "producer_epoch": result.producer_epoch,
            },
        )

    _coordinator(apis).handle_init_producer_id(
        transactional_id,
        body["transaction_timeout_ms"],
        body.get("producer_id", -1) if version >= 3 else -1,
        body.get("producer_epoch", -1) if version >= 3 else -1,
        callback=respond,
    )


# -- AddPartitionsToTxn -------------------------------------------------------------------
TopicResults = list[dict[str, Any]]


def _add_partitions(
    apis: KafkaApis,
    txn: dict[str, Any],
    version: int,
    verify_only: bool,
    done: Callable[[TopicResults], None],
) -> None:
    """One transaction's topic results, to `done`. Unknown partitions fail the request
    (the others get OPERATION_NOT_ATTEMPTED), as Kafka's KafkaApis does."""
    wanted = [(t["name"], p) for t in txn["topics"] for p in t["partitions"]]
    unknown = {tp for tp in wanted if not partition_exists(apis, *tp)}
    coordinator = _coordinator(apis)

    def results(errors: dict[tuple[str, int], int]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), code in errors.items():
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "partition_error_code": code}
            )
        done([{"name": t, "results_by_partition": ps} for t, ps in by_topic.items()])

    if unknown:
        results(
            {
                tp: Errors.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else Errors.OPERATION_NOT_ATTEMPTED
                for tp in wanted
            }
        )
    elif verify_only:
        verified = coordinator.verify_partitions(
            txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], wanted
        )
        results({tp: int(e) for tp, e in verified.items()})
    else:
        coordinator.handle_add_partitions(
            txn["transactional_id"],
            txn["producer_id"],
            txn["producer_epoch"],
            wanted,
            callback=lambda error: results(
                dict.fromkeys(wanted, _for_version(error, version, "add_partitions"))
            ),
        )


def handle_add_partitions_to_txn(apis: KafkaApis, request: Any) -> None:
    body = request.body
    version = request.api_version
    if version <= 3:
        txn = {
            "transactional_id": body["v3_and_below_transactional_id"],
            "producer_id": body["v3_and_below_producer_id"],
            "producer_epoch": body["v3_and_below_producer_epoch"],
            "topics": body["v3_and_below_topics"],
        }
        _add_partitions(
            apis,
            txn,
            version,
            False,
            lambda topics: respond_or_error(
                request,
                lambda: {"throttle_time_ms": 0, "results_by_topic_v3_and_below": topics},
            ),
        )
        return
    # v4+: the broker-to-coordinator form (KIP-890), several transactions at once,
    # answered when the last of them is.
    transactions = body["transactions"]
    results: list[dict[str, Any] | None] = [None] * len(transactions)
    remaining = [len(transactions)]
    lock = threading.Lock()

    def respond() -> None:
        respond_or_error(
            request,
            lambda: {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results},
        )

    def one_done(i: int, topics: TopicResults) -> None:
        with lock:
            results[i] = {
                "transactional_id": transactions[i]["transactional_id"],
                "topic_results": topics,
            }
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            respond()

    if not transactions:
        respond()
    for i, t in enumerate(transactions):
        _add_partitions(apis, t, version, t["verify_only"], partial(one_done, i))


# -- AddOffsetsToTxn ----------------------------------------------------------------------
def handle_add_offsets_to_txn(apis: KafkaApis, request: Any) -> None:
    """Adds the group's `__consumer_offsets` partition to the transaction, so its
    TxnOffsetCommit records are committed or aborted with it."""
    body = request.body
    apis.group_metadata_manager.ensure_topic()
    partition = apis.group_metadata_manager.partition_for(body["group_id"])
    _coordinator(apis).handle_add_partitions(
        body["transactional_id"],
        body["producer_id"],
        body["producer_epoch"],
        [(GROUP_METADATA_TOPIC_NAME, partition)],
        callback=lambda error: respond_or_error(
            request,
            lambda: {
                "throttle_time_ms": 0,
                "error_code": _for_version(error, request.api_version, "add_offsets"),
            },
        ),
    )


# -- EndTxn -------------------------------------------------------------------------------
def handle_end_txn(apis: KafkaApis, request: Any) -> None:
    body = request.body

    def respond(error: Errors) -> None:
        respond_or_error(
            request,
            lambda: {
                "throttle_time_ms": 0,
                "error_code": _for_version(error, request.api_version, "end"),
                # v5 (transaction version 2) would return the bumped epoch; this broker
                # does not bump on every transaction, so the producer keeps its id and epoch.
                "producer_id": body["producer_id"],
                "producer_epoch": body["producer_epoch"],
            },
        )

    _coordinator(apis).handle_end_transaction(
        body["transactional_id"],
        body["producer_id"],
        body["producer_epoch"],
        body["committed"],
        callback=respond,
    )


# -- TxnOffsetCommit ----------------------------------------------------------------------
def _in_transaction(
    apis: KafkaApis,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    tp: tuple[str, int],
) -> Errors:
    """Whether `tp` is in the producer's open transaction, asked of the transaction's
    coordinator: in cluster mode that is often another broker than the group's."""
    return apis.txn_verifier.check(transactional_id, producer_id, producer_epoch, tp)


def handle_txn_offset_commit(apis: KafkaApis, request: Any) -> None:
    body = request.body
    version = request.api_version
    group_id = body["group_id"]
    now = int(time.time() * 1000)
    offsets, unknown = requested_offsets(
        apis, body["topics"], now=now, with_leader_epoch=version >= 2
    )
    # The group's offsets partition must be in the producer's open transaction
    # (AddOffsetsToTxn first), with the current epoch.
    apis.group_metadata_manager.ensure_topic()
    offsets_partition = (
        GROUP_METADATA_TOPIC_NAME,
        apis.group_metadata_manager.partition_for(group_id),
    )
    check = _in_transaction(
        apis,
        body["transactional_id"],
        body["producer_id"],
        body["producer_epoch"],
        offsets_partition,
    )

    def respond(results: dict[tuple[str, int], Errors]) -> None:
        topics = []
        for t in body["topics"]:
            partitions = []
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else results[tp]
                partitions.append(
                    {"partition_index": tp[1], "error_code": _for_version(error, version, "txn_oc")}
                )
            topics.append({"name": t["name"], "partitions": partitions})
        respond_or_error(request, lambda: {"throttle_time_ms": 0, "topics": topics})

    if check in (Errors.PRODUCER_FENCED, Errors.COORDINATOR_NOT_AVAILABLE):
        respond(dict.fromkeys(offsets, check))
    elif check is not Errors.NONE:
        respond(dict.fromkeys(offsets, Errors.INVALID_TXN_STATE))
    else:
        group_coordinator = apis.group_coordinator
        assert group_coordinator is not None
        # Answered once the ISR has the offsets (or their write failed).
        group_coordinator.handle_txn_commit_offsets(
            group_id,
            body.get("member_id", "") if version >= 3 else "",
            body.get("group_instance_id") if version >= 3 else None,
            body.get("generation_id", -1) if version >= 3 else -1,
            body["producer_id"],
            body["producer_epoch"],
            offsets,
            respond,
        )
    return None


# -- WriteTxnMarkers ----------------------------------------------------------------------
def handle_write_txn_markers(apis: KafkaApis, request: Any) -> None:
    """The coordinator-to-leader form: writes each marker to the partitions it names
    (this broker's coordinator writes its own markers without a request), answered once
    every marker is written (in the ISR, in cluster mode)."""
    markers = []
    # (marker, topic, partition, its result entry)
    writes: list[tuple[dict[str, Any], str, int, dict[str, Any]]] = []
    for m in request.body["markers"]:
        topics = []
        for t in m["topics"]:
            partitions = []
            for index in t["partition_indexes"]:
                result = {"partition_index": index, "error_code": 0}
                partitions.append(result)
                writes.append((m, t["name"], index, result))
            topics.append({"name": t["name"], "partitions": partitions})
        markers.append({"producer_id": m["producer_id"], "topics": topics})
    lock = threading.Lock()
    remaining = [len(writes)]

    def one_done(result: dict[str, Any], error: Errors) -> None:
        with lock:
            result["error_code"] = int(error)
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            respond_or_error(request, lambda: {"markers": markers})

    if not writes:
        return respond_or_error(request, lambda: {"markers": markers})
    for m, topic, index, result in writes:
        apis.txn_marker_writer.write_txn_marker(
            topic,
            index,
            m["producer_id"],
            m["producer_epoch"],
            m["coordinator_epoch"],
            commit=m["transaction_result"],
            done=partial(one_done, result),
        )
    return None


# -- admin --------------------------------------------------------------------------------
def handle_describe_producers(apis: KafkaApis, request: Any) -> dict[str, Any]:
    topics = []
    for t in request.body["topics"]:
        partitions = []
        for index in t["partition_indexes"]:
            entry: dict[str, Any] = {"partition_index": index, "active_producers": []}
            try:
                log = apis.replica_manager.get_partition(t["name"], index).log
            except KafkaError as e:
                partitions.append({**entry, "error_code": int(e.code), "error_message": None})
                continue
            entry["error_code"] = 0
            entry["error_message"] = None
            entry["active_producers"] = [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "last_sequence": seq,
                    "last_timestamp": ts,
                    "coordinator_epoch": coordinator_epoch,
                    "current_txn_start_offset": txn_start,
                }
                for pid, epoch, seq, ts, coordinator_epoch, txn_start in log.active_producers()
            ]
            partitions.append(entry)
        topics.append({"name": t["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def handle_describe_transactions(apis: KafkaApis, request: Any) -> dict[str, Any]:
    coordinator = _coordinator(apis)
    states = [coordinator.describe(tid) for tid in request.body["transactional_ids"]]
    return {"throttle_time_ms": 0, "transaction_states": states}


def handle_list_transactions(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    unknown, states = _coordinator(apis).list_transactions(
        body["state_filters"],
        body["producer_id_filters"],
        body.get("duration_filter", -1) if request.api_version >= 1 else -1,
    )
    authorizer = apis.authorizer
    if authorizer is not None:
        # Kafka lists only the transactional ids the principal may describe.
        principal = request.principal or "User:ANONYMOUS"
        states = [
            s
            for s in states
            if authorizer.authorize(
                principal,
                request.client_host,
                AclOperation.DESCRIBE,
                ResourceType.TRANSACTIONAL_ID,
                s["transactional_id"],
                log_if_denied=False,
            )
        ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "unknown_state_filters": unknown,
        "transaction_states": states,
    }
