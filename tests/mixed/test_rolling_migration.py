"""The rolling migration (issue 25, item 3): three Kafka 3.9 brokers, an RF=3 topic and
the internal topics at RF=3, an idempotent acks=all producer running; each Kafka broker is
stopped (controlled shutdown) and a kafkars broker started with its broker.id, log dir and
port, one at a time. Counts what was acknowledged, lost and written twice, and the
longest time a partition had no live leader (from the partition state znodes)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Producer
from kazoo.exceptions import NoNodeError

from .conftest import MixedCluster, mixed_cluster, needs_mixed
from .test_mixed import consume, create_topic, isr, wait_for

pytestmark = [needs_mixed, pytest.mark.mixed_long]


class Producing:
    """An idempotent acks=all producer writing "0", "1", ... to one partition on its own
    thread until stopped, recording what was acknowledged and what failed."""

    def __init__(self, cluster: MixedCluster, topic: str, partition: int) -> None:
        self.acked: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cluster, topic, partition))

    def start(self) -> Producing:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def _run(self, cluster: MixedCluster, topic: str, partition: int) -> None:
        def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
            if err is None:
                self.acked.append(msg.value())
            else:
                self.errors.append(str(err))

        p = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120000,
                "log_level": 0,
                "logger": lambda *a: None,
            }
        )
        i = 0
        while not self._stop.is_set():
            p.produce(
                topic, b"%d-%d" % (partition, i), partition=partition, on_delivery=on_delivery
            )
            p.poll(0.002)
            i += 1
        p.flush(60)


class Leaderless:
    """Samples the partition state znodes every 50 ms: the longest stretch a partition's
    leader was -1 or a broker not registered."""

    def __init__(self, cluster: MixedCluster, topic: str, partitions: int) -> None:
        self.cluster = cluster
        self.paths = [f"/brokers/topics/{topic}/partitions/{p}/state" for p in range(partitions)]
        self.longest = 0.0
        self._since: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Leaderless:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        zk = self.cluster.zk_client
        assert zk is not None
        while not self._stop.wait(0.05):
            live = {int(c) for c in zk.get_children("/brokers/ids")}
            now = time.monotonic()
            for path in self.paths:
                try:
                    leader = json.loads(zk.get(path)[0])["leader"]
                except NoNodeError:
                    continue
                if leader in live:
                    self._since.pop(path, None)
                else:
                    start = self._since.setdefault(path, now)
                    self.longest = max(self.longest, now - start)


@pytest.fixture
def kafka_trio():  # type: ignore[no-untyped-def]
    yield from mixed_cluster(3, 0)


def test_rolling_migration(kafka_trio: MixedCluster) -> None:
    cluster = kafka_trio
    everyone = [1, 2, 3]
    topic = create_topic(cluster, 1, [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    started = time.monotonic()
    with Leaderless(cluster, topic, 3) as leaderless:
        producers = [Producing(cluster, topic, p).start() for p in range(3)]
        wait_for(lambda: all(len(p.acked) > 200 for p in producers), 60, "first acks")
        steps = [(cluster.replace_with_ours, b) for b in everyone]
        steps += [(cluster.replace_with_kafka, b) for b in everyone]
        for replace, broker_id in steps:
            replace(broker_id)
            for p in range(3):
                wait_for(
                    lambda p=p: all(isr(cluster, b, topic, p) == everyone for b in everyone),
                    60,
                    f"a full ISR of partition {p} after replacing broker {broker_id}",
                )
            count = sum(len(p.acked) for p in producers)
            wait_for(
                lambda c=count: sum(len(p.acked) for p in producers) > c + 300, 60, "more acks"
            )
        for p in producers:
            p.stop()
    acked = [v for p in producers for v in p.acked]
    errors = [e for p in producers for e in p.errors]
    values = consume(cluster.bootstrap_servers, topic, 3, len(acked))
    lost = len(set(acked) - set(values))
    duplicated = len(values) - len(set(values))
    print(
        f"rolling migration: {len(acked)} acknowledged, {lost} lost, {duplicated} duplicated, "
        f"{len(errors)} delivery errors, longest leaderless {leaderless.longest:.2f} s, "
        f"{time.monotonic() - started:.0f} s"
    )
    assert cluster.our_ids == [] and sorted(cluster.kafka_ids) == everyone
    assert lost == 0 and duplicated == 0
    # A Kafka follower that cannot take what a leader sent stops fetching that partition.
    for broker_id, kafka in cluster.kafka.items():
        lines = kafka.log(10_000_000).splitlines()
        failed = [i for i, line in enumerate(lines) if "marked as failed" in line]
        # The lines about the failed partition before the mark: why it was failed.
        name = lines[failed[0]].split("Partition ")[-1].split(" ")[0] if failed else ""
        context = [line[:500] for line in lines[: failed[0] + 1] if name in line] if failed else []
        assert not failed, f"Kafka broker {broker_id}: " + "\n".join(context[-8:])
