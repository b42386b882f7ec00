"""Kafka's `KafkaZkClient`: every read and write of cluster metadata in ZooKeeper.

Brokers register here, the controller is elected here, topics, partition states, ISR
change notifications, topic deletions and producer-id blocks live here, all in Kafka
2.x's layout (`zk_data`). Watches are one-shot, as Kafka sets them: a callback runs on
kazoo's thread and must only hand an event to whoever owns the state (the controller's
event queue), then the owner reads again and sets the next watch.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from kazoo.protocol.states import KazooState
from kazoo.security import ACL

from kafkars.zk import zk_data
from kafkars.zk.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment
from kafkars.zk.zk_sasl import ZkSaslLogin

log = logging.getLogger("kafkars.zk.KafkaZkClient")

Watch = Callable[[Any], None]
# How long change notifications stay (Kafka's ZkNodeChangeNotificationListener).
_NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000


class ControllerMovedError(Exception):
    """A conditional write lost to a newer controller (Kafka's ControllerMovedException)."""


class ZkAuthFailedError(Exception):
    """ZooKeeper refused the SASL login."""


class AclKazooClient(KazooClient):  # type: ignore[misc]
    """A KazooClient that creates every znode, and every parent it makes on the way, with
    Kafka's default ACLs for that znode's path (`secure`: zookeeper.set.acl)."""

    def __init__(self, *args: Any, secure: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.secure = secure

    def acls(self, path: str) -> list[ACL]:
        return zk_data.default_acls(self.secure, path)

    def create_async(
        self, path: str, value: bytes = b"", acl: list[ACL] | None = None, **kwargs: Any
    ) -> Any:
        return super().create_async(path, value, self.acls(path) if acl is None else acl, **kwargs)

    def ensure_path_async(self, path: str, acl: list[ACL] | None = None) -> Any:
        # Kazoo would give the parents the child's ACLs: without one, each level's
        # create_async picks its own (/config is world-readable, /config/users is not).
        return super().ensure_path_async(path)


def split_chroot(connect: str) -> tuple[str, str]:
    """`host:port,host:port/chroot` -> (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/") if chroot else ""


class KafkaZkClient:
    """One ZooKeeper session. `on_session_expired` is called (on kazoo's thread) when the
    session is lost and a new one has started: ephemeral nodes are gone by then.

    `sasl` logs the session in (SASL DIGEST-MD5); `secure_acls` (zookeeper.set.acl)
    creates znodes that only that identity may change (`zk_data.default_acls`)."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18_000,
        connection_timeout_ms: int = 18_000,
        secure_acls: bool = False,
        sasl: ZkSaslLogin | None = None,
    ) -> None:
        hosts, chroot = split_chroot(connect)
        timeout_s = connection_timeout_ms / 1000

        def client(chroot: str) -> AclKazooClient:
            zk = AclKazooClient(
                hosts=hosts + chroot,
                timeout=session_timeout_ms / 1000,
                secure=secure_acls,
                sasl_options=sasl.kazoo_options() if sasl else None,
            )
            zk.start(timeout=timeout_s)
            try:
                # The SASL exchange follows the session's creation: a refused login shows
                # on the first request.
                zk.exists("/")
            except AuthFailedError:
                zk.stop()
                zk.close()
                assert sasl is not None
                raise ZkAuthFailedError(
                    f"ZooKeeper at {hosts} refused the SASL login of {sasl.username!r} "
                    f"({sasl.source}): check the username and password"
                ) from None
            return zk

        if chroot:
            # Kafka creates the chroot itself before using it.
            bare = client("")
            try:
                bare.ensure_path(chroot)
            finally:
                bare.stop()
                bare.close()
        self.zk = client(chroot)
        self.session_timeout_ms = session_timeout_ms
        self.on_session_expired: Callable[[], None] | None = None
        self._lost = False
        self.zk.add_listener(self._state_changed)

    def _state_changed(self, state: str) -> None:
        if state == KazooState.LOST:
            self._lost = True
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            callback = self.on_session_expired
            if callback is not None:
                # Not on kazoo's event thread: the callback may call ZooKeeper itself.
                self.zk.handler.spawn(callback)

    @property
    def session_id(self) -> int:
        return int(self.zk.client_id[0]) if self.zk.client_id else 0

    def close(self) -> None:
        self.on_session_expired = None
        try:
            self.zk.stop()
        finally:
            self.zk.close()

    # -- set-up ----------------------------------------------------------------------------
    def create_top_level_paths(self) -> None:
        for path in zk_data.PERSISTENT_PATHS:
            self.zk.ensure_path(path)

    def get_or_create_cluster_id(self, proposed: str) -> str:
        try:
            self.zk.create(zk_data.CLUSTER_ID, zk_data.encode_cluster_id(proposed), makepath=True)
            return proposed
        except NodeExistsError:
            raw, _ = self.zk.get(zk_data.CLUSTER_ID)
            return zk_data.decode_cluster_id(raw)

    # -- brokers ---------------------------------------------------------------------------
    def register_broker(self, info: BrokerInfo) -> None:
        """Creates the broker's ephemeral znode. A node left by this broker's previous
        (crashed) session is waited out: it goes when that session times out."""
        path = zk_data.broker_path(info.broker_id)
        deadline = time.monotonic() + self.session_timeout_ms / 1000 + 5
        while True:
            try:
                self.zk.create(path, info.encode(), ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                stat = self.zk.exists(path)
                if stat is not None and stat.ephemeralOwner == self.session_id:
                    self.zk.set(path, info.encode())
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"broker.id {info.broker_id} is registered in ZooKeeper by another "
                        f"session ({path}): is another broker using the same id?"
                    ) from None
                log.info("Waiting for %s of a previous session to expire", path)
                time.sleep(0.5)

    def generate_broker_sequence_id(self) -> int:
        """Kafka's broker.id.generation: the version of /brokers/seqid after a write."""
        self.zk.ensure_path("/brokers/seqid")
        return int(self.zk.set("/brokers/seqid", b"").version)

    def get_all_brokers(self, watch: Watch | None = None) -> dict[int, BrokerInfo]:
        out: dict[int, BrokerInfo] = {}
        for child in self.zk.get_children(zk_data.BROKER_IDS, watch=watch):
            try:
                raw, stat = self.zk.get(zk_data.broker_path(int(child)))
            except (NoNodeError, ValueError):
                continue
            out[int(child)] = BrokerInfo.decode(int(child), raw, stat.czxid)
        return out

    # -- controller ------------------------------------------------------------------------
    def get_controller_id(self, watch: Watch | None = None) -> int | None:
        try:
            if self.zk.exists(zk_data.CONTROLLER, watch=watch) is None:
                return None
            raw, _ = self.zk.get(zk_data.CONTROLLER)
            return zk_data.decode_controller(raw)
        except NoNodeError:
            return None

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int] | None:
        """Kafka's registerControllerAndIncrementControllerEpoch: atomically creates the
        ephemeral /controller and bumps /controller_epoch (a conditional write, so two
        brokers cannot both win one epoch). Returns (epoch, epoch zk version), or None when
        another broker is controller."""
        self.zk.ensure_path("/")
        with contextlib.suppress(NodeExistsError):
            self.zk.create(zk_data.CONTROLLER_EPOCH, b"0")
        raw, stat = self.zk.get(zk_data.CONTROLLER_EPOCH)
        epoch = int(raw.decode() or 0) + 1
        tx = self.zk.transaction()
        tx.create(
            zk_data.CONTROLLER,
            zk_data.encode_controller(broker_id),
            acl=self.zk.acls(zk_data.CONTROLLER),
            ephemeral=True,
        )
        tx.set_data(zk_data.CONTROLLER_EPOCH, str(epoch).encode(), version=stat.version)
        results = tx.commit()
        if any(isinstance(r, Exception) for r in results):
            return None
        return epoch, stat.version + 1

    def controller_epoch(self) -> tuple[int, int]:
        raw, stat = self.zk.get(zk_data.CONTROLLER_EPOCH)
        return int(raw.decode() or 0), stat.version

    def delete_controller(self, broker_id: int) -> None:
        """Resigns: removes /controller if it is still this broker's."""
        try:
            raw, _ = self.zk.get(zk_data.CONTROLLER)
            if zk_data.decode_controller(raw) == broker_id:
                self.zk.delete(zk_data.CONTROLLER)
        except NoNodeError:
            pass

    # -- topics ----------------------------------------------------------------------------
    def get_all_topics(self, watch: Watch | None = None) -> set[str]:
        return set(self.zk.get_children(zk_data.TOPICS, watch=watch))

    def topic_exists(self, topic: str) -> bool:
        return self.zk.exists(zk_data.topic_path(topic)) is not None

    def get_topic_assignment(self, topic: str, watch: Watch | None = None) -> TopicAssignment:
        raw, _ = self.zk.get(zk_data.topic_path(topic), watch=watch)
        return TopicAssignment.decode(raw)

    def create_topic(
        self, topic: str, assignment: TopicAssignment, configs: dict[str, str]
    ) -> None:
        """Kafka's AdminZkClient.createTopicWithAssignment: configs first, then the
        assignment the controller watches for. Raises NodeExistsError if it exists."""
        if self.topic_exists(topic):
            raise NodeExistsError()
        config_path = zk_data.topic_config_path(topic)
        if self.zk.exists(config_path) is None:
            self.zk.create(config_path, zk_data.encode_config(configs), makepath=True)
        else:
            self.zk.set(config_path, zk_data.encode_config(configs))
        self.zk.create(zk_data.topic_path(topic), assignment.encode(), makepath=True)

    def set_topic_assignment(
        self, topic: str, assignment: TopicAssignment, epoch_version: int | None = None
    ) -> None:
        """Writes a topic's assignment; with `epoch_version` (the controller's writes
        during a reassignment) only while that controller epoch stands."""
        path = zk_data.topic_path(topic)
        if epoch_version is None:
            self.zk.set(path, assignment.encode())
            return
        tx = self.zk.transaction()
        tx.check(zk_data.CONTROLLER_EPOCH, epoch_version)
        tx.set_data(path, assignment.encode())
        results = tx.commit()
        if isinstance(results[0], Exception):
            raise ControllerMovedError()
        if isinstance(results[1], Exception):
            raise results[1]

    # -- /admin/reassign_partitions --------------------------------------------------------
    def get_reassignments(self, watch: Watch | None = None) -> dict[tuple[str, int], list[int]]:
        """The reassignments an operator wrote to /admin/reassign_partitions; the watch
        fires when the znode is created, changed or deleted."""
        if self.zk.exists(zk_data.REASSIGN_PARTITIONS, watch=watch) is None:
            return {}
        try:
            raw, _ = self.zk.get(zk_data.REASSIGN_PARTITIONS)
        except NoNodeError:
            return {}
        try:
            return zk_data.decode_reassignments(raw)
        except (ValueError, KeyError, TypeError):
            log.warning("Ignoring a malformed %s", zk_data.REASSIGN_PARTITIONS)
            return {}

    def set_reassignments(self, remaining: dict[tuple[str, int], list[int]]) -> None:
        """Leaves the reassignments still running in the znode; deletes it when none are."""
        with contextlib.suppress(NoNodeError):
            if remaining:
                self.zk.set(zk_data.REASSIGN_PARTITIONS, zk_data.encode_reassignments(remaining))
            else:
                self.zk.delete(zk_data.REASSIGN_PARTITIONS)

    def get_topic_configs(self, topic: str) -> dict[str, str]:
        try:
            raw, _ = self.zk.get(zk_data.topic_config_path(topic))
        except NoNodeError:
            return {}
        return zk_data.decode_config(raw)

    def set_topic_configs(self, topic: str, configs: dict[str, str]) -> None:
        path = zk_data.topic_config_path(topic)
        if self.zk.exists(path) is None:
            self.zk.create(path, zk_data.encode_config(configs), makepath=True)
        else:
            self.zk.set(path, zk_data.encode_config(configs))
        # Kafka's change notification, so other brokers reload the topic's config.
        self.zk.create(
            f"{zk_data.CONFIG_CHANGES}/config_change_",
            zk_data.encode_config_change(f"topics/{topic}"),
            sequence=True,
            makepath=True,
        )

    def get_config_changes(self, watch: Watch | None = None) -> list[str]:
        """The `/config/changes` notifications, oldest first (sequence-numbered names)."""
        return sorted(self.zk.get_children(zk_data.CONFIG_CHANGES, watch=watch))

    def read_config_change(self, name: str) -> str | None:
        """A notification's entity path (`topics/<name>`, ...), or None if it is gone or
        unreadable."""
        try:
            raw, _ = self.zk.get(f"{zk_data.CONFIG_CHANGES}/{name}")
            return zk_data.decode_config_change(raw)
        except (NoNodeError, ValueError, KeyError, TypeError):
            return None

    def delete_topic_znodes(self, topic: str) -> None:
        for path in (zk_data.topic_path(topic), zk_data.topic_config_path(topic)):
            with contextlib.suppress(NoNodeError, NotEmptyError):
                self.zk.delete(path, recursive=True)

    # -- ACLs ------------------------------------------------------------------------------
    def get_all_acls(self) -> dict[tuple[str, str, str], list[dict[str, str]]]:
        """(pattern type, resource type, name) -> the resource's ACL entries."""
        out: dict[tuple[str, str, str], list[dict[str, str]]] = {}
        for pattern, root in (("LITERAL", zk_data.ACL_LITERAL), ("PREFIXED", zk_data.ACL_PREFIXED)):
            with contextlib.suppress(NoNodeError):
                for rtype in self.zk.get_children(root):
                    with contextlib.suppress(NoNodeError):
                        for name in self.zk.get_children(f"{root}/{rtype}"):
                            with contextlib.suppress(NoNodeError):
                                raw, _ = self.zk.get(f"{root}/{rtype}/{name}")
                                out[(pattern, rtype, name)] = zk_data.decode_acls(raw)
        return out

    def update_resource_acls(
        self,
        pattern: str,
        resource_type: str,
        name: str,
        change: Callable[[list[dict[str, str]]], list[dict[str, str]]],
    ) -> None:
        """Applies `change` to one resource's ACLs, retried when another broker wrote them
        in between (a conditional write, as Kafka's updateResourceAcls); an empty result
        removes the znode. Then announces the change to every broker."""
        root = zk_data.ACL_LITERAL if pattern == "LITERAL" else zk_data.ACL_PREFIXED
        path = f"{root}/{resource_type}/{name}"
        while True:
            try:
                raw, stat = self.zk.get(path)
                current, version = zk_data.decode_acls(raw), stat.version
            except NoNodeError:
                current, version = [], -1
            wanted = change(current)
            if wanted == current:
                return
            try:
                if version < 0:
                    self.zk.create(path, zk_data.encode_acls(wanted), makepath=True)
                elif wanted:
                    self.zk.set(path, zk_data.encode_acls(wanted), version=version)
                else:
                    self.zk.delete(path, version=version)
                break
            except (NodeExistsError, BadVersionError, NoNodeError):
                continue
        changes = (
            zk_data.ACL_LITERAL_CHANGES if pattern == "LITERAL" else zk_data.ACL_EXTENDED_CHANGES
        )
        self.zk.create(
            f"{changes}/{zk_data.ACL_CHANGE_PREFIX}",
            zk_data.encode_acl_change(resource_type, name, pattern),
            sequence=True,
            makepath=True,
        )
        self._purge_old_notifications(changes)

    def _purge_old_notifications(self, path: str) -> None:
        """Notifications older than Kafka's 15 minutes have reached every live broker."""
        cutoff_ms = time.time() * 1000 - _NOTIFICATION_EXPIRY_MS
        for child in self.zk.get_children(path):
            with contextlib.suppress(NoNodeError):
                stat = self.zk.exists(f"{path}/{child}")
                if stat is not None and stat.ctime < cutoff_ms:
                    self.zk.delete(f"{path}/{child}")

    def watch_acl_changes(self, callback: Callable[[], None]) -> None:
        """Calls `callback` (off kazoo's thread) whenever an ACL change is announced, and
        once now."""
        for path in (zk_data.ACL_LITERAL_CHANGES, zk_data.ACL_EXTENDED_CHANGES):
            self.zk.ensure_path(path)
            # kazoo's ChildrenWatch sets the watch again after each event and reconnection.
            self.zk.ChildrenWatch(path, lambda _children: self.zk.handler.spawn(callback))

    # -- topic deletion --------------------------------------------------------------------
    def mark_topic_for_deletion(self, topic: str) -> None:
        with contextlib.suppress(NodeExistsError):
            self.zk.create(f"{zk_data.DELETE_TOPICS}/{topic}", b"", makepath=True)

    def get_topics_to_delete(self, watch: Watch | None = None) -> set[str]:
        return set(self.zk.get_children(zk_data.DELETE_TOPICS, watch=watch))

    def delete_topic_deletion_marker(self, topic: str) -> None:
        with contextlib.suppress(NoNodeError):
            self.zk.delete(f"{zk_data.DELETE_TOPICS}/{topic}")

    # -- partition states ------------------------------------------------------------------
    def get_partition_state(self, topic: str, partition: int) -> LeaderIsrAndControllerEpoch | None:
        try:
            raw, stat = self.zk.get(zk_data.partition_state_path(topic, partition))
        except NoNodeError:
            return None
        return LeaderIsrAndControllerEpoch.decode(raw, stat.version)

    def create_partition_state(
        self, topic: str, partition: int, state: LeaderIsrAndControllerEpoch, epoch_version: int
    ) -> LeaderIsrAndControllerEpoch:
        """Creates the state znode, checked against the controller epoch's zk version so
        a deposed controller's write fails (Kafka wraps every controller write so)."""
        path = zk_data.partition_state_path(topic, partition)
        self.zk.ensure_path(path.rsplit("/", 1)[0])
        tx = self.zk.transaction()
        tx.check(zk_data.CONTROLLER_EPOCH, epoch_version)
        tx.create(path, state.encode(), acl=self.zk.acls(path))
        results = tx.commit()
        if isinstance(results[0], Exception):
            raise ControllerMovedError()
        if isinstance(results[1], NodeExistsError):
            # Left by an earlier controller: overwrite it under the same epoch check.
            return self.update_partition_state(topic, partition, state, None, epoch_version)
        if isinstance(results[1], Exception):
            raise results[1]
        return state

    def update_partition_state(
        self,
        topic: str,
        partition: int,
        state: LeaderIsrAndControllerEpoch,
        expected_version: int | None,
        epoch_version: int | None,
    ) -> LeaderIsrAndControllerEpoch:
        """Conditional write of a partition state: `expected_version` is the state
        znode's version the writer read (None: any); `epoch_version` the controller
        epoch's (None for a leader's ISR change). Raises BadVersionError when the state
        moved on, ControllerMovedError when the controller did."""
        path = zk_data.partition_state_path(topic, partition)
        version = -1 if expected_version is None else expected_version
        if epoch_version is None:
            stat = self.zk.set(path, state.encode(), version=version)
        else:
            tx = self.zk.transaction()
            tx.check(zk_data.CONTROLLER_EPOCH, epoch_version)
            tx.set_data(path, state.encode(), version=version)
            results = tx.commit()
            if isinstance(results[0], Exception):
                raise ControllerMovedError()
            if isinstance(results[1], Exception):
                raise BadVersionError() if "BadVersion" in type(results[1]).__name__ else results[1]
            stat = results[1]
        return LeaderIsrAndControllerEpoch(
            state.leader, state.leader_epoch, state.isr, state.controller_epoch, stat.version
        )

    # -- ISR change notifications ----------------------------------------------------------
    def propagate_isr_changes(self, partitions: list[tuple[str, int]]) -> None:
        self.zk.create(
            f"{zk_data.ISR_CHANGE_NOTIFICATION}/{zk_data.ISR_CHANGE_PREFIX}",
            zk_data.encode_isr_change(partitions),
            sequence=True,
            makepath=True,
        )

    def get_isr_change_notifications(self, watch: Watch | None = None) -> list[str]:
        return sorted(self.zk.get_children(zk_data.ISR_CHANGE_NOTIFICATION, watch=watch))

    def read_and_delete_isr_change(self, name: str) -> list[tuple[str, int]]:
        path = f"{zk_data.ISR_CHANGE_NOTIFICATION}/{name}"
        try:
            raw, _ = self.zk.get(path)
            self.zk.delete(path)
        except NoNodeError:
            return []
        return zk_data.decode_isr_change(raw)

    # -- log dir event notifications ---------------------------------------------------------
    def propagate_log_dir_event(self, broker_id: int) -> None:
        """Tells the controller a log dir of `broker_id` failed (Kafka's
        propagateLogDirEvent)."""
        self.zk.create(
            f"{zk_data.LOG_DIR_EVENT_NOTIFICATION}/{zk_data.LOG_DIR_EVENT_PREFIX}",
            zk_data.encode_log_dir_event(broker_id),
            sequence=True,
            makepath=True,
        )

    def get_log_dir_event_notifications(self, watch: Watch | None = None) -> list[str]:
        return sorted(self.zk.get_children(zk_data.LOG_DIR_EVENT_NOTIFICATION, watch=watch))

    def read_and_delete_log_dir_event(self, name: str) -> int | None:
        """The broker id of one notification, which is deleted (None if already gone or
        unreadable)."""
        path = f"{zk_data.LOG_DIR_EVENT_NOTIFICATION}/{name}"
        try:
            raw, _ = self.zk.get(path)
            self.zk.delete(path)
        except NoNodeError:
            return None
        try:
            return zk_data.decode_log_dir_event(raw)
        except (ValueError, KeyError, TypeError):
            log.warning("Ignoring the unreadable log dir event %s", name)
            return None

    # -- producer ids ----------------------------------------------------------------------
    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        """Kafka's ZkProducerIdManager: claims the next block with a conditional write
        of /latest_producer_id_block; returns the block's first id."""
        while True:
            try:
                raw, stat = self.zk.get(zk_data.PRODUCER_ID_BLOCK)
            except NoNodeError:
                self.zk.ensure_path(zk_data.PRODUCER_ID_BLOCK)
                continue
            start = zk_data.decode_producer_id_block_end(raw) + 1 if raw else 0
            data = zk_data.encode_producer_id_block(broker_id, start, start + size - 1)
            try:
                self.zk.set(zk_data.PRODUCER_ID_BLOCK, data, version=stat.version)
                return start
            except BadVersionError:
                continue
