"""The brokers a run measures: our own kafkars broker process (the default), one already
running (--bootstrap), and peers (--peer NAME=HOST:PORT); the admin calls the scenarios
need on them (create and delete topics)."""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import wire
from kafkars.broker import Broker


class UsageError(Exception):
    """A mistake on the command line or in the environment: one line to the user."""


@dataclass
class Target:
    name: str
    bootstrap: str
    # The broker's process when it runs on this machine (RSS and CPU come from /proc).
    pid: int | None
    own: Broker | None = None

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
    """'NAME=HOST:PORT' to (name, 'host:port')."""
    name, sep, address = text.partition("=")
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
    broker.start()
    assert broker._child is not None
    return Target(name, broker.bootstrap_servers, broker._child.pid, own=broker)


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


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Best effort: the data of a finished scenario should not sit in the page cache."""
    if not names:
        return
    admin = _admin(bootstrap)
    for f in admin.delete_topics(names, operation_timeout=60).values():
        with contextlib.suppress(Exception):
            f.result()
