"""The brokers a run measures: our own kafkars broker process (the default), one already
running (--bootstrap), and peers (--peer NAME=HOST:PORT, --peer kafka[=VERSION] for
Apache Kafka started here, --peer tansu for Tansu started here); the admin calls the
scenarios need on them (create and delete topics)."""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import tansu, wire
from kafkars.broker import Broker
from kafkars.testing.reference_kafka import DEFAULT_VERSION, ReferenceKafka

# Apache Kafka as its own scripts start it (kafka-server-start.sh: KAFKA_HEAP_OPTS).
REFERENCE_HEAP = "-Xmx1G -Xms1G"


class UsageError(Exception):
    """A mistake on the command line or in the environment: one line to the user."""


@dataclass
class Target:
    name: str
    bootstrap: str
    # The broker's process when it runs on this machine (RSS and CPU come from /proc).
    pid: int | None
    # A broker this run started (stopped at the end), and how long it took to answer.
    own: Broker | ReferenceKafka | tansu.Tansu | None = None
    start_s: float | None = None

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.bootstrap.rpartition(":")
        return host, int(port)


_HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9_.\-]+|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})$")


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    m = _HOST_PORT.match(text)
    if not m or not 0 < int(m["port"]) < 65536:
        raise UsageError(f"{what} wants HOST:PORT, got {text!r}")
    return m["host"].strip("[]"), int(m["port"])


def parse_peer(text: str) -> tuple[str, str]:
    """'NAME=HOST:PORT' to (name, 'host:port'); 'kafka' or 'kafka=VERSION' to
    ('kafka', 'VERSION'): Apache Kafka, started by the run (`start_reference`); 'tansu' to
    ('tansu', ''): Tansu, started by the run (`start_tansu`)."""
    name, sep, address = text.partition("=")
    if name == "kafka" and (not sep or re.fullmatch(r"\d+\.\d+\.\d+", address)):
        return name, address or DEFAULT_VERSION
    if name == "tansu" and not sep:
        return name, ""
    if not sep or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise UsageError(f"--peer wants NAME=HOST:PORT (e.g. kafka=127.0.0.1:9092), got {text!r}")
    host, port = parse_host_port(address, f"--peer {name}")
    return name, f"{host}:{port}"


def connect(name: str, bootstrap: str) -> Target:
    """A broker already running: it must answer ApiVersions now."""
    host, port = parse_host_port(bootstrap, "--bootstrap")
    try:
        wire.probe(host, port)
    except OSError as e:
        raise UsageError(f"{name}: no Kafka broker answers at {bootstrap} ({e})") from e
    return Target(name, bootstrap, pid_listening_on(port))


def start_own(name: str, config: dict[str, Any]) -> Target:
    broker = Broker(process=True, config=config, startup_timeout=120)
    began = time.monotonic()
    broker.start()
    assert broker._child is not None
    return Target(
        name, broker.bootstrap_servers, broker._child.pid, broker, time.monotonic() - began
    )


def start_reference(name: str, version: str, config: dict[str, Any]) -> Target:
    """Apache Kafka `version` (KRaft, one combined node) with the settings kafkars gets,
    its log dir in the same file system (the temporary directory), 1 GiB of heap."""
    # The harness stops it (SIGSTOP) during the other brokers' steps; past its broker
    # session timeout (9 s) its own controller would fence it once it runs again.
    config = {**config, "broker.session.timeout.ms": 3_600_000}
    kafka = ReferenceKafka(version=version, config=config, heap=REFERENCE_HEAP, startup_timeout=180)
    began = time.monotonic()
    kafka.start()
    assert kafka._child is not None
    return Target(name, kafka.bootstrap_servers, kafka._child.pid, kafka, time.monotonic() - began)


def start_tansu(name: str) -> Target:
    """Tansu from `make tansu-deps` (or $KAFKARS_TANSU), its log in memory (`memory://`:
    the build has no engine on local disk)."""
    binary = tansu.find_binary()
    if binary is None:
        raise UsageError(f"no Tansu binary at {tansu.DEFAULT_BINARY}: {tansu.BUILD_HINT}")
    broker = tansu.Tansu(binary)
    began = time.monotonic()
    broker.start()
    assert broker._child is not None
    return Target(
        name, broker.bootstrap_servers, broker._child.pid, broker, time.monotonic() - began
    )


def pid_listening_on(port: int) -> int | None:
    """The local process with a listening TCP socket on `port` (found through
    /proc/net/tcp and the socket inodes of /proc/*/fd); None when not visible here."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local_address is HEX_IP:HEX_PORT; state 0A is LISTEN.
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return int(pid)
            except OSError:
                continue
    return None


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    timeout = 60 + partitions / 20
    # The client must outlive its futures: a destroyed handle fails them.
    admin = _admin(bootstrap)
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1)], operation_timeout=timeout, request_timeout=timeout
    )
    for f in futures.values():
        f.result()


def delete_topics(target: Target, names: list[str]) -> None:
    """Best effort: the data of a finished scenario should not sit in the page cache.

    On a broker this run started, waits (at most a minute) until the topics' dirs are gone
    from its log dir: both brokers run with log.segment.delete.delay.ms=1000 (Kafka's
    default is 60 s), so removing one step's gigabytes (and dropping their page cache)
    happens here, not inside a later step's measurement, of either broker."""
    if not names:
        return
    admin = _admin(target.bootstrap)
    for f in admin.delete_topics(names, operation_timeout=60).values():
        with contextlib.suppress(Exception):
            f.result()
    log_dir = getattr(target.own, "log_dir", None)
    if log_dir is None:
        return
    # <topic>-<partition>, renamed <topic>-<partition>.<id>-delete until removed.
    dirs = re.compile("|".join(rf"{re.escape(n)}-\d+(\..*-delete)?" for n in names))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(
        dirs.fullmatch(entry.name) for entry in Path(log_dir).iterdir()
    ):
        time.sleep(0.05)
