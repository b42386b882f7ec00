"""The faults, and the nemesis that applies one of them in cycles: FAULT_S seconds of
fault, then HEAL_S seconds healed, until the run's time is up. The targets are chosen
afresh each cycle from the cluster's metadata (partition 0's leader, the controller)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from confluent_kafka.admin import AdminClient

from kafkars.testing.jepsen.net import Network
from kafkars.testing.jepsen.workload import History, quiet

BROKERS = ("b1", "b2", "b3")
FAULT_S = 10.0  # longer than zookeeper.session.timeout.ms: sessions expire, leaders move
HEAL_S = 8.0


class Targets:
    """Who leads partition 0 and who is the controller, as the clients' metadata says."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
        self.topic = topic

    def _metadata(self):  # type: ignore[no-untyped-def]
        return self.admin.list_topics(self.topic, timeout=5)

    def leader(self) -> str:
        try:
            leader = self._metadata().topics[self.topic].partitions[0].leader
        except Exception:
            leader = -1
        return f"b{leader}" if leader in (1, 2, 3) else random.choice(BROKERS)

    def controller(self) -> str:
        try:
            controller = self._metadata().controller_id
        except Exception:
            controller = -1
        return f"b{controller}" if controller in (1, 2, 3) else random.choice(BROKERS)


def _others(*hosts: str) -> list[str]:
    return [b for b in BROKERS if b not in hosts]


def leader_zk(net: Network, t: Targets) -> str:
    leader = t.leader()
    net.partition([[leader], ["zk"]])
    return f"{leader} (leader) cut from zk"


def leader_followers(net: Network, t: Targets) -> str:
    leader = t.leader()
    net.partition([[leader], _others(leader)])
    return f"{leader} (leader) cut from its followers {_others(leader)}"


def leader_isolated(net: Network, t: Targets) -> str:
    leader = t.leader()
    net.partition([[leader], ["zk", *_others(leader)]])
    return f"{leader} (leader) cut from zk and its followers"


def controller_isolated(net: Network, t: Targets) -> str:
    controller = t.controller()
    net.partition([[controller], ["zk", *_others(controller)]])
    return f"{controller} (controller) cut from zk and the other brokers"


def majority_minority(net: Network, t: Targets) -> str:
    """Two brokers against one, ZooKeeper on a random side: sometimes the majority of
    brokers keeps ZooKeeper, sometimes only the minority has it."""
    brokers = list(BROKERS)
    random.shuffle(brokers)
    minority, majority = brokers[:1], brokers[1:]
    if random.random() < 0.5:
        majority.append("zk")
    else:
        minority.append("zk")
    net.partition([minority, majority])
    return f"split {sorted(minority)} | {sorted(majority)}"


def one_way_loss(net: Network, t: Targets) -> str:
    leader = t.leader()
    net.lose(leader, 50)
    return f"half of what {leader} (leader) sends is lost; what it receives arrives"


def delay(net: Network, t: Targets) -> str:
    net.delay(["zk", *BROKERS], 200, 50)
    return "every server's packets held 200 ms (normal, 50 ms deviation: reordered)"


FAULTS: dict[str, Callable[[Network, Targets], str]] = {
    "leader-zk": leader_zk,
    "leader-followers": leader_followers,
    "leader-isolated": leader_isolated,
    "controller-isolated": controller_isolated,
    "majority-minority": majority_minority,
    "one-way-loss": one_way_loss,
    "delay": delay,
    "flapping": leader_isolated,  # switched on and off every 0.5-2 s (see Nemesis)
}


class Nemesis(threading.Thread):
    def __init__(
        self, fault: str, net: Network, targets: Targets, history: History, seconds: float
    ) -> None:
        super().__init__(name="nemesis", daemon=True)
        self.fault = fault
        self.net = net
        self.targets = targets
        self.history = history
        self.seconds = seconds
        self.stopping = threading.Event()
        self.failure: str | None = None

    def _apply(self) -> None:
        what = FAULTS[self.fault](self.net, self.targets)
        self.history.add("nemesis", "info", "start", fault=self.fault, value=what)

    def _heal(self) -> None:
        self.net.heal()
        self.history.add("nemesis", "info", "stop", fault=self.fault)

    def run(self) -> None:
        end = time.monotonic() + self.seconds
        try:
            while not self.stopping.is_set():
                left = end - time.monotonic()
                if left <= 1:
                    break
                fault_end = time.monotonic() + min(FAULT_S, left)
                if self.fault == "flapping":
                    while time.monotonic() < fault_end and not self.stopping.is_set():
                        self._apply()
                        self.stopping.wait(random.uniform(0.5, 2.0))
                        self._heal()
                        self.stopping.wait(random.uniform(0.5, 2.0))
                else:
                    self._apply()
                    self.stopping.wait(max(0.0, fault_end - time.monotonic()))
                    self._heal()
                self.stopping.wait(min(HEAL_S, max(0.0, end - time.monotonic())))
        except Exception as e:
            self.failure = f"{type(e).__name__}: {e}"
            self.history.add("nemesis", "info", "crash", error=self.failure)
        finally:
            self.net.heal()
