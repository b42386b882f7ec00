"""`python -m kafkars.testing.jepsen.run --fault NAME --seconds N --out DIR`: one
fault's run in this process (the supervisor, `python -m kafkars.testing.jepsen`, starts
one per fault and cleans up after it).

Builds the network, moves this process into the clients' namespace, starts ZooKeeper and
three brokers each in its own namespace, creates the topic, runs the clients while the
nemesis applies the fault, heals, lets the cluster recover, stops the clients, reads
everything back, and writes DIR/history.jsonl, DIR/verdict.json and the servers' logs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from kafkars.testing.cluster import Cluster
from kafkars.testing.jepsen import checker
from kafkars.testing.jepsen.nemesis import FAULTS, Nemesis, Targets
from kafkars.testing.jepsen.net import Network
from kafkars.testing.jepsen.workload import (
    History,
    final_committed,
    final_read,
    quiet,
    start_clients,
)
from kafkars.testing.zookeeper import ZooKeeperServer

TOPIC = "jepsen"
PARTITIONS = 3
RECOVERY_S = 60.0  # at most, after the last fault, for every replica to be in sync again


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _wait_in_sync(bootstrap: str, timeout: float) -> bool:
    admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(TOPIC, timeout=5).topics[TOPIC]
            if all(p.leader > 0 and sorted(p.isrs) == [1, 2, 3] for p in md.partitions.values()):
                return True
        except Exception:
            pass
        time.sleep(0.5)
    return False


def run(fault: str, seconds: float, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    net = Network().create()
    zk: ZooKeeperServer | None = None
    cluster: Cluster | None = None
    clients: list[Any] = []
    nemesis: Nemesis | None = None
    history: History | None = None
    try:
        net.enter("cl")
        zk = ZooKeeperServer(host=net.address("zk"), command_prefix=net.exec_prefix("zk"))
        zk.start()
        cluster = Cluster(
            3,
            zookeeper=zk,
            config={
                "min.insync.replicas": 2,
                "unclean.leader.election.enable": False,
                "default.replication.factor": 3,
                "zookeeper.session.timeout.ms": 6000,
                # Below the session timeout: an isolated leader tries to shrink its ISR before
                # the controller moves its leadership away.
                "replica.lag.time.max.ms": 4000,
                "group.initial.rebalance.delay.ms": 0,
            },
            broker_hosts={i: net.address(f"b{i}") for i in (1, 2, 3)},
            command_prefixes={i: net.exec_prefix(f"b{i}") for i in (1, 2, 3)},
        )
        cluster.start()
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
        topic = NewTopic(
            TOPIC,
            PARTITIONS,
            3,
            config={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
        )
        admin.create_topics([topic])[TOPIC].result(30)
        _wait_in_sync(bootstrap, 30)
        _log(f"{fault}: cluster up at {bootstrap}; clients start")
        history = History(out / "history.jsonl")
        clients = start_clients(history, bootstrap, TOPIC, PARTITIONS)
        time.sleep(3)
        nemesis = Nemesis(fault, net, Targets(bootstrap, TOPIC), history, seconds)
        nemesis.start()
        nemesis.join(seconds + 30)
        net.heal()
        in_sync = _wait_in_sync(bootstrap, RECOVERY_S)
        _log(f"{fault}: faults over; replicas in sync again: {in_sync}")
        history.add("runner", "info", "recovered", in_sync=in_sync)
        time.sleep(5)  # the clients work on a healed cluster for a while
        for c in clients:
            c.stopping.set()
        for c in clients:
            c.join(60)
        _log(f"{fault}: clients stopped; reading everything back")
        for isolation in ("read_uncommitted", "read_committed"):
            final_read(history, bootstrap, TOPIC, PARTITIONS, isolation, timeout=60)
        final_committed(history, bootstrap, TOPIC, PARTITIONS, timeout=60)
        history.close()
        _log(f"{fault}: checking")
        verdict = checker.check(checker.load(history.path))
        verdict["fault"] = fault
        verdict["seconds"] = seconds
        verdict["replicas_in_sync_after"] = in_sync
        failures = [f"{c.name}: {c.failure}" for c in clients if c.failure]
        if nemesis.failure:
            failures.append(f"nemesis: {nemesis.failure}")
        verdict["client_failures"] = failures
        if failures:
            verdict["valid"] = False
        (out / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
        return verdict
    finally:
        if nemesis is not None:
            nemesis.stopping.set()
        net.heal()
        for c in clients:
            c.stopping.set()
        if cluster is not None:
            for broker_id, broker in cluster.brokers.items():
                log = broker.log_dir / ".kafkars-server.log"
                if log.exists():
                    shutil.copy(log, out / f"broker-{broker_id}.log")
                # The data goes anyway: no need for a controlled shutdown.
                cluster.kill(broker_id)
            cluster.stop()
        if zk is not None:
            zk_log = zk.data_dir / "zookeeper.log"
            if zk_log.exists():
                shutil.copy(zk_log, out / "zookeeper.log")
            zk.stop()
        net.destroy()
        _log(f"{fault}: torn down")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m kafkars.testing.jepsen.run", description=__doc__
    )
    parser.add_argument("--fault", choices=sorted(FAULTS), required=True)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    # SIGTERM from the supervisor unwinds through the finally blocks: clean teardown.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    verdict = run(args.fault, args.seconds, args.out)
    print(json.dumps({k: verdict[k] for k in ("fault", "valid", "acknowledged", "counts")}))
    sys.exit(0 if verdict["valid"] else 1)


if __name__ == "__main__":
    main()
