"""Type stubs for the Rust extension `kafkars._core` (rust/kafkars-python)."""

from collections.abc import Callable, Iterator, Mapping
from os import PathLike
from typing import Any, Protocol, final

from typing_extensions import Self

__version__: str

__all__ = [
    "__version__",
    "set_rust_log_level",
    "rust_log_events_dropped",
    "stop_rust_logging",
    "KafkarsError",
    "CorruptRecordError",
    "Record",
    "RecordBatch",
    "decode_batches",
    "build_batch",
    "ArrowFetcher",
    "Producer",
    "decode_batches_arrow",
    "SegmentReader",
    "RecordSet",
    "protocol",
    "DelayedOperationPurgatory",
    "FileRecords",
    "LogManager",
    "Log",
    "LogAppendInfo",
    "LiveBrokers",
    "Partition",
    "ReplicaFetcherManager",
    "ReplicaManager",
    "BrokerConnection",
    "AuthenticationError",
    "Request",
    "SocketServer",
]

class KafkarsError(Exception): ...

class CorruptRecordError(KafkarsError):
    """args: (kafka_error_code, message)"""

class AuthenticationError(ConnectionError):
    """A broker refused the SASL login or the TLS handshake."""

    error_code: int | None

# -- record batches ----------------------------------------------------------------------

@final
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    size_in_bytes: int
    attributes: int

@final
class RecordBatch:
    def __new__(cls, data: bytes) -> Self: ...
    position: int
    base_offset: int
    last_offset: int
    next_offset: int
    size_in_bytes: int
    partition_leader_epoch: int
    magic: int
    crc: int
    is_valid: bool
    attributes: int
    compression: str
    timestamp_type: str
    is_transactional: bool
    is_control: bool
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    records_count: int
    def validate(self) -> None: ...
    def records(self) -> list[Record]: ...
    def to_bytes(self) -> bytes: ...
    def __len__(self) -> int: ...

def decode_batches(data: bytes) -> list[RecordBatch]: ...
def decode_batches_arrow(
    blobs: Any,
    topic: Any = None,
    partition: Any = None,
    *,
    include_headers: bool = True,
    batch_fields: bool = True,
    on_error: str = "raise",
    verify_crc: bool = True,
    skip_control: bool = True,
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> tuple[Any, Any]: ...

@final
class ArrowFetcher:
    def __new__(
        cls,
        host: str,
        port: int,
        timeout_ms: int = 30000,
        *,
        security: dict[str, Any] | None = None,
    ) -> Self: ...
    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        end_offset: int,
        *,
        include_headers: bool = False,
        max_bytes: int = ...,
        max_wait_ms: int = 500,
        isolation_level: int = 0,
    ) -> tuple[int, int, int, int | None, tuple[Any, Any] | None]: ...
    def close(self) -> None: ...

@final
class Producer:
    def __new__(
        cls,
        bootstrap: list[tuple[str, int]],
        *,
        client_id: str = "kafkars-spark",
        security: dict[str, Any] | None = None,
        timeout_ms: int = 30000,
        transactional_id: str | None = None,
        compression: str = "none",
        transaction_timeout_ms: int = 60000,
        delivery_timeout_ms: int = 120000,
        batch_bytes: int = ...,
    ) -> Self: ...
    def send(self, batch: Any, topic: str | None = None) -> int: ...
    def init_transactions(self) -> None: ...
    def begin_transaction(self) -> None: ...
    def send_offsets_to_transaction(
        self, offsets: list[tuple[str, int, int, str | None]], group_id: str
    ) -> None: ...
    def commit_transaction(self) -> None: ...
    def abort_transaction(self) -> None: ...
    @property
    def producer_id_and_epoch(self) -> tuple[int, int]: ...

def build_batch(
    records: list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]],
    *,
    compression: str = "none",
    base_offset: int = 0,
    partition_leader_epoch: int = ...,
    log_append_time: int | None = None,
    producer_id: int = ...,
    producer_epoch: int = ...,
    base_sequence: int = ...,
    is_transactional: bool = False,
) -> bytes: ...

@final
class SegmentReader(Iterator[RecordBatch]):
    invalid_bytes: int
    error: str | None
    size: int
    def __new__(cls, path: str | PathLike[str], start_position: int = 0) -> Self: ...
    def __iter__(self) -> SegmentReader: ...
    def __next__(self) -> RecordBatch: ...

# -- record data handles (never copied into Python on the broker's paths) ---------------

@final
class RecordSet:
    def __new__(cls, data: bytes) -> Self: ...
    def __len__(self) -> int: ...
    def size_in_bytes(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    def transactional_producer(self) -> tuple[int, int] | None: ...

@final
class FileRecords:
    @staticmethod
    def empty() -> FileRecords: ...
    def __len__(self) -> int: ...
    position: int
    fetch_offset_metadata: tuple[int, int, int] | None
    record_count: int
    def read_bytes(self) -> bytes: ...

# -- storage -----------------------------------------------------------------------------

@final
class LogAppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    valid_bytes: int
    num_messages: int

@final
class Log:
    topic: str
    partition: int
    dir: str
    dir_parent: str | None
    def assign_topic_id(self, topic_id: bytes) -> None: ...
    def topic_id(self) -> bytes | None: ...
    log_end_offset: int
    log_start_offset: int
    high_watermark: int
    recovery_point: int
    size_in_bytes: int
    num_segments: int
    latest_epoch: int | None
    def read(
        self, offset: int, max_bytes: int, upper_bound: int, min_one_message: bool
    ) -> FileRecords: ...
    def fetch_offset_by_timestamp(self, timestamp: int) -> tuple[int, int, int] | None: ...
    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...
    def update_config(self, settings: Mapping[str, Any]) -> None: ...
    def flush(self) -> None: ...
    def roll(self) -> None: ...
    def delete_records(self, offset: int) -> int: ...
    def delete_old_segments(self, now_ms: int) -> int: ...
    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...
    def aborted_transactions(
        self, start_offset: int, upper_bound: int
    ) -> list[tuple[int, int]]: ...
    def producer_state(self, producer_id: int) -> tuple[int, int] | None: ...
    def active_producers(self) -> list[tuple[int, int, int, int, int, int]]: ...
    @property
    def segment_base_offsets(self) -> list[int]: ...

@final
class LogManager:
    def __new__(
        cls, log_dirs: list[str], broker_id: int, cluster_id: str | None = None
    ) -> Self: ...
    broker_id: int
    log_dirs: list[str]
    def offline_log_dirs(self) -> list[str]: ...
    def load_logs(
        self,
        threads_per_dir: int,
        default_config: Mapping[str, Any],
        topic_configs: Mapping[str, Mapping[str, Any]],
    ) -> dict[str, Any]: ...
    def get_log(self, topic: str, partition: int) -> Log | None: ...
    def get_or_create_log(self, topic: str, partition: int, settings: Mapping[str, Any]) -> Log: ...
    def delete_log(self, topic: str, partition: int) -> bool: ...
    def alter_log_dir(self, topic: str, partition: int, log_dir: str | PathLike[str]) -> None: ...
    def log_dir_of(self, topic: str, partition: int) -> str | None: ...
    def future_logs(self) -> list[tuple[str, int, str, int, int]]: ...
    def all_logs(self) -> list[Log]: ...
    def checkpoint(self) -> None: ...
    def flush_dirty_logs(self, now_ms: int) -> int: ...
    def flush_rolled_segments(self) -> int: ...
    def delete_pending(self, now_ms: int, file_delete_delay_ms: int) -> int: ...
    def cleanup_logs(self, now_ms: int) -> int: ...
    def checkpoint_recovery_points(self) -> None: ...
    def checkpoint_log_start_offsets(self) -> None: ...
    def start_cleaner(
        self, threads: int, dedupe_buffer_size: int, io_buffer_size: int, backoff_ms: int
    ) -> None: ...
    def stop_cleaner(self) -> None: ...
    def clean_once(self, force: bool = False) -> dict[str, Any] | None: ...
    def cleaner_checkpoints(self) -> dict[tuple[str, int], int]: ...
    def shutdown(self) -> None: ...

@final
class LiveBrokers:
    def __new__(cls) -> Self: ...
    def update(self, broker_ids: list[int]) -> None: ...
    def __contains__(self, broker_id: int, /) -> bool: ...

@final
class Partition:
    def __new__(cls, log: Log, broker_id: int) -> Self: ...
    topic: str
    partition: int
    log: Log
    leader_id: int
    leader_epoch: int
    is_leader: bool
    replicas: list[int]
    isr: list[int]
    high_watermark: int
    last_stable_offset: int
    counters: tuple[int, int, int]
    replica_states: list[tuple[int, int, int]]
    def make_leader(self, leader_epoch: int, replicas: list[int], isr: list[int]) -> bool: ...
    def append_records_to_leader(self, records: RecordSet, required_acks: int) -> LogAppendInfo: ...
    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool
    ) -> LogAppendInfo: ...

@final
class ReplicaFetcherManager:
    def __new__(
        cls,
        broker_id: int,
        num_replica_fetchers: int = 1,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 10485760,
        partition_max_bytes: int = 1048576,
        backoff_ms: int = 1000,
        socket_timeout_ms: int = 30000,
        security: dict[str, Any] | None = None,
    ) -> Self: ...
    def add_partitions(
        self, leader_id: int, host: str, port: int, partitions: list[tuple[Partition, int]]
    ) -> None: ...
    def remove_partitions(self, partitions: list[tuple[str, int]]) -> None: ...
    def fetch_states(self) -> list[tuple[str, int, int, int, bool]]: ...
    def shutdown(self) -> None: ...

# -- the Kafka client (kafkars-client) ----------------------------------------------------

@final
class BrokerConnection:
    host: str
    port: int
    closed: bool
    def __new__(
        cls,
        host: str,
        port: int,
        *,
        client_id: str = "kafkars",
        security: dict[str, Any] | None = None,
        timeout_s: float = 30.0,
        max_response_bytes: int = ...,
    ) -> Self: ...
    def call(
        self, api_key: int, version: int | None, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...
    def version(self, api_key: int) -> int: ...
    def api_versions(self) -> dict[int, tuple[int, int]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...

# -- the replica manager -----------------------------------------------------------------

@final
class ReplicaManager:
    def __new__(
        cls,
        log_manager: LogManager,
        broker_id: int,
        fetchers: ReplicaFetcherManager | None = None,
        purge_interval: int = ...,
    ) -> Self: ...
    broker_id: int
    def set_live_brokers(self, live_brokers: LiveBrokers) -> None: ...
    def is_newer_leader_epoch(
        self, topic: str, partition: int, leader_id: int, leader_epoch: int, *, topic_id: Any = None
    ) -> bool: ...
    def become_leader(
        self,
        topic: str,
        partition: int,
        settings: dict[str, Any],
        *,
        leader_epoch: int = 0,
        replicas: list[int] | None = None,
        isr: list[int] | None = None,
        min_insync_replicas: int = 1,
        topic_id: Any = None,
    ) -> Partition: ...
    def become_follower(
        self,
        topic: str,
        partition: int,
        settings: dict[str, Any],
        leader_id: int,
        leader_epoch: int,
        replicas: list[int] | None = None,
        isr: list[int] | None = None,
        *,
        leader_endpoint: tuple[str, int] | None = None,
        topic_id: Any = None,
    ) -> Partition: ...
    def handle_log_dir_failure(self, log_dir: str | PathLike[str]) -> list[tuple[str, int]]: ...
    def update_config(
        self, topic: str, settings: dict[str, Any], *, min_insync_replicas: int = 1
    ) -> None: ...
    def remove_topic(self, topic: str) -> None: ...
    def remove_partition(self, topic: str, partition: int) -> None: ...
    def stop_fetching(self, topic: str, partition: int) -> None: ...
    def resign_replicated_leaderships(self) -> None: ...
    def find_partition(self, topic: str, partition: int) -> Partition | None: ...
    def partitions(self) -> list[Partition]: ...
    retired_counters: dict[str, list[int]]
    def propose_isr_changes(self, max_lag_ms: int) -> list[tuple[str, int, int, list[int]]]: ...
    def commit_isr_change(
        self, topic: str, partition: int, leader_epoch: int, isr: list[int]
    ) -> bool: ...
    def maybe_shrink_isr(self, max_lag_ms: int) -> list[tuple[str, int, list[int]]]: ...
    def take_isr_expansions(self) -> list[tuple[str, int, list[int]]]: ...
    def fetch(
        self,
        request: Request,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int,
        topics: list[
            tuple[str, Any, list[tuple[int, Partition | None, int, int, int, int, int, int]]]
        ],
        quota: Callable[[int], int] | None = None,
    ) -> None: ...
    def produce(
        self,
        request: Request,
        acks: int,
        timeout_ms: int,
        topics: list[
            tuple[
                str,
                list[
                    tuple[
                        int,
                        Partition | None,
                        int,
                        str | None,
                        list[tuple[int, str]],
                        RecordSet | None,
                    ]
                ],
            ]
        ],
        throttle_time_ms: int = 0,
    ) -> None: ...
    def delay_produce(
        self,
        partition: Partition,
        required_offset: int,
        timeout_ms: int,
        callback: Callable[[int], object],
    ) -> None: ...
    delayed_fetches: int
    delayed_produces: int
    def check_and_complete(self, topic: str, partition: int) -> None: ...
    def shutdown(self) -> None: ...
    def release_log_manager(self) -> None: ...

class _DelayedOperation(Protocol):
    delay_ms: int
    def try_complete(self) -> bool: ...
    def on_complete(self) -> None: ...
    def on_expiration(self) -> None: ...

@final
class DelayedOperationPurgatory:
    def __new__(cls, name: str, purge_interval: int = ...) -> Self: ...
    def try_complete_else_watch(self, op: _DelayedOperation, keys: list[str]) -> bool: ...
    def check_and_complete(self, key: str) -> int: ...
    watched: int
    delayed: int
    def shutdown(self) -> None: ...

# -- network -----------------------------------------------------------------------------

@final
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    listener_name: str
    security_protocol: str
    client_host: str
    client_port: int
    connection_id: int
    unsupported_version: bool
    body: Any
    answered: bool
    age_ms: float
    def respond(self, response: Mapping[str, Any]) -> None: ...
    def send_no_response(self) -> None: ...
    def close_connection(self) -> None: ...
    principal: str | None
    def authenticate(self, principal: str, session_lifetime_ms: int = 0) -> None: ...
    def take_sasl_state(self) -> Any: ...
    def put_sasl_state(self, state: Any) -> None: ...
    def throttle(self, throttle_ms: int) -> None: ...

@final
class SocketServer:
    def __new__(
        cls,
        listeners: list[tuple[str, str, str, int]],
        handler: Callable[[Request], Mapping[str, Any] | None],
        *,
        num_network_threads: int = 3,
        num_io_threads: int = 8,
        queued_max_requests: int = 500,
        queued_max_request_bytes: int = ...,
        socket_request_max_bytes: int = 104857600,
        connections_max_idle_ms: int = 600000,
        max_connections: int = 2147483647,
        max_connections_per_ip: int = 2147483647,
        max_connections_per_ip_overrides: Mapping[str, int] = ...,
        max_connection_creation_rate: int = 2147483647,
        socket_send_buffer_bytes: int = ...,
        socket_receive_buffer_bytes: int = ...,
        tls: Mapping[str, Mapping[str, Any]] = ...,
    ) -> Self: ...
    listeners: list[tuple[str, str, str, int]]
    def update_tls(self, listener_name: str, settings: Mapping[str, Any]) -> None: ...
    def request_metrics(self) -> list[tuple[int, str, list[int], int, float]]: ...
    @staticmethod
    def request_metrics_buckets() -> list[float]: ...
    request_queue_size: int
    connection_count: int
    handler_idle_seconds: float
    network_idle_seconds: float
    def shutdown(self) -> None: ...

# -- the wire codec (tests and tools) ----------------------------------------------------

class _Protocol:
    def decode_request(self, api_key: int, api_version: int, body: bytes) -> dict[str, Any]: ...
    def encode_request(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None,
        request: Mapping[str, Any],
    ) -> bytes: ...
    def decode_response(
        self, api_key: int, api_version: int, correlation_id: int, frame: bytes
    ) -> dict[str, Any]: ...
    def decode_subscription(self, data: bytes) -> tuple[int, dict[str, Any]]: ...
    def decode_assignment(self, data: bytes) -> tuple[int, dict[str, Any]]: ...
    def encode_subscription(self, version: int, subscription: Mapping[str, Any]) -> bytes: ...
    def encode_assignment(self, version: int, assignment: Mapping[str, Any]) -> bytes: ...
    def encode_record(self, name: str, version: int, record: Mapping[str, Any]) -> bytes: ...
    def decode_record(self, name: str, data: bytes) -> tuple[int, dict[str, Any]]: ...
    def encode_response(
        self, api_key: int, api_version: int, response: Mapping[str, Any]
    ) -> bytes: ...
    def api_keys(self) -> dict[str, tuple[int, int, int]]: ...
    def normalize_response(
        self, api_key: int, response: Mapping[str, Any], version: int | None = None
    ) -> dict[str, Any]: ...

protocol: _Protocol

# -- Rust log events forwarded to Python logging (logger names under "kafkars.") --------------

def set_rust_log_level(level: int) -> None: ...
def rust_log_events_dropped() -> int: ...
def stop_rust_logging() -> None: ...
