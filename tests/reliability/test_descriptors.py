"""File descriptors: a broker started with a 256-descriptor limit refuses partitions it
could not hold (POLICY_VIOLATION naming the limit), survives a flood of 1,000
connections by refusing what it cannot accept, and keeps serving produce and consume."""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkars.broker import Broker
from kafkars.protocol import Errors

from .helpers import alive, open_fds, pid_of, round_trip

FD_LIMIT = 256


@pytest.fixture
def limited_broker() -> Iterator[Broker]:
    """A broker process whose RLIMIT_NOFILE is 256, soft and hard."""
    broker = Broker(
        process=True, config={"auto.create.topics.enable": False, "num.partitions": 1}
    ).start()
    try:
        resource.prlimit(pid_of(broker), resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))
        yield broker
    finally:
        broker.stop()


def _create(admin: AdminClient, topic: NewTopic) -> None:
    admin.create_topics([topic])[topic.topic].result(60)


def test_partitions_past_the_descriptor_limit_are_refused(limited_broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": limited_broker.bootstrap_servers})
    _create(admin, NewTopic("small", 4, 1))

    with pytest.raises(KafkaException) as refused:
        _create(admin, NewTopic("huge", 3000, 1))
    error = refused.value.args[0]
    assert error.code() == Errors.POLICY_VIOLATION
    assert "limit of open files" in error.str()
    assert "RLIMIT_NOFILE soft limit 256" in error.str()

    # A dry run gets the same answer, and so does growing a topic past the limit.
    futures = admin.create_topics([NewTopic("huge", 3000, 1)], validate_only=True)
    with pytest.raises(KafkaException) as dry:
        futures["huge"].result(60)
    assert dry.value.args[0].code() == Errors.POLICY_VIOLATION
    with pytest.raises(KafkaException) as grown:
        admin.create_partitions([NewPartitions("small", 3000)])["small"].result(60)
    assert grown.value.args[0].code() == Errors.POLICY_VIOLATION

    # Nothing of the refused topic exists, and the broker serves as before.
    assert "huge" not in admin.list_topics(timeout=10).topics
    assert len(admin.list_topics(timeout=10).topics["small"].partitions) == 4
    assert alive(limited_broker)
    round_trip(limited_broker, "small")
    assert open_fds(pid_of(limited_broker)) < FD_LIMIT


def test_a_connection_flood_is_refused_not_fatal(limited_broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": limited_broker.bootstrap_servers})
    _create(admin, NewTopic("flood", 1, 1))
    # This process needs room for its own end of every connection.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    host, port = limited_broker.bootstrap_servers.rsplit(":", 1)
    sockets = []
    try:
        for _ in range(1000):
            sockets.append(socket.create_connection((host, int(port)), timeout=10))
        # Past its limit the broker closes what it accepts at once: some connections are
        # refused (end of stream), and the broker is still there.
        time.sleep(1)
        refused = 0
        for s in sockets:
            s.setblocking(False)
            try:
                refused += s.recv(1) == b""
            except BlockingIOError:
                pass
            except ConnectionResetError:
                refused += 1
        assert refused > 0
        assert alive(limited_broker)
    finally:
        for s in sockets:
            s.close()
    round_trip(limited_broker, "flood")
    # One warning for the whole episode, not one per refused connection.
    log = (limited_broker.log_dir / ".kafkars-server.log").read_text(errors="replace")
    assert log.count("accept failed") == 1
