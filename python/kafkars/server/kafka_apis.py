"""Kafka's `KafkaApis`: routes every request by API key to its handler.

Handlers are `handler(apis, request)`: they reach the broker's components only through
the collaborators `KafkaApis` is constructed with (the metadata cache, the controller,
the replica manager, the coordinators, the config, quotas, the authorizer), never through
the server that started them. The handlers read configuration through `config`, the
`DynamicBrokerConfig`, so a dynamic change is seen by the next request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkars import _core
from kafkars.protocol import ApiKey, Errors, code_description
from kafkars.security.authorization import first_denial, required
from kafkars.server.api_keys import advertised_versions
from kafkars.server.apis import (
    acls,
    cluster,
    configs,
    delete_records,
    describe_topic_partitions,
    fetch,
    groups,
    inter_broker,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    produce,
    quotas,
    reassignments,
    sasl,
    topics,
    transactions,
    versions,
)
from kafkars.server.error_responses import error_response, respond_with_error
from kafkars.server.quota_manager import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE

if TYPE_CHECKING:
    from kafkars.coordinator.group import GroupCoordinator
    from kafkars.coordinator.group.consumer_group import ConsumerGroupCoordinator
    from kafkars.coordinator.group.group_metadata_manager import GroupMetadataManager
    from kafkars.coordinator.transaction import TransactionCoordinator
    from kafkars.coordinator.transaction.transaction_state_manager import (
        TransactionStateManager,
    )
    from kafkars.security.scram import ScramCredentialStore
    from kafkars.server.cluster import ClusterMember
    from kafkars.server.controller import Controller
    from kafkars.server.dynamic_config import DynamicBrokerConfig
    from kafkars.server.metadata_cache import MetadataCache
    from kafkars.server.quota_manager import ClientQuotaManager, QuotaStore
    from kafkars.server.replica_manager import ReplicaManager
    from kafkars.server.txn_markers import TransactionMarkerWriter
    from kafkars.server.txn_verification import TransactionVerifier

log = logging.getLogger("kafkars.server.KafkaApis")
log_authorizer = logging.getLogger("kafka.authorizer.logger")
# Every request at DEBUG, as Kafka's kafka.request.logger (see logging_config).
log_request = logging.getLogger("kafkars.request")

Handler = Callable[["KafkaApis", Any], "dict[str, Any] | None"]

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.API_VERSIONS: versions.handle_api_versions,
    ApiKey.METADATA: metadata.handle_metadata,
    ApiKey.DESCRIBE_CLUSTER: metadata.handle_describe_cluster,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions.handle_describe_topic_partitions,
    ApiKey.PRODUCE: produce.handle_produce,
    ApiKey.FETCH: fetch.handle_fetch,
    ApiKey.LIST_OFFSETS: list_offsets.handle_list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle_offset_for_leader_epoch,
    ApiKey.DELETE_RECORDS: delete_records.handle_delete_records,
    ApiKey.CREATE_TOPICS: topics.handle_create_topics,
    ApiKey.DELETE_TOPICS: topics.handle_delete_topics,
    ApiKey.CREATE_PARTITIONS: topics.handle_create_partitions,
    ApiKey.DESCRIBE_LOG_DIRS: cluster.handle_describe_log_dirs,
    ApiKey.ALTER_REPLICA_LOG_DIRS: cluster.handle_alter_replica_log_dirs,
    ApiKey.INIT_PRODUCER_ID: transactions.handle_init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions.handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: transactions.handle_add_offsets_to_txn,
    ApiKey.END_TXN: transactions.handle_end_txn,
    ApiKey.TXN_OFFSET_COMMIT: transactions.handle_txn_offset_commit,
    ApiKey.WRITE_TXN_MARKERS: transactions.handle_write_txn_markers,
    ApiKey.DESCRIBE_PRODUCERS: transactions.handle_describe_producers,
    ApiKey.DESCRIBE_TRANSACTIONS: transactions.handle_describe_transactions,
    ApiKey.LIST_TRANSACTIONS: transactions.handle_list_transactions,
    ApiKey.DESCRIBE_CONFIGS: configs.handle_describe_configs,
    ApiKey.ALTER_CONFIGS: configs.handle_alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.handle_incremental_alter_configs,
    ApiKey.FIND_COORDINATOR: groups.handle_find_coordinator,
    ApiKey.JOIN_GROUP: groups.handle_join_group,
    ApiKey.SYNC_GROUP: groups.handle_sync_group,
    ApiKey.HEARTBEAT: groups.handle_heartbeat,
    ApiKey.LEAVE_GROUP: groups.handle_leave_group,
    ApiKey.OFFSET_COMMIT: groups.handle_offset_commit,
    ApiKey.OFFSET_FETCH: groups.handle_offset_fetch,
    ApiKey.OFFSET_DELETE: groups.handle_offset_delete,
    ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
    ApiKey.LIST_GROUPS: groups.handle_list_groups,
    ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: groups.handle_consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: groups.handle_consumer_group_describe,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: quotas.handle_describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: quotas.handle_alter_client_quotas,
    ApiKey.CREATE_ACLS: acls.handle_create_acls,
    ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls,
    ApiKey.DELETE_ACLS: acls.handle_delete_acls,
    ApiKey.SASL_HANDSHAKE: sasl.handle_sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: sasl.handle_sasl_authenticate,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: sasl.handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: sasl.handle_alter_user_scram_credentials,
    # A single broker answers these too (Kafka's does): nothing to elect or move.
    ApiKey.ELECT_LEADERS: inter_broker.handle_elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: reassignments.handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: reassignments.handle_list_partition_reassignments,
}


# What the controller sends brokers in cluster mode (advertised only there).
CLUSTER_HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.LEADER_AND_ISR: inter_broker.handle_leader_and_isr,
    ApiKey.STOP_REPLICA: inter_broker.handle_stop_replica,
    ApiKey.UPDATE_METADATA: inter_broker.handle_update_metadata,
    ApiKey.CONTROLLED_SHUTDOWN: inter_broker.handle_controlled_shutdown,
    # Apache Kafka's brokers (IBP 3.1) ask the controller for these in a mixed cluster.
    ApiKey.ALTER_PARTITION: inter_broker.handle_alter_partition,
    ApiKey.ALLOCATE_PRODUCER_IDS: inter_broker.handle_allocate_producer_ids,
}


# Requests about one classic group, answered by its coordinator only.
_GROUP_APIS = frozenset(
    int(k)
    for k in (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_DELETE,
        ApiKey.TXN_OFFSET_COMMIT,
    )
)


# Requests about one transactional id, answered by its coordinator only (AddOffsetsToTxn's
# TxnOffsetCommit goes to the group's coordinator instead).
_TRANSACTION_APIS = frozenset(
    int(k)
    for k in (
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
    )
)


def codec_version_ranges() -> dict[int, tuple[int, int]]:
    """What the wire codec can decode and encode, by API key."""
    return {key: (low, high) for key, low, high in _core.protocol.api_keys().values()}


class KafkaApis:
    """Called on the handler threads with each request; returns its response (or None when
    the handler answers later, as delayed operations do)."""

    def __init__(
        self,
        *,
        broker_id: int,
        config: DynamicBrokerConfig,
        metadata_cache: MetadataCache,
        controller: Controller,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator | None,
        consumer_group_coordinator: ConsumerGroupCoordinator | None,
        group_metadata_manager: GroupMetadataManager,
        transaction_coordinator: TransactionCoordinator | None,
        transaction_state_manager: TransactionStateManager,
        txn_marker_writer: TransactionMarkerWriter,
        txn_verifier: TransactionVerifier,
        delayed_operations: _core.ReplicaManager,
        quota_manager: ClientQuotaManager,
        quota_store: QuotaStore,
        authorizer: Any | None,
        scram_store: ScramCredentialStore,
        sasl_settings: dict[str, Any],
        handlers: dict[ApiKey, Handler] | None = None,
        cluster: ClusterMember | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.metadata_cache = metadata_cache
        self.controller = controller
        self.replica_manager = replica_manager
        self.group_coordinator = group_coordinator
        self.consumer_group_coordinator = consumer_group_coordinator
        self.group_metadata_manager = group_metadata_manager
        self.transaction_coordinator = transaction_coordinator
        self.transaction_state_manager = transaction_state_manager
        self.txn_marker_writer = txn_marker_writer
        self.txn_verifier = txn_verifier
        self.delayed_operations = delayed_operations
        self.quota_manager = quota_manager
        self.quota_store = quota_store
        self.authorizer = authorizer
        self.scram_store = scram_store
        self.sasl_settings = sasl_settings
        self.cluster = cluster
        if handlers is None:
            handlers = HANDLERS if cluster is None else {**HANDLERS, **CLUSTER_HANDLERS}
        self.handlers = dict(handlers)
        self.advertised = advertised_versions(set(self.handlers), codec_version_ranges())
        self.request_count: dict[int, int] = {}
        self.request_time_ns: dict[int, int] = {}

    def _throttle(
        self, request: Any, key: int, response: dict[str, Any] | None, took_ns: int
    ) -> None:
        """Records the request's handler time against its client's request quota; over
        quota, the response (if Python still holds it) carries the throttle time and the
        connection is muted for it (KIP-219)."""
        principal = request.principal or "User:ANONYMOUS"
        user = principal.split(":", 1)[-1]
        client = request.client_id or ""
        now = int(time.time() * 1000)
        manager = self.quota_manager
        throttle = manager.record(REQUEST_PERCENTAGE, user, client, took_ns / 1e6, now)
        if throttle > 0:
            if response is not None and "throttle_time_ms" in response:
                response["throttle_time_ms"] = max(response["throttle_time_ms"], throttle)
            request.throttle(throttle)

    def record_produce_bytes(self, request: Any) -> int:
        """Records a Produce request's record bytes against its client's producer quota
        (before the Rust append answers it); returns the throttle time in ms, which the
        response carries and the connection is muted for (KIP-219)."""
        principal = request.principal or "User:ANONYMOUS"
        user = principal.split(":", 1)[-1]
        client = request.client_id or ""
        now = int(time.time() * 1000)
        size = sum(
            len(p["records"] or b"")
            for t in request.body["topic_data"]
            for p in t["partition_data"]
        )
        return self.quota_manager.record(PRODUCER_BYTE_RATE, user, client, size, now)

    def record_fetch_bytes(self, request: Any, size: int) -> int:
        """Records a Fetch response's bytes against its client's consumer quota (called
        from the Rust fetch path when quotas exist); returns the throttle time in ms."""
        principal = request.principal or "User:ANONYMOUS"
        user = principal.split(":", 1)[-1]
        now = int(time.time() * 1000)
        return self.quota_manager.record(
            CONSUMER_BYTE_RATE, user, request.client_id or "", size, now
        )

    def _not_coordinator(self, key: int, request: Any) -> bool:
        """A request for a group or transactional id another broker coordinates is
        answered NOT_COORDINATOR (the client looks the coordinator up again)."""
        coordinator: Any
        if key in _GROUP_APIS:
            name, coordinator = request.body.get("group_id"), self.group_coordinator
        elif key in _TRANSACTION_APIS:
            name, coordinator = request.body.get("transactional_id"), self.transaction_coordinator
        else:
            return False
        if not isinstance(name, str) or coordinator is None or coordinator.is_coordinator(name):
            return False
        response = error_response(
            request.api_key, request.api_version, request.body, Errors.NOT_COORDINATOR
        )
        if response is None:
            request.close_connection()
        else:
            request.respond(response)
        return True

    def _authorized(self, authorizer: Any, request: Any) -> bool:
        """Checks the request against the ACLs; a denied one is answered here with its
        API's error response carrying the authorization error."""
        key = ApiKey(request.api_key)
        names = self.metadata_cache.topic_names_by_id() if key == ApiKey.FETCH else {}
        principal = request.principal or "User:ANONYMOUS"
        denied = first_denial(
            authorizer, principal, request.client_host, required(key, request.body, names)
        )
        if denied is None:
            return True
        log_authorizer.info(
            "Principal = %s is Denied %s (%s) from host = %s",
            principal,
            key.name,
            denied.name,
            request.client_host,
        )
        # Kafka answers with the authorization exception's message (its description).
        response = error_response(
            request.api_key, request.api_version, request.body, denied, code_description(denied)
        )
        if response is None:
            request.close_connection()
        else:
            request.respond(response)
        return False

    def handle(self, request: Any) -> dict[str, Any] | None:
        key = request.api_key
        # ApiKey is an IntEnum: the int key finds its member's entry directly.
        handler = self.handlers.get(key)
        supported = self.advertised.get(key) if handler else None
        # An API or version this broker does not serve closes the connection, as Kafka's
        # does (ApiVersions excepted: KIP-511's v0 answer lists what is served).
        if handler is None or supported is None:
            log.info("Unsupported API key %s from %s", key, request.client_id)
            request.close_connection()
            return None
        low, high = supported
        if key != ApiKey.API_VERSIONS and not low <= request.api_version <= high:
            log.info(
                "%s v%s from %s is outside the advertised range %s-%s",
                ApiKey(key).name,
                request.api_version,
                request.client_id,
                low,
                high,
            )
            request.close_connection()
            return None
        started = time.perf_counter_ns()
        authorizer = self.authorizer
        if authorizer is not None and not self._authorized(authorizer, request):
            return None
        if self._not_coordinator(key, request):
            return None
        try:
            response = handler(self, request)
            if self.quota_store.has_quotas():
                self._throttle(request, key, response, time.perf_counter_ns() - started)
            if response is not None:
                # Answered here rather than returned, so a response that does not encode
                # is caught below and answered with the error response too.
                request.respond(response)
        except Exception as e:
            # Kafka's handleError: the request gets its API's error response
            # (UNKNOWN_SERVER_ERROR unless the exception maps to a Kafka error) and the
            # connection carries on.
            respond_with_error(request, e)
        except BaseException as e:
            # A panic in the Rust core surfaces as pyo3's PanicException, a BaseException:
            # it fails this request like any other error instead of the handler thread.
            if type(e).__name__ != "PanicException":
                raise
            respond_with_error(request, e)
        finally:
            took_ns = time.perf_counter_ns() - started
            self.request_count[key] = self.request_count.get(key, 0) + 1
            self.request_time_ns[key] = self.request_time_ns.get(key, 0) + took_ns
            if log_request.isEnabledFor(logging.DEBUG):
                log_request.debug(
                    "Completed request: api=%s version=%d correlation_id=%d client_id=%s "
                    "from=%s:%d listener=%s principal=%s answered=%s handler_ms=%.3f",
                    ApiKey(key).request_name,
                    request.api_version,
                    request.correlation_id,
                    request.client_id,
                    request.client_host,
                    request.client_port,
                    request.listener_name,
                    request.principal or "User:ANONYMOUS",
                    request.answered,
                    took_ns / 1e6,
                )
        return None
