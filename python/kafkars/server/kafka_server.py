"""Kafka's `KafkaServer`: start-up and shutdown in the broker's order.

config → log dirs and meta.properties → log manager (load and recover) → topic metadata →
replica manager → request handlers → socket server. Shutdown runs the other way and ends
with flushed logs, checkpoints and the clean-shutdown marker.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kafkars import _core
from kafkars.config import ConfigException, ConfigStore, KafkaConfig, LogConfig, describe_topic
from kafkars.config.ssl import tls_settings_by_listener
from kafkars.coordinator.group import GroupCoordinator
from kafkars.coordinator.group.consumer_group import ConsumerGroupConfig, ConsumerGroupCoordinator
from kafkars.coordinator.group.group_coordinator import GroupConfig
from kafkars.coordinator.group.group_metadata_manager import (
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataManager,
)
from kafkars.coordinator.transaction import TransactionConfig, TransactionCoordinator
from kafkars.coordinator.transaction.producer_id_manager import ProducerIdManager
from kafkars.coordinator.transaction.transaction_state_manager import TransactionStateManager
from kafkars.log import read_properties
from kafkars.security.authorizer import build_authorizer
from kafkars.security.sasl import listener_sasl_settings
from kafkars.security.scram import ScramCredentialStore
from kafkars.server.delayed_fetch import FetchPurgatory
from kafkars.server.delayed_produce import ProducePurgatory
from kafkars.server.errors import Errors, KafkaError
from kafkars.server.kafka_apis import KafkaApis
from kafkars.server.log_tasks import schedule_log_tasks
from kafkars.server.log_validator import TimestampLimits
from kafkars.server.metadata import METADATA_FILE, MetadataStore, TopicMetadata
from kafkars.server.metrics import BrokerTopicMetrics, MetricsServer
from kafkars.server.quota_manager import ClientQuotaManager, QuotaStore
from kafkars.server.replica_manager import ReplicaManager
from kafkars.server.scheduler import KafkaScheduler

log = logging.getLogger("kafkars.server.KafkaServer")

# Where dynamic broker configs are kept, inside the first log dir (a hidden directory,
# so it is never taken for a partition).
CONFIG_STORE_DIR = ".kafkars-config"


class StartupError(Exception):
    """A start-up failure a user can fix; the message is the one line they see."""


def prepare_log_dir(path: Path) -> None:
    """Creates a `log.dirs` entry, or says in one line why it cannot be a log dir."""
    if path.exists() and not path.is_dir():
        raise StartupError(f"log.dirs: {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StartupError(f"log.dirs: cannot create {path}: {e.strerror}") from e
    probe = path / ".kafkars-write-probe"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise StartupError(f"log.dirs: {path} is not writable: {e.strerror}") from e


def resolve_identity(dirs: list[str], configured_id: int, reserved_max_id: int) -> tuple[int, str]:
    """broker.id and cluster.id from meta.properties, the config, or newly generated.

    A configured id must match what the dirs hold (the Rust LogManager refuses a mismatch
    with Kafka's InconsistentBrokerIdException message). With broker.id=-1 the stored id
    is reused, else one above reserved.broker.max.id is generated, as Kafka does.
    """
    stored_ids, stored_clusters = set(), set()
    for d in dirs:
        meta = Path(d) / "meta.properties"
        if meta.exists():
            # A damaged file refuses the start in one line, as Kafka does, not a traceback.
            try:
                props = read_properties(meta)
                if "broker.id" in props:
                    stored_ids.add(int(props["broker.id"]))
            except ValueError as e:  # not text, or a broker.id that is not a number
                raise StartupError(f"log.dirs: malformed {meta}: {e}") from e
            if "cluster.id" in props:
                stored_clusters.add(props["cluster.id"])
    if configured_id >= 0:
        broker_id = configured_id
    elif len(stored_ids) == 1:
        broker_id = stored_ids.pop()
    else:
        broker_id = reserved_max_id + 1
    if stored_clusters:
        cluster_id = sorted(stored_clusters)[0]
    else:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    return broker_id, cluster_id


def storage_settings(config: LogConfig) -> dict[str, Any]:
    """A topic's effective LogConfig in the shape the Rust log takes."""
    get = config.get
    return {
        "segment_bytes": int(get("segment.bytes")),
        "segment_ms": int(get("segment.ms")),
        "segment_jitter_ms": int(get("segment.jitter.ms")),
        "max_index_size": int(get("segment.index.bytes")),
        "index_interval_bytes": int(get("index.interval.bytes")),
        "max_message_bytes": int(get("max.message.bytes")),
        "flush_interval_messages": int(get("flush.messages")),
        "flush_ms": int(get("flush.ms")),
        "file_delete_delay_ms": int(get("file.delete.delay.ms")),
        "message_timestamp_type": str(get("message.timestamp.type")),
        "compression": str(get("compression.type")),
        "compacted": "compact" in get("cleanup.policy"),
        "retention_ms": int(get("retention.ms")),
        "retention_bytes": int(get("retention.bytes")),
        "delete_policy": "delete" in get("cleanup.policy"),
        "delete_retention_ms": int(get("delete.retention.ms")),
        "min_cleanable_dirty_ratio": float(get("min.cleanable.dirty.ratio")),
        "min_compaction_lag_ms": int(get("min.compaction.lag.ms")),
        "max_compaction_lag_ms": int(get("max.compaction.lag.ms")),
    }


class KafkaServer:
    """One broker. `startup()` binds its listeners; `shutdown()` is graceful and idempotent."""

    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.socket_server: Any = None
        self.fetch_purgatory: FetchPurgatory | None = None
        self.produce_purgatory: ProducePurgatory | None = None
        self.kafka_scheduler: KafkaScheduler | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.consumer_group_coordinator: ConsumerGroupCoordinator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.topic_metrics = BrokerTopicMetrics()
        self.metrics_server: MetricsServer | None = None
        self._shutdown_lock = threading.Lock()
        self._started = False
        self._stopped = threading.Event()

    # -- configuration shortcuts used by the handlers -------------------------------------
    @property
    def auto_create_topics(self) -> bool:
        return bool(self.config.get("auto.create.topics.enable"))

    @property
    def default_partitions(self) -> int:
        return int(self.config.get("num.partitions"))

    @property
    def default_replication_factor(self) -> int:
        return int(self.config.get("default.replication.factor"))

    @property
    def delete_topic_enable(self) -> bool:
        return bool(self.config.get("delete.topic.enable"))

    @property
    def transaction_max_timeout_ms(self) -> int:
        return int(self.config.get("transaction.max.timeout.ms"))

    @property
    def rack(self) -> str | None:
        value = self.config.get("broker.rack")
        return str(value) if value else None

    @property
    def log_dirs(self) -> list[str]:
        return [str(Path(d).resolve()) for d in self.config.log_dirs]

    def log_config(self, overrides: dict[str, str]) -> LogConfig:
        return LogConfig.from_layers(self.config, overrides)

    def storage_config(self, overrides: dict[str, str]) -> dict[str, Any]:
        """The topic's effective settings in the shape the Rust log takes."""
        return storage_settings(self.log_config(overrides))

    def timestamp_limits(self, overrides: dict[str, str]) -> TimestampLimits | None:
        """The topic's CreateTime timestamp bounds checked on append, if any."""
        return TimestampLimits.from_log_config(self.log_config(overrides))

    # -- lifecycle ---------------------------------------------------------------------------
    def startup(self) -> None:
        started = time.monotonic()
        timings: list[tuple[str, float]] = []

        def step(name: str, since: float) -> float:
            now = time.monotonic()
            timings.append((name, (now - since) * 1000))
            return now

        t = started
        self.sasl_settings = listener_sasl_settings(self.config)
        tls_settings = tls_settings_by_listener(self.config)
        # Rust events below the level Python prints are not even formatted.
        _core.set_rust_log_level(logging.getLogger("kafkars").getEffectiveLevel())
        dirs = self.log_dirs
        for d in dirs:
            prepare_log_dir(Path(d))
        self.broker_id, self.cluster_id = resolve_identity(
            dirs, int(self.config.get("broker.id")), int(self.config.get("reserved.broker.max.id"))
        )
        try:
            self.metadata = MetadataStore(Path(dirs[0]))
        except (ValueError, KeyError, TypeError) as e:
            raise StartupError(f"log.dirs: malformed {Path(dirs[0]) / METADATA_FILE}: {e}") from e
        # Dynamic broker configs (AlterConfigs on the broker resource) outrank the file.
        self.config_store = ConfigStore(Path(dirs[0]) / CONFIG_STORE_DIR)
        self.scram_store = ScramCredentialStore(Path(dirs[0]) / CONFIG_STORE_DIR / "users")
        self.authorizer = build_authorizer(self.config, Path(dirs[0]) / CONFIG_STORE_DIR)
        self.quota_store = QuotaStore(Path(dirs[0]) / CONFIG_STORE_DIR / "quotas.json")
        self.quota_manager = ClientQuotaManager(
            self.quota_store,
            window_num=int(self.config.get("quota.window.num")),
            window_size_ms=int(self.config.get("quota.window.size.seconds")) * 1000,
        )
        self.config = self.config.with_dynamic(
            self.config_store.broker_configs(self.broker_id),
            self.config_store.default_broker_configs(),
        )
        try:
            self.log_manager = _core.LogManager(dirs, self.broker_id, self.cluster_id)
        except _core.LogError as e:
            raise StartupError(f"log.dirs: {e.args[-1]}") from e
        try:
            report = self.log_manager.load_logs(
                int(self.config.get("num.recovery.threads.per.data.dir")),
                self.storage_config({}),
                {
                    topic.name: self.storage_config(topic.configs)
                    for topic in self.metadata.topics()
                },
            )
        except _core.LogError as e:
            # A file recovery cannot repair (Kafka fails the log dir, so the broker stops).
            raise StartupError(f"log.dirs: {e.args[-1]}") from e
        t = step("log manager", t)
        log.info(
            "Loaded %d partition(s) in %.0f ms: %d recovered after an unclean shutdown "
            "(%d segment(s) scanned, %d bytes truncated), %d skipped recovery",
            report["partitions"],
            report["duration_ms"],
            len(report["recovered"]),
            report["segments_recovered"],
            report["truncated_bytes"],
            report["skipped"],
        )

        self.replica_manager = ReplicaManager(self.log_manager, self.broker_id)
        for topic in self.metadata.topics():
            self._become_leader(topic)
        t = step("replica manager", t)

        # Kafka's background tasks: retention, flushes, checkpoints, segment deletion.
        self.kafka_scheduler = KafkaScheduler(int(self.config.get("background.threads")))
        self.kafka_scheduler.startup()
        schedule_log_tasks(self.kafka_scheduler, self.log_manager, self.config)
        t = step("scheduler", t)

        self.fetch_purgatory = FetchPurgatory(self)
        self.replica_manager.add_append_listener(self.fetch_purgatory.on_append)
        self.produce_purgatory = ProducePurgatory()
        # One broker: the high watermark moves with each append.
        self.replica_manager.add_append_listener(self.produce_purgatory.on_high_watermark)
        self.group_metadata_manager = GroupMetadataManager(self)
        self.group_coordinator = GroupCoordinator(
            GroupConfig.from_broker(self.config), self.group_metadata_manager
        )
        self.group_coordinator.startup()
        self._consumer_group_timer = _core.DelayedOperationPurgatory("ConsumerGroupHeartbeat")
        timer = self._consumer_group_timer
        classic = self.group_coordinator
        self.consumer_group_coordinator = ConsumerGroupCoordinator(
            ConsumerGroupConfig.from_broker(self.config),
            self.metadata,
            lambda op: timer.try_complete_else_watch(op, ["session"]),
            classic_group_in_use=lambda g: bool((grp := classic.get_group(g)) and grp.members),
            store=self.group_metadata_manager.append,
        )
        self.consumer_group_coordinator.load(self.group_metadata_manager.consumer_group_records)
        t = step("group coordinator", t)
        self.transaction_state_manager = TransactionStateManager(self)
        self.transaction_coordinator = TransactionCoordinator(
            TransactionConfig.from_broker(self.config),
            ProducerIdManager(self.metadata.allocate_producer_id_block),
            self.transaction_state_manager,
            self.write_txn_markers,
        )
        self.transaction_coordinator.startup()
        t = step("transaction coordinator", t)
        self.apis = KafkaApis(self)
        t = step("apis", t)

        listeners = [
            (e.listener_name, e.security_protocol, e.host, e.port) for e in self.config.listeners
        ]
        self.socket_server = _core.SocketServer(
            listeners,
            self.apis.handle,
            num_network_threads=int(self.config.get("num.network.threads")),
            num_io_threads=int(self.config.get("num.io.threads")),
            queued_max_requests=int(self.config.get("queued.max.requests")),
            queued_max_request_bytes=int(self.config.get("queued.max.request.bytes")),
            socket_request_max_bytes=int(self.config.get("socket.request.max.bytes")),
            connections_max_idle_ms=int(self.config.get("connections.max.idle.ms")),
            max_connections=int(self.config.get("max.connections")),
            max_connections_per_ip=int(self.config.get("max.connections.per.ip")),
            max_connection_creation_rate=int(self.config.get("max.connection.creation.rate")),
            socket_send_buffer_bytes=int(self.config.get("socket.send.buffer.bytes")),
            socket_receive_buffer_bytes=int(self.config.get("socket.receive.buffer.bytes")),
            tls=tls_settings,
        )
        t = step("socket server", t)
        metrics_port = self.config.get("kafkars.metrics.port")
        if metrics_port is not None:
            host = self.bound_listeners[0][2]
            self.metrics_server = MetricsServer(self, host, int(metrics_port))
            t = step("metrics", t)
        self._started = True
        log.info(
            "[KafkaServer id=%s] started in %.0f ms (%s); listening on %s",
            self.broker_id,
            (time.monotonic() - started) * 1000,
            ", ".join(f"{n} {ms:.1f} ms" for n, ms in timings),
            ", ".join(f"{n}://{h}:{p}" for n, _, h, p in self.bound_listeners),
        )

    @property
    def metrics_port(self) -> int | None:
        return self.metrics_server.port if self.metrics_server else None

    @property
    def bound_listeners(self) -> list[tuple[str, str, str, int]]:
        return list(self.socket_server.listeners) if self.socket_server else []

    def advertised_endpoint(self, listener_name: str) -> tuple[str, int]:
        """The host and port clients should use for `listener_name`."""
        bound = {name: (host, port) for name, _, host, port in self.bound_listeners}
        for e in self.config.advertised_listeners:
            if e.listener_name == listener_name:
                host = e.host or bound.get(listener_name, ("127.0.0.1", 0))[0]
                # Port 0 (pick a free one) is advertised as the port actually bound.
                port = e.port or bound.get(listener_name, ("", 0))[1]
                if host in ("", "0.0.0.0", "::"):
                    host = "127.0.0.1"
                return host, port
        host, port = bound.get(listener_name, ("127.0.0.1", 0))
        return host, port

    def advertised_listeners_string(self) -> str:
        """`advertised.listeners` as clients see it, with bound ports filled in."""
        parts = []
        for name, _, _, _ in self.bound_listeners:
            host, port = self.advertised_endpoint(name)
            parts.append(f"{name}://{host}:{port}")
        return ",".join(parts)

    def shutdown(self) -> None:
        with self._shutdown_lock:
            if self._stopped.is_set():
                return
            log.info("[KafkaServer id=%s] shutting down", getattr(self, "broker_id", "?"))
            if self.metrics_server is not None:
                self.metrics_server.shutdown()
            if self.kafka_scheduler is not None:
                self.kafka_scheduler.shutdown()
            if self.socket_server is not None:
                # Stop reading and answer what is in flight; waiting fetches still expire
                # on the purgatory's timer meanwhile, so it stops afterwards.
                self.socket_server.shutdown()
            if self.fetch_purgatory is not None:
                self.fetch_purgatory.shutdown()
            if self.produce_purgatory is not None:
                self.produce_purgatory.shutdown()
            if self.group_coordinator is not None:
                self.group_coordinator.shutdown()
            if self.transaction_coordinator is not None:
                self.transaction_coordinator.shutdown()
            if self.consumer_group_coordinator is not None:
                self.consumer_group_coordinator.shutdown()
                self._consumer_group_timer.shutdown()
            if self._started:
                self.log_manager.shutdown()
            self._stopped.set()
            log.info("[KafkaServer id=%s] shut down completed", getattr(self, "broker_id", "?"))

    def await_shutdown(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    # -- transaction markers ----------------------------------------------------------------
    def write_txn_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
    ) -> None:
        """Writes one COMMIT/ABORT marker; on `__consumer_offsets` the group coordinator
        then applies or drops the transaction's offsets."""
        self.replica_manager.write_txn_marker(
            topic, partition, producer_id, producer_epoch, coordinator_epoch, commit=commit
        )
        if topic == GROUP_METADATA_TOPIC_NAME and self.group_coordinator is not None:
            self.group_coordinator.complete_txn_offsets(producer_id, commit)

    def write_txn_markers(
        self, producer_id: int, producer_epoch: int, commit: bool, partitions: list[tuple[str, int]]
    ) -> None:
        """The coordinator's markers for one transaction, one per partition. A partition
        that no longer exists (its topic was deleted) needs none."""
        for topic, partition in partitions:
            try:
                self.write_txn_marker(
                    topic, partition, producer_id, producer_epoch, 0, commit=commit
                )
            except KafkaError as e:
                if e.code is not Errors.UNKNOWN_TOPIC_OR_PARTITION:
                    raise
                log.info("Skipping the transaction marker for deleted %s-%d", topic, partition)

    # -- topic administration (the single-broker controller) ------------------------------
    def _become_leader(self, topic: TopicMetadata) -> None:
        settings = self.storage_config(topic.configs)
        limits = self.timestamp_limits(topic.configs)
        for index in range(topic.num_partitions):
            self.replica_manager.become_leader(topic.name, index, settings, limits)

    def validate_topic_configs(self, configs: dict[str, str]) -> None:
        try:
            LogConfig.validate_overrides(configs)
        except Exception as e:  # ConfigException: the message names key, value and rule
            raise KafkaError(Errors.INVALID_CONFIG, str(e)) from None

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> TopicMetadata:
        topic = self.metadata.create(name, partitions, 1, configs)
        self._become_leader(topic)
        log.info("Created topic %s with %d partition(s), id %s", name, partitions, topic.topic_id)
        return topic

    def delete_topic(self, name: str) -> None:
        self.metadata.delete(name)
        self.replica_manager.remove_topic(name)
        log.info("Deleted topic %s", name)

    def add_partitions(self, name: str, count: int) -> None:
        topic = self.metadata.get(name)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        self.metadata.set_partitions(name, count)
        self._become_leader(topic)

    def describe_topic_configs(self, name: str, overrides: dict[str, str]) -> list[Any]:
        return describe_topic(self.config, overrides)

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replaces a topic's overrides and applies them to its logs at once."""
        self.metadata.set_configs(name, configs)
        self.replica_manager.update_config(
            name, self.storage_config(configs), self.timestamp_limits(configs)
        )

    @property
    def dynamic_broker_configs(self) -> dict[str, str]:
        return dict(self.config.dynamic_broker)

    @property
    def dynamic_default_configs(self) -> dict[str, str]:
        return dict(self.config.dynamic_default)

    def set_dynamic_broker_configs(self, configs: dict[str, str], *, per_broker: bool) -> None:
        """Persists a dynamic layer, rebuilds the config and re-applies topic settings
        (broker defaults such as log.retention.ms flow into every topic)."""
        if per_broker:
            new = self.config.with_dynamic(dynamic_broker=configs)
        else:
            new = self.config.with_dynamic(dynamic_default=configs)
        # Listener certificates reload without a restart, as Kafka reloads keystores from
        # dynamic listener.name.<l>.ssl.* configs; bad settings fail the change here.
        if self.socket_server is not None:
            for listener, settings in tls_settings_by_listener(new).items():
                if settings != tls_settings_by_listener(self.config).get(listener):
                    try:
                        self.socket_server.update_tls(listener, settings)
                    except ValueError as e:
                        raise ConfigException(str(e)) from None
        self.config_store.set_broker_configs(self.broker_id if per_broker else None, configs)
        self.config = new
        for topic in self.metadata.topics():
            self.replica_manager.update_config(
                topic.name, self.storage_config(topic.configs), self.timestamp_limits(topic.configs)
            )
