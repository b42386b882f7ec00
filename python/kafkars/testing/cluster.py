"""A local cluster for tests and trying things out: one ZooKeeper (a standalone server,
or the `ZooKeeperEnsemble` passed as `zookeeper`) and N broker processes on free ports,
each with its own temporary log dir.

    with Cluster(3) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        cluster.kill(2)        # SIGKILL broker 2
        cluster.start(2)       # and bring it back with its data

Brokers are `kafkars.Broker(process=True)` with `broker.id` 1..N and
`zookeeper.connect` pointing at the ZooKeeper under the chroot `/kafkars`. `config`
applies to every broker; `broker_configs` adds settings for some, by broker id (each
broker's `broker.rack`, say):

    Cluster(4, broker_configs={i: {"broker.rack": "ab"[i % 2]} for i in range(1, 5)})

When the first listener is not PLAINTEXT, `client_config` gives the client properties
(`security.protocol`, `ssl.*`, `sasl.*`, as a tool's `--command-config` takes them) the
cluster's own checks connect with.

`env` sets environment variables of the broker processes (KAFKA_OPTS with the JAAS file
of their ZooKeeper login, say). `broker_hosts` and `command_prefixes` (by broker id) put
brokers on other addresses and run them under another command: the Jepsen suite starts
each in its own network namespace with `ip netns exec NAME`.
"""

from __future__ import annotations

import signal
import threading
import time
from types import TracebackType
from typing import Any

import click

from kafkars.broker import Broker
from kafkars.testing.zookeeper import ZooKeeperEnsemble, ZooKeeperServer


class Cluster:
    def __init__(
        self,
        size: int = 3,
        *,
        config: dict[str, Any] | None = None,
        broker_configs: dict[int, dict[str, Any]] | None = None,
        zookeeper: ZooKeeperServer | ZooKeeperEnsemble | None = None,
        client_config: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        broker_hosts: dict[int, str] | None = None,
        command_prefixes: dict[int, list[str]] | None = None,
    ) -> None:
        self.broker_hosts = broker_hosts or {}
        self.command_prefixes = command_prefixes or {}
        self.client_config = client_config or {}
        self.size = size
        self._own_zookeeper = zookeeper is None
        self.zookeeper: ZooKeeperServer | ZooKeeperEnsemble = zookeeper or ZooKeeperServer()
        self.config = {
            "offsets.topic.replication.factor": min(3, size),
            "transaction.state.log.replication.factor": min(3, size),
            "transaction.state.log.min.isr": min(2, size),
            "zookeeper.session.timeout.ms": 6000,
            "controlled.shutdown.retry.backoff.ms": 500,
            **(config or {}),
        }
        self.broker_configs = broker_configs or {}
        self.env = env or {}
        self.brokers: dict[int, Broker] = {}

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values() if b.listeners)

    def start(self, broker_id: int | None = None, *, timeout: float = 30.0) -> Cluster:
        """Starts ZooKeeper and every broker, or (again) one broker; TimeoutError if they
        do not all see each other within `timeout` seconds."""
        if broker_id is not None:
            self.brokers[broker_id].start()
            self.wait_for_brokers(timeout)
            return self
        if self._own_zookeeper:
            self.zookeeper.start()
        for i in range(1, self.size + 1):
            broker = Broker(
                process=True,
                env=self.env,
                host=self.broker_hosts.get(i, "127.0.0.1"),
                command_prefix=self.command_prefixes.get(i, ()),
                config={
                    **self.config,
                    **self.broker_configs.get(i, {}),
                    "broker.id": i,
                    "zookeeper.connect": f"{self.zookeeper.connect}/kafkars",
                },
            )
            self.brokers[i] = broker
            broker.start()
        self.wait_for_brokers(timeout)
        return self

    def wait_for_brokers(self, timeout: float = 30.0) -> None:
        """Waits until every running broker's metadata lists every running broker (the
        controller's UpdateMetadata has reached them all)."""
        from kafkars.controller.channel_manager import call_broker
        from kafkars.tools.client import client_security

        security = client_security(self.client_config)
        running = {i: b for i, b in self.brokers.items() if b.listeners and b.running}
        deadline = time.monotonic() + timeout
        for broker in running.values():
            _, _, host, port = broker.listeners[0]
            while True:
                try:
                    response = call_broker(
                        (host, port),
                        3,
                        12,
                        {"topics": []},
                        client_id="kafkars-cluster",
                        security=security,
                    )
                    if {b["node_id"] for b in response["brokers"]} >= set(running):
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("the brokers did not all see each other")
                time.sleep(0.05)

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

    def pause(self, broker_id: int) -> None:
        """SIGSTOP one broker: past `zookeeper.session.timeout.ms` its session expires and
        the cluster treats it as dead."""
        child = self.brokers[broker_id]._child
        if child is not None:
            child.send_signal(signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        child = self.brokers[broker_id]._child
        if child is not None:
            child.send_signal(signal.SIGCONT)

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


@click.command()
@click.option("--brokers", "-n", default=3, show_default=True, help="Number of brokers.")
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="A broker setting for every broker (repeatable).",
)
@click.option(
    "--zookeeper-nodes",
    default=1,
    show_default=True,
    help="ZooKeeper servers: 1 standalone, or an ensemble (3, 5) that survives losing a minority.",
)
def main(brokers: int, overrides: tuple[str, ...], zookeeper_nodes: int) -> None:
    """Starts ZooKeeper and BROKERS brokers on free ports with temporary data, prints the
    bootstrap servers, and stops everything on Ctrl-C."""
    config: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--override")
        config[key.strip()] = value.strip()
    ensemble = ZooKeeperEnsemble(zookeeper_nodes) if zookeeper_nodes > 1 else None
    try:
        if ensemble is not None:
            ensemble.start()
        cluster = Cluster(brokers, config=config, zookeeper=ensemble).start()
    except (RuntimeError, TimeoutError) as e:
        if ensemble is not None:
            ensemble.stop()
        raise click.ClickException(str(e)) from None
    click.echo(f"ZooKeeper:         {cluster.zookeeper.connect} (chroot /kafkars)")
    click.echo(f"bootstrap.servers: {cluster.bootstrap_servers}")
    for broker_id, broker in cluster.brokers.items():
        click.echo(f"broker {broker_id}: {broker.bootstrap_servers}, data in {broker.log_dir}")
    click.echo("Ctrl-C stops the cluster and removes its data.")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    finally:
        click.echo("stopping...")
        cluster.stop()
        if ensemble is not None:
            ensemble.stop()


if __name__ == "__main__":
    main()
