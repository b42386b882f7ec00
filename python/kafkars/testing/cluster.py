"""A local cluster for tests and trying things out: one ZooKeeper and N broker processes
on free ports, each with its own temporary log dir.

    with Cluster(3) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        cluster.kill(2)        # SIGKILL broker 2
        cluster.start(2)       # and bring it back with its data

Brokers are `kafkars.Broker(process=True)` with `broker.id` 1..N and
`zookeeper.connect` pointing at the ZooKeeper under the chroot `/kafkars`.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from kafkars.broker import Broker
from kafkars.testing.zookeeper import ZooKeeperServer


class Cluster:
    def __init__(
        self,
        size: int = 3,
        *,
        config: dict[str, Any] | None = None,
        zookeeper: ZooKeeperServer | None = None,
    ) -> None:
        self.size = size
        self._own_zookeeper = zookeeper is None
        self.zookeeper = zookeeper or ZooKeeperServer()
        self.config = {
            "offsets.topic.replication.factor": min(3, size),
            "transaction.state.log.replication.factor": min(3, size),
            "transaction.state.log.min.isr": min(2, size),
            "zookeeper.session.timeout.ms": 6000,
            "controlled.shutdown.retry.backoff.ms": 500,
            **(config or {}),
        }
        self.brokers: dict[int, Broker] = {}

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values() if b.listeners)

    def start(self, broker_id: int | None = None) -> Cluster:
        """Starts ZooKeeper and every broker, or (again) one broker."""
        if broker_id is not None:
            self.brokers[broker_id].start()
            return self
        if self._own_zookeeper:
            self.zookeeper.start()
        for i in range(1, self.size + 1):
            broker = Broker(
                process=True,
                config={
                    **self.config,
                    "broker.id": i,
                    "zookeeper.connect": f"{self.zookeeper.connect}/kafkars",
                },
            )
            self.brokers[i] = broker
            broker.start()
        return self

    def stop(self, broker_id: int | None = None) -> None:
        """Stops one broker cleanly (SIGTERM: controlled shutdown), keeping its data; or
        everything, removing the data."""
        if broker_id is not None:
            self.brokers[broker_id].stop(remove=False)
            return
        for broker in self.brokers.values():
            broker.stop()
        if self._own_zookeeper:
            self.zookeeper.stop()

    def kill(self, broker_id: int) -> None:
        """SIGKILL one broker: ZooKeeper notices when its session times out."""
        self.brokers[broker_id].kill()

    def __enter__(self) -> Cluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
