"""A broker's part in a ZooKeeper cluster (cluster mode, `zookeeper.connect` set).

It registers the broker, runs its `KafkaController` (active only if elected), applies
what the controller sends (Kafka's ReplicaManager.becomeLeaderOrFollower for
LeaderAndIsr, stopReplicas for StopReplica, the metadata cache for UpdateMetadata), and
records the ISR changes this broker makes as a leader in ZooKeeper with an ISR change
notification, as Kafka 2.x does, so the controller tells the other brokers. A failed log
dir is announced the same way (a log dir event notification), so the controller moves
the leadership of its replicas elsewhere.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError

from kafkars import _core
from kafkars.controller.channel_manager import call_broker
from kafkars.controller.kafka_controller import KafkaController
from kafkars.protocol import Errors, KafkaError
from kafkars.security.client_auth import PLAINTEXT, ClientSecurity
from kafkars.server.dynamic_config import DynamicBrokerConfig
from kafkars.server.replica_manager import ReplicaManager
from kafkars.server.zk_metadata_cache import ZkMetadataCache
from kafkars.zk.kafka_zk_client import KafkaZkClient
from kafkars.zk.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch

log = logging.getLogger("kafkars.server.Cluster")


class ClusterMember:
    def __init__(
        self,
        zk: KafkaZkClient,
        broker_id: int,
        config: DynamicBrokerConfig,
        replica_manager: ReplicaManager,
        cache: ZkMetadataCache,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.zk = zk
        self.security = security
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = replica_manager
        self.cache = cache
        self.live_brokers = _core.LiveBrokers()
        replica_manager.set_live_brokers(self.live_brokers)
        c = config.current
        self.inter_broker_listener: str = c.inter_broker_listener_name
        self.controller = KafkaController(
            zk,
            broker_id,
            inter_broker_listener=self.inter_broker_listener,
            security=security,
            unclean_leader_election=self._unclean_election,
            auto_leader_rebalance=bool(c.get("auto.leader.rebalance.enable")),
            imbalance_percentage=int(c.get("leader.imbalance.per.broker.percentage")),
            imbalance_interval_s=float(c.get("leader.imbalance.check.interval.seconds")),
        )
        self._lock = threading.Lock()
        # Per partition this broker leads: the state znode's version and the controller
        # epoch of the LeaderAndIsr that made it leader (for conditional ISR writes).
        self._zk_versions: dict[tuple[str, int], tuple[int, int]] = {}
        self._controller_epoch = 0
        self._broker_info: BrokerInfo | None = None
        self._stop = threading.Event()
        self._announced_offline_dirs: set[str] = set()
        # Called with (topic, partition, leads) after each LeaderAndIsr partition: the
        # coordinators load or drop the partitions of their internal topics.
        self.leadership_listeners: list[Callable[[str, int, bool], None]] = []
        # Coordinators load and drop partitions on their own thread, in order, so a
        # LeaderAndIsr is never held up by a load (Kafka's scheduler does the same).
        self._leadership_changes: queue.Queue[tuple[str, int, bool] | None] = queue.Queue()
        self._leadership_thread = threading.Thread(
            target=self._leadership_loop, name="coordinator-loader", daemon=True
        )
        self._isr_thread = threading.Thread(target=self._isr_loop, name="isr-change", daemon=True)
        # Topic config changes made through any broker reach this one's logs (Kafka's
        # ZkNodeChangeNotificationListener on /config/changes).
        self._config_changes: queue.Queue[bool] = queue.Queue()
        self._last_config_change = ""
        self._config_thread = threading.Thread(
            target=self._config_change_loop, name="config-change", daemon=True
        )

    def _unclean_election(self, topic: str) -> bool:
        meta = self.cache.get(topic)
        overrides = meta.configs if meta is not None else self.zk.get_topic_configs(topic)
        value = overrides.get("unclean.leader.election.enable")
        if value is None:
            return bool(self.config.current.get("unclean.leader.election.enable"))
        return str(value).lower() == "true"

    # -- lifecycle -------------------------------------------------------------------------
    def startup(self, info: BrokerInfo) -> None:
        """Registers the broker (its listeners are bound) and starts the controller."""
        self._broker_info = info
        self.zk.on_session_expired = self._on_session_expired
        self.zk.register_broker(info)
        self.controller.startup()
        self._isr_thread.start()
        # Notifications older than this start are in the configs LeaderAndIsr reads.
        existing = self.zk.get_config_changes()
        self._last_config_change = existing[-1] if existing else ""
        self._config_thread.start()
        self._leadership_thread.start()
        log.info("[Broker id=%s] registered in ZooKeeper", self.broker_id)

    def _on_session_expired(self) -> None:
        log.warning("[Broker id=%s] ZooKeeper session expired; registering again", self.broker_id)
        if self._broker_info is not None:
            self.zk.register_broker(self._broker_info)
        self.controller.on_session_expired()

    def shutdown(self) -> None:
        self._stop.set()
        self._config_changes.put(False)
        self._leadership_changes.put(None)
        self.controller.shutdown()

    def _leadership_loop(self) -> None:
        while (change := self._leadership_changes.get()) is not None:
            for listener in self.leadership_listeners:
                try:
                    listener(*change)
                except Exception:
                    log.exception("Coordinator failed to follow leadership of %s-%s", *change[:2])

    # -- LeaderAndIsr ----------------------------------------------------------------------
    def become_leader_or_follower(self, body: dict[str, Any]) -> dict[str, Any]:
        epoch = body["controller_epoch"]
        if epoch < self._controller_epoch:
            return {"error_code": int(Errors.STALE_CONTROLLER_EPOCH), "topics": []}
        self._controller_epoch = epoch
        leaders = {ll["broker_id"]: (ll["host_name"], ll["port"]) for ll in body["live_leaders"]}
        topics = []
        for topic_state in body["topic_states"]:
            name = topic_state["topic_name"]
            configs = self.zk.get_topic_configs(name)
            settings = self.config.storage_config(configs)
            min_isr = self.config.log_config(configs).min_insync_replicas
            errors = []
            for p in topic_state["partition_states"]:
                index = p["partition_index"]
                code = 0
                log.info(
                    "[Broker id=%s] LeaderAndIsr from controller %s epoch %s: %s-%s leader %s "
                    "leader epoch %s ISR %s partition epoch %s",
                    self.broker_id,
                    body["controller_id"],
                    epoch,
                    name,
                    index,
                    p["leader"],
                    p["leader_epoch"],
                    p["isr"],
                    p["partition_epoch"],
                )
                if not self.replica_manager.is_newer_leader_epoch(
                    name, index, p["leader"], p["leader_epoch"], topic_id=topic_state["topic_id"]
                ):
                    # A controller's older decision (Kafka's becomeLeaderOrFollower).
                    log.warning(
                        "[Broker id=%s] Ignoring LeaderAndIsr for %s-%s: leader epoch %s "
                        "is not newer than the one held here",
                        self.broker_id,
                        name,
                        index,
                        p["leader_epoch"],
                    )
                    errors.append(
                        {"partition_index": index, "error_code": int(Errors.STALE_CONTROLLER_EPOCH)}
                    )
                    continue
                try:
                    if p["leader"] == self.broker_id:
                        self.replica_manager.become_leader(
                            name,
                            index,
                            settings,
                            leader_epoch=p["leader_epoch"],
                            replicas=list(p["replicas"]),
                            isr=list(p["isr"]),
                            min_insync_replicas=min_isr,
                            topic_id=topic_state["topic_id"],
                        )
                        with self._lock:
                            self._zk_versions[(name, index)] = (
                                p["partition_epoch"],
                                p["controller_epoch"],
                            )
                    else:
                        with self._lock:
                            self._zk_versions.pop((name, index), None)
                        self.replica_manager.become_follower(
                            name,
                            index,
                            settings,
                            p["leader"],
                            p["leader_epoch"],
                            list(p["replicas"]),
                            list(p["isr"]),
                            leader_endpoint=leaders.get(p["leader"]),
                            topic_id=topic_state["topic_id"],
                        )
                    if self.leadership_listeners:
                        self._leadership_changes.put((name, index, p["leader"] == self.broker_id))
                except KafkaError as e:
                    # INCONSISTENT_TOPIC_ID, a storage error: the partition's own code.
                    log.error("LeaderAndIsr for %s-%s failed: %s", name, index, e)
                    code = int(e.code)
                except Exception as e:
                    log.exception("LeaderAndIsr for %s-%s failed: %s", name, index, e)
                    code = int(Errors.KAFKA_STORAGE_ERROR)
                errors.append({"partition_index": index, "error_code": code})
            topics.append({"topic_id": topic_state["topic_id"], "partition_errors": errors})
        return {"error_code": 0, "topics": topics}

    # -- StopReplica -----------------------------------------------------------------------
    def stop_replicas(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["controller_epoch"] < self._controller_epoch:
            return {"error_code": int(Errors.STALE_CONTROLLER_EPOCH), "partition_errors": []}
        errors = []
        for topic_state in body["topic_states"]:
            name = topic_state["topic_name"]
            for p in topic_state["partition_states"]:
                index = p["partition_index"]
                with self._lock:
                    self._zk_versions.pop((name, index), None)
                if p["delete_partition"]:
                    self.replica_manager.remove_partition(name, index)
                else:
                    self.replica_manager.stop_fetching(name, index)
                errors.append({"topic_name": name, "partition_index": index, "error_code": 0})
        return {"error_code": 0, "partition_errors": errors}

    # -- UpdateMetadata --------------------------------------------------------------------
    def update_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["controller_epoch"] < self._controller_epoch:
            return {"error_code": int(Errors.STALE_CONTROLLER_EPOCH)}
        self._controller_epoch = body["controller_epoch"]
        for topic in self.cache.update(body):
            self.replica_manager.remove_topic(topic)
        self.live_brokers.update(self.cache.alive_broker_ids())
        return {"error_code": 0}

    # -- topic config changes --------------------------------------------------------------
    def _config_change_loop(self) -> None:
        self._config_changes.put(True)
        while self._config_changes.get() and not self._stop.is_set():
            try:
                self._process_config_changes()
            except Exception:
                log.exception("Applying topic config changes failed")

    def _process_config_changes(self) -> None:
        names = self.zk.get_config_changes(watch=lambda _: self._config_changes.put(True))
        for name in names:
            if name <= self._last_config_change:
                continue
            self._last_config_change = name
            entity = self.zk.read_config_change(name)
            if entity is None or not entity.startswith("topics/"):
                continue
            topic = entity.removeprefix("topics/")
            configs = self.zk.get_topic_configs(topic)
            self.cache.set_topic_configs(topic, configs)
            self.replica_manager.update_config(
                topic,
                self.config.storage_config(configs),
                min_insync_replicas=self.config.log_config(configs).min_insync_replicas,
            )
            log.info("[Broker id=%s] applied new configs of topic %s", self.broker_id, topic)

    # -- ISR changes -----------------------------------------------------------------------
    def _isr_loop(self) -> None:
        lag_ms = int(self.config.current.get("replica.lag.time.max.ms"))
        interval = min(lag_ms / 2000, 0.5)
        while not self._stop.wait(interval):
            try:
                self.handle_log_dir_failures()
            except Exception:
                log.exception("Announcing a log dir failure failed")
            try:
                self.propagate_isr_changes(lag_ms)
            except Exception:
                log.exception("Recording ISR changes failed")

    def handle_log_dir_failures(self) -> None:
        """Kafka's LogDirFailureHandler: each dir an I/O error took offline (the storage
        layer marks it) takes its replicas offline here and is announced to the
        controller with a log dir event notification. Checked on the ISR loop's tick
        rather than woken by the failure, which is rare and needs no lower latency."""
        for log_dir in self.replica_manager.log_manager.offline_log_dirs():
            if log_dir in self._announced_offline_dirs:
                continue
            offline = self.replica_manager.handle_log_dir_failure(log_dir)
            with self._lock:
                for tp in offline:
                    self._zk_versions.pop(tp, None)
            self.zk.propagate_log_dir_event(self.broker_id)
            self._announced_offline_dirs.add(log_dir)
            log.warning(
                "[Broker id=%s] log dir %s failed: replicas %s are offline; told the controller",
                self.broker_id,
                log_dir,
                sorted(offline),
            )

    def propagate_isr_changes(self, lag_ms: int) -> None:
        """Records the replica manager's proposed ISR changes (shrinks of followers past
        `lag_ms`, joins since the last tick) in ZooKeeper, then tells the controller.
        A shrink is applied only once ZooKeeper has it: until then the high watermark
        waits for the larger ISR (a leader cut off from ZooKeeper cannot shrink alone)."""
        written = []
        for topic, index, epoch, isr in self.replica_manager.propose_isr_changes(lag_ms):
            if self._write_isr(topic, index, epoch, isr) and self.replica_manager.commit_isr_change(
                topic, index, epoch, isr
            ):
                written.append((topic, index))
        if written:
            self.zk.propagate_isr_changes(written)

    def _write_isr(self, topic: str, index: int, leader_epoch: int, isr: list[int]) -> bool:
        """The leader's ISR at `leader_epoch`, written conditionally on the state znode's
        version it last knew; lost if the controller wrote a newer state meanwhile (a new
        LeaderAndIsr follows)."""
        with self._lock:
            known = self._zk_versions.get((topic, index))
        partition = self.replica_manager.find_partition(topic, index)
        if (
            known is None
            or partition is None
            or not partition.is_leader
            or partition.leader_epoch != leader_epoch
        ):
            return False
        version, controller_epoch = known
        state = LeaderIsrAndControllerEpoch(
            self.broker_id, leader_epoch, sorted(isr), controller_epoch
        )
        try:
            written = self.zk.update_partition_state(topic, index, state, version, None)
        except BadVersionError:
            current = self.zk.get_partition_state(topic, index)
            if current is None or current.leader_epoch != leader_epoch:
                return False
            try:
                written = self.zk.update_partition_state(
                    topic, index, state, current.zk_version, None
                )
            except BadVersionError:
                return False
        with self._lock:
            if (topic, index) in self._zk_versions:
                self._zk_versions[(topic, index)] = (written.zk_version, controller_epoch)
        log.info(
            "[Broker id=%s] ISR of %s-%s is now %s (leader epoch %s, zk version %s)",
            self.broker_id,
            topic,
            index,
            isr,
            leader_epoch,
            written.zk_version,
        )
        return True


CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION = 7, 3


def request_controlled_shutdown(
    cluster: ClusterMember, broker_id: int, zk: KafkaZkClient | None
) -> tuple[int, int]:
    """Sends ControlledShutdown to the controller (or asks our own when it is this
    broker); returns (error code, partitions this broker still leads)."""
    assert zk is not None
    controller_id = zk.get_controller_id()
    if controller_id is None:
        raise RuntimeError("no controller is elected")
    if controller_id == broker_id:
        done = threading.Event()
        result: list[Any] = [int(Errors.REQUEST_TIMED_OUT), [1]]

        def reply(code: int, remaining: list[tuple[str, int]]) -> None:
            result[:] = [code, remaining]
            done.set()

        cluster.controller.controlled_shutdown(broker_id, reply)
        done.wait(30)
        return int(result[0]), len(result[1])
    info = zk.get_all_brokers().get(controller_id)
    endpoint = info.endpoints.get(cluster.inter_broker_listener) if info else None
    if endpoint is None:
        raise RuntimeError(f"controller {controller_id} has no {cluster.inter_broker_listener}")
    response = call_broker(
        endpoint,
        CONTROLLED_SHUTDOWN,
        CONTROLLED_SHUTDOWN_VERSION,
        {"broker_id": broker_id, "broker_epoch": -1},
        client_id=f"broker-{broker_id}",
        security=cluster.security,
    )
    return int(response["error_code"]), len(response["remaining_partitions"])
