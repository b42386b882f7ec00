"""Kafka's `KafkaController` (ZooKeeper mode): elected through the ephemeral /controller
znode with an epoch in /controller_epoch that fences a deposed controller's writes.

All work is an event on `ControllerEventManager`'s queue. On winning the election the
controller reads brokers, topics and partition states, elects leaders where needed and
sends every live broker UpdateMetadata and LeaderAndIsr. Afterwards it reacts to broker
arrival and loss (/brokers/ids), new topics and partitions (/brokers/topics), topic
deletion (/admin/delete_topics), ISR changes the leaders wrote (/isr_change_notification),
failed log dirs (/log_dir_event_notification: the broker's LeaderAndIsr response names
its replicas in the failed dir, which go offline) and ControlledShutdown requests.
Partition state changes are written to ZooKeeper first (conditionally on the controller
epoch), then sent to the brokers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkars.controller.channel_manager import ControllerChannelManager
from kafkars.controller.election import (
    controlled_shutdown_leader,
    offline_partition_leader,
    preferred_replica_leader,
)
from kafkars.controller.event_manager import ControllerEventManager
from kafkars.controller.reassignment import (
    INVALID_REPLICA_ASSIGNMENT,
    NO_REASSIGNMENT_IN_PROGRESS,
    ReplicaAssignment,
    complete,
    invalid_target,
    leader_after,
    plan,
)
from kafkars.protocol import ApiKey, Errors
from kafkars.security.client_auth import PLAINTEXT, ClientSecurity
from kafkars.zk.kafka_zk_client import ControllerMovedError, KafkaZkClient
from kafkars.zk.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment

log = logging.getLogger("kafkars.controller.KafkaController")

LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION = 5, 3, 7
NO_LEADER = -1
# The leader Kafka sends in UpdateMetadata for a partition being deleted.
LEADER_DURING_DELETE = -2
# Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
PRODUCER_ID_BLOCK_SIZE = 1000
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

TopicPartition = tuple[str, int]


# -- events ----------------------------------------------------------------------------------
@dataclass
class Startup:
    pass


@dataclass
class Reelect:
    pass


@dataclass
class Expire:
    pass


@dataclass
class BrokerChange:
    pass


@dataclass
class TopicChange:
    pass


@dataclass
class PartitionModifications:
    topic: str


@dataclass
class TopicDeletion:
    pass


@dataclass
class IsrChangeNotification:
    pass


@dataclass
class LogDirEventNotification:
    pass


@dataclass
class LeaderAndIsrResponseReceived:
    broker_id: int
    response: dict[str, Any]


@dataclass
class ControlledShutdown:
    broker_id: int
    reply: Callable[[int, list[TopicPartition]], None]


@dataclass
class ElectLeaders:
    """ElectLeaders (preferred or unclean) for `partitions` (None: all)."""

    partitions: list[TopicPartition] | None
    unclean: bool
    reply: Callable[[dict[TopicPartition, int]], None]


@dataclass
class AutoLeaderRebalance:
    pass


@dataclass
class AlterReassignments:
    """AlterPartitionReassignments: a target replica list per partition (None cancels);
    `allow_rf_change` False refuses a target of another size (KIP-860)."""

    reassignments: dict[TopicPartition, list[int] | None]
    allow_rf_change: bool
    reply: Callable[[dict[TopicPartition, tuple[int, str | None]]], None]


@dataclass
class ListReassignments:
    partitions: list[TopicPartition] | None
    reply: Callable[[dict[TopicPartition, ReplicaAssignment]], None]


@dataclass
class AlterPartition:
    """AlterPartition (KIP-497) from a leader of Kafka's kind: its new ISRs, answered with
    the response body for request `version`."""

    body: dict[str, Any]
    version: int
    reply: Callable[[dict[str, Any]], None]


@dataclass
class AllocateProducerIds:
    """AllocateProducerIds (KIP-730) from a broker of Kafka's kind: the next block."""

    broker_id: int
    broker_epoch: int
    reply: Callable[[dict[str, Any]], None]


@dataclass
class ZkReassignment:
    """/admin/reassign_partitions was created or changed."""


@dataclass
class Resign:
    done: threading.Event = field(default_factory=threading.Event)


# -- state -----------------------------------------------------------------------------------
@dataclass
class ControllerContext:
    """What the active controller knows (Kafka's ControllerContext)."""

    epoch: int = 0
    epoch_zk_version: int = 0
    live: dict[int, BrokerInfo] = field(default_factory=dict)
    assignments: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    # Per broker, its replicas in a failed log dir (their LeaderAndIsr answer was
    # KAFKA_STORAGE_ERROR): not eligible to lead or be in the ISR until it restarts.
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    def is_replica_online(self, broker: int, tp: TopicPartition) -> bool:
        return (
            broker in self.live
            and broker not in self.shutting_down
            and tp not in self.replicas_on_offline_dirs.get(broker, ())
        )

    def partitions(self) -> list[TopicPartition]:
        return [(t, p) for t, a in self.assignments.items() for p in sorted(a.partitions)]

    def replicas(self, tp: TopicPartition) -> list[int]:
        return self.assignments[tp[0]].partitions.get(tp[1], [])

    def assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        a = self.assignments[tp[0]]
        return ReplicaAssignment(
            a.partitions.get(tp[1], []), a.adding.get(tp[1], []), a.removing.get(tp[1], [])
        )

    def reassigning(self) -> list[TopicPartition]:
        return [
            (t, p) for t, a in self.assignments.items() for p in a.partitions if a.is_reassigning(p)
        ]


class KafkaController:
    """Runs on every broker; acts only while this broker is the elected controller."""

    def __init__(
        self,
        zk: KafkaZkClient,
        broker_id: int,
        *,
        inter_broker_listener: str,
        security: ClientSecurity = PLAINTEXT,
        unclean_leader_election: Callable[[str], bool],
        auto_leader_rebalance: bool = False,
        imbalance_percentage: int = 10,
        imbalance_interval_s: float = 300.0,
    ) -> None:
        self._imbalance_percentage = imbalance_percentage
        self._imbalance_interval_s = imbalance_interval_s
        self._stop_rebalance = threading.Event()
        self._rebalance_thread = (
            threading.Thread(target=self._rebalance_loop, name="auto-leader-rebalance", daemon=True)
            if auto_leader_rebalance
            else None
        )
        self.zk = zk
        self.broker_id = broker_id
        self.inter_broker_listener = inter_broker_listener
        self.security = security
        self._unclean = unclean_leader_election
        self.ctx = ControllerContext()
        self.active = False
        self.active_controller_id = -1
        self.channel = ControllerChannelManager(broker_id, security)
        self.events = ControllerEventManager(self._process)
        self._watched_topics: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------------
    def startup(self) -> None:
        self.events.start()
        self.events.put(Startup())
        if self._rebalance_thread is not None:
            self._rebalance_thread.start()

    def shutdown(self) -> None:
        self._stop_rebalance.set()
        resign = Resign()
        self.events.put(resign)
        resign.done.wait(timeout=10)
        self.events.close()
        self.channel.shutdown()

    def controlled_shutdown(
        self, broker_id: int, reply: Callable[[int, list[TopicPartition]], None]
    ) -> None:
        self.events.put(ControlledShutdown(broker_id, reply))

    def on_session_expired(self) -> None:
        self.events.put(Expire())

    def elect_leaders(
        self,
        partitions: list[TopicPartition] | None,
        unclean: bool,
        reply: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        self.events.put(ElectLeaders(partitions, unclean, reply))

    def alter_reassignments(
        self,
        reassignments: dict[TopicPartition, list[int] | None],
        allow_rf_change: bool,
        reply: Callable[[dict[TopicPartition, tuple[int, str | None]]], None],
    ) -> None:
        self.events.put(AlterReassignments(reassignments, allow_rf_change, reply))

    def list_reassignments(
        self,
        partitions: list[TopicPartition] | None,
        reply: Callable[[dict[TopicPartition, ReplicaAssignment]], None],
    ) -> None:
        self.events.put(ListReassignments(partitions, reply))

    def alter_partition(
        self, body: dict[str, Any], version: int, reply: Callable[[dict[str, Any]], None]
    ) -> None:
        self.events.put(AlterPartition(body, version, reply))

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, reply: Callable[[dict[str, Any]], None]
    ) -> None:
        self.events.put(AllocateProducerIds(broker_id, broker_epoch, reply))

    def offline_partition_count(self) -> int:
        return sum(1 for s in list(self.ctx.states.values()) if s.leader == NO_LEADER)

    # -- watches: they only queue events ------------------------------------------------------
    def _watch(self, event: Any) -> Callable[[Any], None]:
        return lambda _: self.events.put(event)

    # -- the event loop ----------------------------------------------------------------------
    def _process(self, event: Any) -> None:
        if isinstance(event, (Startup, Reelect)):
            self._elect()
        elif isinstance(event, Expire):
            self._resign()
            self._elect()
        elif isinstance(event, Resign):
            self._resign()
            event.done.set()
        elif isinstance(event, ControlledShutdown):
            self._on_controlled_shutdown(event)
        elif isinstance(event, ElectLeaders):
            if not self.active:
                event.reply({tp: Errors.NOT_CONTROLLER for tp in event.partitions or []})
            else:
                event.reply(self._elect_leaders(event.partitions, event.unclean))
        elif isinstance(event, AlterReassignments):
            if not self.active:
                event.reply({tp: (Errors.NOT_CONTROLLER, None) for tp in event.reassignments})
            else:
                event.reply(
                    {
                        tp: self._reassign(tp, target, event.allow_rf_change)
                        for tp, target in event.reassignments.items()
                    }
                )
        elif isinstance(event, ListReassignments):
            event.reply(self._list_reassignments(event.partitions) if self.active else {})
        elif isinstance(event, AlterPartition):
            try:
                event.reply(self._alter_partition(event.body, event.version))
            except ControllerMovedError:
                event.reply({"throttle_time_ms": 0, "error_code": int(Errors.NOT_CONTROLLER)})
                self._resign()
                self._elect()
        elif isinstance(event, AllocateProducerIds):
            event.reply(self._allocate_producer_ids(event.broker_id, event.broker_epoch))
        elif not self.active:
            return
        else:
            try:
                if isinstance(event, BrokerChange):
                    self._on_broker_change()
                elif isinstance(event, TopicChange):
                    self._on_topic_change()
                elif isinstance(event, PartitionModifications):
                    self._on_partition_modifications(event.topic)
                elif isinstance(event, TopicDeletion):
                    self._on_topic_deletion()
                elif isinstance(event, IsrChangeNotification):
                    self._on_isr_change()
                elif isinstance(event, LogDirEventNotification):
                    self._on_log_dir_event()
                elif isinstance(event, LeaderAndIsrResponseReceived):
                    self._on_leader_and_isr_response(event.broker_id, event.response)
                elif isinstance(event, AutoLeaderRebalance):
                    self._rebalance_leaders()
                elif isinstance(event, ZkReassignment):
                    self._on_zk_reassignment()
            except ControllerMovedError:
                log.info("Controller moved to another broker; resigning")
                self._resign()
                self._elect()

    # -- election ----------------------------------------------------------------------------
    def _elect(self) -> None:
        current = self.zk.get_controller_id(watch=self._watch(Reelect()))
        if current is not None:
            self.active_controller_id = current
            if current == self.broker_id and not self.active:
                # Our own node from before (session moved on): give it up and retry.
                self.zk.delete_controller(self.broker_id)
                self.events.put(Reelect())
            return
        won = self.zk.register_controller_and_increment_epoch(self.broker_id)
        if won is None:
            self.active_controller_id = (
                self.zk.get_controller_id(watch=self._watch(Reelect())) or -1
            )
            return
        self.ctx = ControllerContext(epoch=won[0], epoch_zk_version=won[1])
        self.active = True
        self.active_controller_id = self.broker_id
        # Re-arm the watch on /controller so losing it is noticed.
        self.zk.get_controller_id(watch=self._watch(Reelect()))
        log.info("[Controller id=%s] elected, epoch %s", self.broker_id, won[0])
        try:
            self._on_controller_failover()
        except ControllerMovedError:
            self._resign()

    def _resign(self) -> None:
        if not self.active:
            return
        log.info("[Controller id=%s] resigning", self.broker_id)
        self.active = False
        self.channel.shutdown()
        self.channel = ControllerChannelManager(self.broker_id, self.security)
        self._watched_topics.clear()
        with contextlib.suppress(Exception):
            self.zk.delete_controller(self.broker_id)

    def _on_controller_failover(self) -> None:
        self._read_brokers()
        self._read_topics()
        for name in self.zk.get_isr_change_notifications(
            watch=self._watch(IsrChangeNotification())
        ):
            self.zk.read_and_delete_isr_change(name)
        # Failed log dirs show in the LeaderAndIsr responses below (Kafka drops the
        # notifications on failover too).
        for name in self.zk.get_log_dir_event_notifications(
            watch=self._watch(LogDirEventNotification())
        ):
            self.zk.read_and_delete_log_dir_event(name)
        # Partitions without a live leader get one now; new partitions get their state;
        # brokers that died with the previous controller leave the ISRs.
        self._elect_offline_leaders(self.ctx.partitions())
        self._remove_dead_from_isrs()
        self._send_update_metadata(list(self.ctx.live), self.ctx.partitions())
        for broker in self.ctx.live:
            self._send_leader_and_isr(broker, self._partitions_on(broker))
        self._on_topic_deletion()
        # Reassignments the previous controller left running go on from where they are.
        for tp in self.ctx.reassigning():
            self._maybe_complete_reassignment(tp)
        self._on_zk_reassignment()

    # -- brokers -----------------------------------------------------------------------------
    def _read_brokers(self) -> tuple[set[int], set[int]]:
        brokers = self.zk.get_all_brokers(watch=self._watch(BrokerChange()))
        before = set(self.ctx.live)
        self.ctx.live = brokers
        for broker_id, info in brokers.items():
            endpoint = info.endpoints.get(self.inter_broker_listener)
            if endpoint is not None:
                self.channel.add_broker(broker_id, endpoint)
        for gone in before - set(brokers):
            self.channel.remove_broker(gone)
        return set(brokers) - before, before - set(brokers)

    def _on_broker_change(self) -> None:
        new, dead = self._read_brokers()
        if dead:
            log.info("[Controller id=%s] brokers lost: %s", self.broker_id, sorted(dead))
            self.ctx.shutting_down -= dead
            for broker in dead:
                self.ctx.replicas_on_offline_dirs.pop(broker, None)
            self._on_broker_failure(dead)
        if new:
            log.info("[Controller id=%s] brokers joined: %s", self.broker_id, sorted(new))
            self._on_broker_startup(new)

    def _on_broker_failure(self, dead: set[int]) -> None:
        changed = self._elect_offline_leaders(
            [tp for tp, s in self.ctx.states.items() if s.leader in dead]
        )
        changed += self._remove_dead_from_isrs()
        self._send_update_metadata(list(self.ctx.live), changed or self.ctx.partitions())
        self._send_leader_and_isr_to_replicas(changed)

    def _remove_dead_from_isrs(self) -> list[TopicPartition]:
        """Kafka's OfflineReplica transition: a broker that is not live leaves the ISR of
        every partition that still has a leader (a new leader epoch each)."""
        changed = []
        live = set(self.ctx.live)
        for tp, state in list(self.ctx.states.items()):
            if state.leader in live and any(b not in live for b in state.isr):
                self._write_state(tp, state.leader, [b for b in state.isr if b in live])
                changed.append(tp)
        return changed

    def _on_broker_startup(self, new: set[int]) -> None:
        # A restarted broker's dirs are online again, or its answers will say otherwise.
        for broker in new:
            self.ctx.replicas_on_offline_dirs.pop(broker, None)
        self._send_update_metadata(list(self.ctx.live), self.ctx.partitions())
        for broker in new:
            self._send_leader_and_isr(broker, self._partitions_on(broker))
        offline = [tp for tp, s in self.ctx.states.items() if s.leader == NO_LEADER]
        changed = self._elect_offline_leaders(offline)
        if changed:
            self._send_update_metadata(list(self.ctx.live), changed)
            self._send_leader_and_isr_to_replicas(changed)

    # -- topics ------------------------------------------------------------------------------
    def _read_topics(self) -> list[TopicPartition]:
        """Reads every topic's assignment and partition states; returns partitions that
        have no state yet."""
        topics = self.zk.get_all_topics(watch=self._watch(TopicChange()))
        fresh: list[TopicPartition] = []
        for topic in topics - set(self.ctx.assignments):
            fresh += self._read_topic(topic)
        for gone in set(self.ctx.assignments) - topics:
            self._forget_topic(gone)
        return fresh

    def _read_topic(self, topic: str) -> list[TopicPartition]:
        try:
            assignment = self.zk.get_topic_assignment(
                topic, watch=self._watch(PartitionModifications(topic))
            )
        except Exception:
            return []
        self._watched_topics.add(topic)
        self.ctx.assignments[topic] = assignment
        fresh = []
        for p in sorted(assignment.partitions):
            state = self.zk.get_partition_state(topic, p)
            if state is None:
                fresh.append((topic, p))
            else:
                self.ctx.states[(topic, p)] = state
        return fresh

    def _forget_topic(self, topic: str) -> None:
        self.ctx.assignments.pop(topic, None)
        for tp in [tp for tp in self.ctx.states if tp[0] == topic]:
            del self.ctx.states[tp]

    def _on_topic_change(self) -> None:
        fresh = self._read_topics()
        self._on_new_partitions(fresh)

    def _on_partition_modifications(self, topic: str) -> None:
        try:
            assignment = self.zk.get_topic_assignment(
                topic, watch=self._watch(PartitionModifications(topic))
            )
        except Exception:
            return
        known = self.ctx.assignments.get(topic)
        self.ctx.assignments[topic] = assignment
        added = [
            (topic, p)
            for p in sorted(assignment.partitions)
            if known is None or p not in known.partitions
        ]
        self._on_new_partitions(added)

    def _on_new_partitions(self, partitions: list[TopicPartition]) -> None:
        """Kafka's onNewPartitionCreation: the first live replica leads, the live replicas
        are the ISR, epoch 0; written to ZooKeeper, then sent."""
        if not partitions:
            return
        created = []
        for tp in partitions:
            live = [b for b in self.ctx.replicas(tp) if b in self.ctx.live]
            leader = live[0] if live else NO_LEADER
            state = LeaderIsrAndControllerEpoch(leader, 0, live, self.ctx.epoch)
            self.ctx.states[tp] = self.zk.create_partition_state(
                tp[0], tp[1], state, self.ctx.epoch_zk_version
            )
            created.append(tp)
        self._send_leader_and_isr_to_replicas(created, is_new=True)
        self._send_update_metadata(list(self.ctx.live), created)

    def _on_topic_deletion(self) -> None:
        to_delete = self.zk.get_topics_to_delete(watch=self._watch(TopicDeletion()))
        for topic in to_delete:
            assignment = self.ctx.assignments.get(topic)
            if assignment is not None:
                partitions = [(topic, p) for p in sorted(assignment.partitions)]
                self._send_update_metadata(list(self.ctx.live), partitions, deleting=True)
                by_broker: dict[int, list[TopicPartition]] = {}
                for tp in partitions:
                    for b in self.ctx.replicas(tp):
                        by_broker.setdefault(b, []).append(tp)
                for broker, tps in by_broker.items():
                    self._send_stop_replica(broker, tps, delete=True)
                self._forget_topic(topic)
                self._watched_topics.discard(topic)
            self.zk.delete_topic_znodes(topic)
            self.zk.delete_topic_deletion_marker(topic)
            log.info("[Controller id=%s] deleted topic %s", self.broker_id, topic)

    def _on_isr_change(self) -> None:
        changed: list[TopicPartition] = []
        names = self.zk.get_isr_change_notifications(watch=self._watch(IsrChangeNotification()))
        for name in names:
            for tp in self.zk.read_and_delete_isr_change(name):
                if tp in self.ctx.states:
                    state = self.zk.get_partition_state(*tp)
                    if state is not None:
                        self.ctx.states[tp] = state
                        changed.append(tp)
        if changed:
            self._send_update_metadata(list(self.ctx.live), sorted(set(changed)))
            for tp in sorted(set(changed)):
                if self.ctx.assignment(tp).adding or self.ctx.assignment(tp).removing:
                    self._maybe_complete_reassignment(tp)

    # -- failed log dirs ---------------------------------------------------------------------
    def _on_log_dir_event(self) -> None:
        """Kafka's processLogDirEventNotification: every broker that announced a failed
        log dir gets a LeaderAndIsr for all its replicas; those in the failed dir answer
        KAFKA_STORAGE_ERROR (handled in `_on_leader_and_isr_response`)."""
        brokers = set()
        for name in self.zk.get_log_dir_event_notifications(
            watch=self._watch(LogDirEventNotification())
        ):
            broker = self.zk.read_and_delete_log_dir_event(name)
            if broker is not None:
                brokers.add(broker)
        for broker in sorted(brokers & set(self.ctx.live)):
            log.info(
                "[Controller id=%s] handling a log dir failure on broker %s", self.broker_id, broker
            )
            self._send_leader_and_isr(broker, self._partitions_on(broker))

    def _on_leader_and_isr_response(self, broker: int, response: dict[str, Any]) -> None:
        """Kafka's processLeaderAndIsrResponseReceived: replicas answered with
        KAFKA_STORAGE_ERROR are in a failed log dir, those answered without error are
        online; the newly offline ones go offline (`_on_replicas_offline`)."""
        if response.get("error_code", 0) != 0:
            log.error(
                "[Controller id=%s] LeaderAndIsr to broker %s failed with error %s",
                self.broker_id,
                broker,
                response["error_code"],
            )
            return
        names = {a.topic_id: t for t, a in self.ctx.assignments.items()}
        offline: set[TopicPartition] = set()
        online: set[TopicPartition] = set()
        for topic in response.get("topics", []):
            name = names.get(topic["topic_id"])
            if name is None:
                continue
            for p in topic["partition_errors"]:
                tp = (name, p["partition_index"])
                if p["error_code"] == Errors.KAFKA_STORAGE_ERROR:
                    offline.add(tp)
                elif p["error_code"] == 0:
                    online.add(tp)
        before = self.ctx.replicas_on_offline_dirs.get(broker, set())
        now = (before - online) | offline
        self.ctx.replicas_on_offline_dirs[broker] = now
        if now - before:
            self._on_replicas_offline(broker, sorted(now - before))

    def _on_replicas_offline(self, broker: int, partitions: list[TopicPartition]) -> None:
        """Kafka's onReplicasBecomeOffline for one broker's replicas in a failed dir:
        partitions it led get a new leader from the rest of the ISR (or none), the
        others lose it from their ISR; it stops the replicas (StopReplica without
        delete), the other replicas get LeaderAndIsr, every broker UpdateMetadata."""
        log.info(
            "[Controller id=%s] replicas %s on broker %s are offline (failed log dir)",
            self.broker_id,
            partitions,
            broker,
        )
        changed: list[TopicPartition] = []
        for tp in partitions:
            state = self.ctx.states.get(tp)
            if state is None:
                continue
            if state.leader == broker:
                online = {b for b in self.ctx.live if self.ctx.is_replica_online(b, tp)}
                choice = offline_partition_leader(
                    self.ctx.replicas(tp), state.isr, online, self._unclean(tp[0])
                )
                if choice is not None:
                    self._write_state(tp, choice[0], choice[1])
                else:
                    # No other replica may lead: offline, the ISR kept (as on a death).
                    self._write_state(tp, NO_LEADER, state.isr)
                changed.append(tp)
            elif broker in state.isr:
                self._write_state(tp, state.leader, [b for b in state.isr if b != broker])
                changed.append(tp)
        self._send_stop_replica(broker, partitions, delete=False)
        self._send_leader_and_isr_to_replicas(changed)
        self._send_update_metadata(list(self.ctx.live), changed)

    # -- requests from leaders of Kafka's kind --------------------------------------------------
    def _alter_partition(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        """Kafka's processAlterPartition (ZooKeeper mode): a leader's new ISR is written
        conditionally on its partition epoch (the state znode's version) and the
        controller epoch, then sent to every broker in UpdateMetadata. Kafka's brokers
        change ISRs this way from IBP 2.7-IV2 on; kafkars' own write ZooKeeper directly."""
        if not self.active:
            return {"throttle_time_ms": 0, "error_code": int(Errors.NOT_CONTROLLER)}
        broker_id = body["broker_id"]
        info = self.ctx.live.get(broker_id)
        if info is None or info.epoch != body["broker_epoch"]:
            return {"throttle_time_ms": 0, "error_code": int(Errors.STALE_BROKER_EPOCH)}
        by_id = {a.topic_id: t for t, a in self.ctx.assignments.items()}
        topics_out: list[dict[str, Any]] = []
        changed: list[TopicPartition] = []
        for topic in body["topics"]:
            name = by_id.get(topic["topic_id"]) if version >= 2 else topic["topic_name"]
            key = {"topic_id": topic["topic_id"]} if version >= 2 else {"topic_name": name}
            partitions_out: list[dict[str, Any]] = []
            topics_out.append({**key, "partitions": partitions_out})
            for req in topic["partitions"]:
                index = req["partition_index"]
                if name is None:
                    partitions_out.append(
                        {"partition_index": index, "error_code": int(Errors.UNKNOWN_TOPIC_ID)}
                    )
                    continue
                isr = (
                    [b["broker_id"] for b in req["new_isr_with_epochs"]]
                    if version >= 3
                    else list(req["new_isr"])
                )
                code, state = self._alter_isr(
                    (name, index),
                    broker_id,
                    req["leader_epoch"],
                    req["partition_epoch"],
                    isr,
                    version,
                )
                if state is not None and code == 0:
                    changed.append((name, index))
                out: dict[str, Any] = {"partition_index": index, "error_code": int(code)}
                if state is not None:
                    out.update(
                        leader_id=state.leader,
                        leader_epoch=state.leader_epoch,
                        isr=state.isr,
                        leader_recovery_state=0,
                        partition_epoch=state.zk_version,
                    )
                partitions_out.append(out)
        if changed:
            self._send_update_metadata(list(self.ctx.live), changed)
            for tp in changed:
                if self.ctx.assignment(tp).adding or self.ctx.assignment(tp).removing:
                    self._maybe_complete_reassignment(tp)
        return {"throttle_time_ms": 0, "error_code": 0, "topics": topics_out}

    def _alter_isr(
        self,
        tp: TopicPartition,
        leader: int,
        leader_epoch: int,
        partition_epoch: int,
        isr: list[int],
        version: int,
    ) -> tuple[int, LeaderIsrAndControllerEpoch | None]:
        """One partition of AlterPartition: (error code, the state to answer with)."""
        current = self.ctx.states.get(tp)
        if current is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
        if partition_epoch > current.zk_version or leader_epoch > current.leader_epoch:
            # The leader knows a newer state than ours: we are likely no longer controller.
            return Errors.NOT_CONTROLLER, None
        if leader_epoch < current.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH, None
        if leader == current.leader and sorted(isr) == sorted(current.isr):
            return Errors.NONE, current  # already so: idempotent
        if partition_epoch < current.zk_version:
            return Errors.INVALID_UPDATE_VERSION, None
        if any(b not in self.ctx.live for b in isr):
            code = Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED
            return code, None
        new = LeaderIsrAndControllerEpoch(
            leader, leader_epoch, isr, self.ctx.epoch, current.zk_version
        )
        try:
            self.ctx.states[tp] = self.zk.update_partition_state(
                tp[0], tp[1], new, current.zk_version, self.ctx.epoch_zk_version
            )
        except ControllerMovedError:
            raise
        except Exception:
            fresh = self.zk.get_partition_state(*tp)
            if fresh is not None:
                self.ctx.states[tp] = fresh
            return Errors.INVALID_UPDATE_VERSION, None
        return Errors.NONE, self.ctx.states[tp]

    def _allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> dict[str, Any]:
        """Kafka's processAllocateProducerIds: the next block of /latest_producer_id_block
        for a live broker (Kafka's brokers ask the controller from IBP 3.0-IV0 on)."""
        if not self.active:
            return {"throttle_time_ms": 0, "error_code": int(Errors.NOT_CONTROLLER)}
        info = self.ctx.live.get(broker_id)
        if info is None:
            return {"throttle_time_ms": 0, "error_code": int(Errors.BROKER_ID_NOT_REGISTERED)}
        if info.epoch != broker_epoch:
            return {"throttle_time_ms": 0, "error_code": int(Errors.STALE_BROKER_EPOCH)}
        start = self.zk.allocate_producer_id_block(broker_id, PRODUCER_ID_BLOCK_SIZE)
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "producer_id_start": start,
            "producer_id_len": PRODUCER_ID_BLOCK_SIZE,
        }

    # -- controlled shutdown ------------------------------------------------------------------
    def _on_controlled_shutdown(self, event: ControlledShutdown) -> None:
        if not self.active:
            event.reply(Errors.NOT_CONTROLLER, [])
            return
        if event.broker_id not in self.ctx.live:
            event.reply(15, [])  # BROKER_NOT_AVAILABLE
            return
        self.ctx.shutting_down.add(event.broker_id)
        moved: list[TopicPartition] = []
        for tp, state in list(self.ctx.states.items()):
            if event.broker_id not in self.ctx.replicas(tp) or len(self.ctx.replicas(tp)) < 2:
                continue
            if state.leader == event.broker_id:
                choice = controlled_shutdown_leader(
                    self.ctx.replicas(tp), state.isr, set(self.ctx.live), self.ctx.shutting_down
                )
                if choice is not None:
                    self._write_state(tp, choice[0], choice[1])
                    moved.append(tp)
            elif event.broker_id in state.isr:
                isr = [b for b in state.isr if b != event.broker_id]
                self._write_state(tp, state.leader, isr)
                moved.append(tp)
        # The broker going down gets no LeaderAndIsr (it would follow and rejoin the ISR)
        # but a StopReplica: it stops serving and fetching these partitions.
        self._send_leader_and_isr_to_replicas(moved)
        if moved:
            self._send_stop_replica(event.broker_id, moved, delete=False)
        self._send_update_metadata(list(self.ctx.live), moved)
        remaining = [
            tp
            for tp, s in self.ctx.states.items()
            if s.leader == event.broker_id and len(self.ctx.replicas(tp)) > 1
        ]
        event.reply(0, remaining)

    # -- ElectLeaders and preferred-leader rebalance --------------------------------------------
    def _elect_leaders(
        self, partitions: list[TopicPartition] | None, unclean: bool
    ) -> dict[TopicPartition, int]:
        """Kafka's onReplicaElection: preferred (the first assigned replica, if live and
        in the ISR) or unclean (any live replica when the partition has no leader).
        Returns an error code per partition (0 when elected)."""
        results: dict[TopicPartition, int] = {}
        live = set(self.ctx.live) - self.ctx.shutting_down
        changed: list[TopicPartition] = []
        for tp in partitions if partitions is not None else self.ctx.partitions():
            state = self.ctx.states.get(tp)
            if state is None:
                results[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            replicas = self.ctx.replicas(tp)
            if unclean:
                if state.leader in live:
                    results[tp] = Errors.ELECTION_NOT_NEEDED
                    continue
                choice = offline_partition_leader(replicas, state.isr, live, True)
                if choice is None:
                    results[tp] = Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
                    continue
            else:
                if replicas and state.leader == replicas[0]:
                    results[tp] = Errors.ELECTION_NOT_NEEDED
                    continue
                choice = preferred_replica_leader(replicas, state.isr, live)
                if choice is None:
                    results[tp] = Errors.PREFERRED_LEADER_NOT_AVAILABLE
                    continue
            self._write_state(tp, choice[0], choice[1])
            changed.append(tp)
            results[tp] = 0
        if changed:
            self._send_leader_and_isr_to_replicas(changed)
            self._send_update_metadata(list(self.ctx.live), changed)
        return results

    def _rebalance_leaders(self) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance: a broker leading too few of the
        partitions it is preferred for (above leader.imbalance.per.broker.percentage)
        gets them back."""
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in self.ctx.partitions():
            replicas = self.ctx.replicas(tp)
            if replicas:
                by_preferred.setdefault(replicas[0], []).append(tp)
        for broker, tps in by_preferred.items():
            if broker not in self.ctx.live:
                continue
            not_led = [
                tp for tp in tps if self.ctx.states.get(tp) and self.ctx.states[tp].leader != broker
            ]
            if tps and len(not_led) * 100 / len(tps) > self._imbalance_percentage:
                log.info(
                    "[Controller id=%s] moving %d partition(s) back to their preferred leader %s",
                    self.broker_id,
                    len(not_led),
                    broker,
                )
                self._elect_leaders(not_led, unclean=False)

    def _rebalance_loop(self) -> None:
        while not self._stop_rebalance.wait(self._imbalance_interval_s):
            if self.active:
                self.events.put(AutoLeaderRebalance())

    # -- partition reassignment (KIP-455) --------------------------------------------------------
    def _reassign(
        self, tp: TopicPartition, target: list[int] | None, allow_rf_change: bool = True
    ) -> tuple[int, str | None]:
        """Starts (or cancels, target None) the reassignment of `tp`; returns the error code
        and message for the partition."""
        if tp not in self.ctx.states or tp[0] not in self.ctx.assignments:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
        current = self.ctx.assignment(tp)
        if target is None:
            if not (current.adding or current.removing):
                return NO_REASSIGNMENT_IN_PROGRESS, None
            target = current.original
        else:
            why = invalid_target(target, set(self.ctx.live))
            if why is not None:
                return INVALID_REPLICA_ASSIGNMENT, why
            if not allow_rf_change and len(target) != len(current.original):
                return Errors.INVALID_REPLICATION_FACTOR, (
                    f"The replication factor is changed from {len(current.original)} "
                    f"to {len(target)}"
                )
        moving = plan(current, target)
        if moving == current:
            return 0, None
        log.info(
            "[Controller id=%s] reassigning %s-%s from %s to %s",
            self.broker_id,
            *tp,
            current.original,
            target,
        )
        # Phase one: the union of old and new replicas, a new leader epoch so every one of
        # them learns it, and the new replicas start following.
        self._set_assignment(tp, moving)
        state = self.ctx.states[tp]
        self._write_state(tp, state.leader, state.isr)
        self._send_leader_and_isr_to_replicas([tp])
        self._send_update_metadata(list(self.ctx.live), [tp])
        self._maybe_complete_reassignment(tp)
        return 0, None

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        """Phase two, once every target replica is in the ISR: the leader moves if it is
        not a target replica, the removed replicas leave the ISR and delete their logs,
        and the assignment becomes the target. The state is written before the
        assignment, so a controller that dies between the two finds the move still
        recorded and completes it again."""
        moving = self.ctx.assignment(tp)
        state = self.ctx.states.get(tp)
        if state is None or not (moving.adding or moving.removing):
            return
        if not complete(moving, state.isr):
            return
        live = set(self.ctx.live) - self.ctx.shutting_down
        leader = leader_after(moving, state.leader, state.isr, live)
        if leader is None:
            return
        target = moving.target
        self._write_state(tp, leader, [b for b in state.isr if b in target])
        self._set_assignment(tp, ReplicaAssignment(target, [], []))
        self._send_leader_and_isr_to_replicas([tp])
        for broker in moving.removing:
            if broker in self.ctx.live:
                self._send_stop_replica(broker, [tp], delete=True)
        self._send_update_metadata(list(self.ctx.live), [tp])
        remaining = self.zk.get_reassignments()
        if remaining.pop(tp, None) is not None:
            self.zk.set_reassignments(remaining)
        log.info("[Controller id=%s] reassignment of %s-%s completed", self.broker_id, *tp)

    def _set_assignment(self, tp: TopicPartition, a: ReplicaAssignment) -> None:
        topic, p = tp
        current = self.ctx.assignments[topic]
        adding = {k: v for k, v in current.adding.items() if k != p}
        removing = {k: v for k, v in current.removing.items() if k != p}
        if a.adding:
            adding[p] = a.adding
        if a.removing:
            removing[p] = a.removing
        new = TopicAssignment(
            current.topic_id, {**current.partitions, p: a.replicas}, adding, removing
        )
        self.zk.set_topic_assignment(topic, new, self.ctx.epoch_zk_version)
        self.ctx.assignments[topic] = new

    def _list_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        wanted = self.ctx.reassigning() if partitions is None else partitions
        return {
            tp: self.ctx.assignment(tp)
            for tp in wanted
            if tp[0] in self.ctx.assignments and self.ctx.assignments[tp[0]].is_reassigning(tp[1])
        }

    def _on_zk_reassignment(self) -> None:
        """Reassignments written to /admin/reassign_partitions (Kafka's ZooKeeper-era
        kafka-reassign-partitions): started like AlterPartitionReassignments; entries
        that cannot start are dropped from the znode, finished ones when they finish."""
        requested = self.zk.get_reassignments(watch=self._watch(ZkReassignment()))
        remaining = {}
        for tp, target in requested.items():
            code, message = self._reassign(tp, target)
            if code:
                log.warning(
                    "[Controller id=%s] reassignment of %s-%s to %s refused: %s",
                    self.broker_id,
                    *tp,
                    target,
                    message or code,
                )
            elif self.ctx.assignments[tp[0]].is_reassigning(tp[1]):
                remaining[tp] = target
        if remaining != requested:
            self.zk.set_reassignments(remaining)

    # -- leader election ----------------------------------------------------------------------
    def _elect_offline_leaders(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Elects a leader for each partition whose leader is not live (or that has no
        state yet); writes the new states. Returns the partitions that changed."""
        changed = []
        live = set(self.ctx.live) - self.ctx.shutting_down
        for tp in partitions:
            state = self.ctx.states.get(tp)
            if state is None:
                self._on_new_partitions([tp])
                continue
            online = {b for b in live if self.ctx.is_replica_online(b, tp)}
            if state.leader in online:
                continue
            choice = offline_partition_leader(
                self.ctx.replicas(tp), state.isr, online, self._unclean(tp[0])
            )
            if choice is None:
                if state.leader != NO_LEADER:
                    # Offline: no leader, the ISR stays as the last one (Kafka keeps it so
                    # the last in-sync replica can lead again when it returns).
                    self._write_state(tp, NO_LEADER, state.isr)
                    changed.append(tp)
                continue
            self._write_state(tp, choice[0], choice[1])
            changed.append(tp)
        return changed

    def _write_state(self, tp: TopicPartition, leader: int, isr: list[int]) -> None:
        """A new leader epoch for `tp`, written conditionally on the state znode's version
        (re-read once if a leader's ISR write came between) and the controller epoch."""
        for _ in range(3):
            state = self.ctx.states[tp]
            new = LeaderIsrAndControllerEpoch(
                leader, state.leader_epoch + 1, isr, self.ctx.epoch, state.zk_version
            )
            try:
                self.ctx.states[tp] = self.zk.update_partition_state(
                    tp[0], tp[1], new, state.zk_version, self.ctx.epoch_zk_version
                )
                return
            except ControllerMovedError:
                raise
            except Exception:
                fresh = self.zk.get_partition_state(*tp)
                if fresh is None:
                    return
                self.ctx.states[tp] = fresh
                # Keep only live members of the ISR the leader wrote meanwhile.
                if leader == fresh.leader:
                    isr = [b for b in fresh.isr if b in isr or b == leader]
        log.warning("Could not write the state of %s-%s", *tp)

    # -- requests to brokers -----------------------------------------------------------------
    def _partitions_on(self, broker: int) -> list[TopicPartition]:
        return [tp for tp in self.ctx.states if broker in self.ctx.replicas(tp)]

    def _send_leader_and_isr_to_replicas(
        self, partitions: list[TopicPartition], *, is_new: bool = False
    ) -> None:
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            for b in self.ctx.replicas(tp):
                if self.ctx.is_replica_online(b, tp):
                    by_broker.setdefault(b, []).append(tp)
        for broker, tps in by_broker.items():
            self._send_leader_and_isr(broker, tps, is_new=is_new)

    def _send_leader_and_isr(
        self, broker: int, partitions: list[TopicPartition], *, is_new: bool = False
    ) -> None:
        if not partitions:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        leaders: set[int] = set()
        for tp in partitions:
            state = self.ctx.states[tp]
            leaders.add(state.leader)
            topics.setdefault(tp[0], []).append(
                {
                    "partition_index": tp[1],
                    "controller_epoch": state.controller_epoch,
                    "leader": state.leader,
                    "leader_epoch": state.leader_epoch,
                    "isr": state.isr,
                    "partition_epoch": state.zk_version,
                    "replicas": self.ctx.replicas(tp),
                    "is_new": is_new,
                }
            )
        live_leaders = []
        for leader in sorted(leaders):
            info = self.ctx.live.get(leader)
            endpoint = info.endpoints.get(self.inter_broker_listener) if info else None
            if endpoint is not None:
                live_leaders.append(
                    {"broker_id": leader, "host_name": endpoint[0], "port": endpoint[1]}
                )
        body = {
            "controller_id": self.broker_id,
            "controller_epoch": self.ctx.epoch,
            "broker_epoch": -1,
            "topic_states": [
                {
                    "topic_name": topic,
                    "topic_id": self._topic_id(topic),
                    "partition_states": states,
                }
                for topic, states in topics.items()
            ],
            "live_leaders": live_leaders,
        }
        # Each answer may name replicas in a failed log dir.
        self.channel.send(
            broker,
            ApiKey.LEADER_AND_ISR,
            LEADER_AND_ISR_VERSION,
            body,
            lambda response: self.events.put(LeaderAndIsrResponseReceived(broker, response)),
        )

    def _send_update_metadata(
        self, brokers: list[int], partitions: list[TopicPartition], *, deleting: bool = False
    ) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        live = set(self.ctx.live)
        for tp in partitions:
            state = self.ctx.states.get(tp)
            if state is None:
                continue
            replicas = self.ctx.replicas(tp)
            topics.setdefault(tp[0], []).append(
                {
                    "topic_name": tp[0],
                    "partition_index": tp[1],
                    "controller_epoch": state.controller_epoch,
                    "leader": LEADER_DURING_DELETE if deleting else state.leader,
                    "leader_epoch": state.leader_epoch,
                    "isr": state.isr,
                    "zk_version": state.zk_version,
                    "replicas": replicas,
                    "offline_replicas": [
                        b
                        for b in replicas
                        if b not in live or tp in self.ctx.replicas_on_offline_dirs.get(b, ())
                    ],
                }
            )
        body = {
            "controller_id": self.broker_id,
            "controller_epoch": self.ctx.epoch,
            "broker_epoch": -1,
            "topic_states": [
                {"topic_name": t, "topic_id": self._topic_id(t), "partition_states": s}
                for t, s in topics.items()
            ],
            "live_brokers": [
                {
                    "id": info.broker_id,
                    "endpoints": [
                        {
                            "port": port,
                            "host": host,
                            "listener": name,
                            "security_protocol": SECURITY_PROTOCOL_IDS.get(
                                info.protocol_map.get(name, "PLAINTEXT"), 0
                            ),
                        }
                        for name, (host, port) in info.endpoints.items()
                    ],
                    "rack": info.rack,
                }
                for info in self.ctx.live.values()
            ],
        }
        for broker in brokers:
            self.channel.send(broker, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body)

    def _send_stop_replica(
        self, broker: int, partitions: list[TopicPartition], *, delete: bool
    ) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in partitions:
            state = self.ctx.states.get(tp)
            topics.setdefault(tp[0], []).append(
                {
                    "partition_index": tp[1],
                    "leader_epoch": state.leader_epoch if state else -1,
                    "delete_partition": delete,
                }
            )
        body = {
            "controller_id": self.broker_id,
            "controller_epoch": self.ctx.epoch,
            "broker_epoch": -1,
            "topic_states": [{"topic_name": t, "partition_states": s} for t, s in topics.items()],
        }
        self.channel.send(broker, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body)

    def _topic_id(self, topic: str) -> uuid.UUID:
        assignment = self.ctx.assignments.get(topic)
        return assignment.topic_id if assignment is not None else uuid.UUID(int=0)
