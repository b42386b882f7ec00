"""Apache Kafka itself, for tests that compare kafkars with the broker it stands in for.

    with ReferenceKafka() as kafka:                       # KRaft, one combined node
        print(kafka.bootstrap_servers)                     # 127.0.0.1:PORT

    with ZooKeeperServer() as zk, ReferenceKafka(version="3.9.2", zookeeper=zk.connect):
        ...                                                # ZooKeeper mode (3.x only)

The jars come from Maven Central through the small pom beside this module
(`reference/pom.xml`): `mvn dependency:copy-dependencies` into a cache outside the
checkout (`$KAFKARS_REFERENCE_CACHE`, default `~/.cache/kafkars/reference-kafka/VERSION`),
reused across runs. The broker is `kafka.Kafka` run by `java` on PATH (or `JAVA_HOME`)
with a small heap, its storage formatted first in KRaft mode, on free ports with its data
in a temporary directory. `kafka_tool()` runs one of Kafka's command-line tools by its
main class against either broker.

`python -m kafkars.testing.reference_kafka [--version V]` starts one until Ctrl-C
(`make reference-kafka`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from kafkars.child_process import kill_child, stop_child
from kafkars.testing.zookeeper import free_port, java_command

# The newest 4.x line the project is checked against, and the last release line with
# ZooKeeper mode (for ZooKeeper-mode comparisons and mixed clusters).
DEFAULT_VERSION = "4.1.1"
ZOOKEEPER_VERSION = "3.9.2"

_ZK_STARTED = re.compile(r"\[KafkaServer id=\d+\] started")
POM = Path(__file__).with_name("reference") / "pom.xml"
# Enough for the tests' few partitions; Kafka's own scripts default to 1 GiB.
HEAP = "-Xmx512m"


def cache_dir(version: str) -> Path:
    root = os.environ.get("KAFKARS_REFERENCE_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "kafkars" / "reference-kafka"
    return base / version


def resolve(version: str = DEFAULT_VERSION) -> Path:
    """The directory of Apache Kafka `version`'s jars, fetched with Maven on first use."""
    libs = cache_dir(version) / "libs"
    stamp = libs / ".complete"
    if stamp.exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("the reference Kafka needs Maven: apt-get install maven")
    # A partial copy (an interrupted run) is started over.
    shutil.rmtree(libs, ignore_errors=True)
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-Dkafka.version={version}",
            f"-DoutputDirectory={libs}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"mvn could not resolve Apache Kafka {version}: {result.stdout[-2000:]}"
            f"{result.stderr[-2000:]}"
        )
    stamp.touch()
    return libs


def classpath(version: str = DEFAULT_VERSION) -> str:
    return f"{resolve(version)}/*"


def kafka_tool(
    main_class: str,
    *args: str,
    version: str = DEFAULT_VERSION,
    timeout: float = 120.0,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Runs one of Apache Kafka's tools by its main class (what `bin/kafka-*.sh` runs),
    e.g. `kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", ...)`."""
    return subprocess.run(
        [
            java_command(),
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            classpath(version),
            main_class,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        check=check,
    )


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


class ReferenceKafka:
    """One Apache Kafka broker on 127.0.0.1: KRaft (a combined broker and controller) by
    default, or ZooKeeper mode when `zookeeper` (a connect string) is given (3.x only).

    `config` adds or overrides server properties (Kafka's names). `sasl_users`
    ({user: password}) adds a SASL_PLAINTEXT listener with PLAIN and SCRAM-SHA-256/512
    for those users (`sasl_bootstrap_servers`); SCRAM credentials are written at format
    time in KRaft mode. `features` ({name: level}, KRaft only) are set at format time,
    e.g. {"transaction.version": 1} for the classic transaction protocol. `heap`: the
    JVM's heap options (512 MiB for tests; Kafka's own scripts give it 1 GiB)."""

    def __init__(
        self,
        *,
        version: str = DEFAULT_VERSION,
        zookeeper: str | None = None,
        node_id: int = 1,
        config: dict[str, Any] | None = None,
        sasl_users: dict[str, str] | None = None,
        features: dict[str, int] | None = None,
        startup_timeout: float = 90.0,
        heap: str = HEAP,
    ) -> None:
        if zookeeper is not None and _major(version) >= 4:
            raise ValueError(f"Apache Kafka {version} has no ZooKeeper mode: use 3.9.x")
        self.version = version
        self.zookeeper = zookeeper
        self.node_id = node_id
        self.sasl_users = sasl_users or {}
        self.features = features or {}
        self.startup_timeout = startup_timeout
        self.heap = heap
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"reference-kafka-{version}-"))
        self.log_dir = self.data_dir / "data"
        self.port = free_port()
        self.sasl_port = free_port() if self.sasl_users else None
        self.controller_port = free_port() if zookeeper is None else None
        self.cluster_id = _cluster_id()
        self.config: dict[str, str] = self._base_config()
        self.config.update({k: _render(v) for k, v in (config or {}).items()})
        self._child: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        if self.sasl_port is None:
            raise ValueError("started without sasl_users")
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.poll() is None

    def _base_config(self) -> dict[str, str]:
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"]
        protocols = ["PLAINTEXT:PLAINTEXT"]
        if self.sasl_port is not None:
            listeners.append(f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}")
            protocols.append("SASL_PLAINTEXT:SASL_PLAINTEXT")
        config = {
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "50",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "inter.broker.listener.name": "PLAINTEXT",
        }
        if self.zookeeper is None:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
            protocols.append("CONTROLLER:PLAINTEXT")
            config.update(
                {
                    "process.roles": "broker,controller",
                    "node.id": str(self.node_id),
                    "controller.quorum.voters": f"{self.node_id}@127.0.0.1:{self.controller_port}",
                    "controller.listener.names": "CONTROLLER",
                }
            )
        else:
            config.update({"zookeeper.connect": self.zookeeper, "broker.id": str(self.node_id)})
        config["listeners"] = ",".join(listeners)
        config["listener.security.protocol.map"] = ",".join(protocols)
        if self.sasl_users:
            config["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
            users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_users.items())
            config["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            )
            for mechanism in ("scram-sha-256", "scram-sha-512"):
                config[f"listener.name.sasl_plaintext.{mechanism}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        return config

    def _write_properties(self) -> Path:
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in sorted(self.config.items())))
        return path

    def _java(self, main_class: str, *args: str) -> list[str]:
        return [
            java_command(),
            *self.heap.split(),
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            # slf4j-simple: the broker's INFO lines to stderr, into kafka.log.
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-cp",
            classpath(self.version),
            main_class,
            *args,
        ]

    def _format(self, properties: Path) -> None:
        args = ["format", "-t", self.cluster_id, "-c", str(properties)]
        for feature, level in self.features.items():
            args += ["--feature", f"{feature}={level}"]
        for user, password in self.sasl_users.items():
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        result = subprocess.run(
            self._java("kafka.tools.StorageTool", *args),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed: {result.stdout}{result.stderr}")

    def start(self) -> ReferenceKafka:
        properties = self._write_properties()
        if self.zookeeper is None and not (self.log_dir / "meta.properties").exists():
            self._format(properties)
        self._log = open(self.data_dir / "kafka.log", "ab")  # noqa: SIM115
        # Where this run's lines start: a restart appends to the same file.
        self._log_start = self._log.tell()
        self._child = subprocess.Popen(
            self._java("kafka.Kafka", str(properties)),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready():
            if self._child.poll() is not None:
                code = self._child.returncode
                self._child = None
                raise RuntimeError(f"Apache Kafka exited with {code}: {self.log()}")
            if time.monotonic() > deadline:
                self.stop(remove=False)
                raise TimeoutError(f"Apache Kafka did not start: {self.log()}")
            time.sleep(0.2)
        return self

    def _ready(self) -> bool:
        # "Kafka Server started" (KRaft) / "[KafkaServer id=N] started" (ZooKeeper): both
        # logged once every listener accepts and the broker has registered.
        # All of this run's lines: the start-up line is soon out of a tail of them.
        with open(self.data_dir / "kafka.log", "rb") as f:
            f.seek(self._log_start)
            text = f.read().decode(errors="replace")
        if "Kafka Server started" not in text and not _ZK_STARTED.search(text):
            return False
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def log(self, tail: int = 6000) -> str:
        path = self.data_dir / "kafka.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def stop(self, *, remove: bool = True) -> None:
        """Controlled shutdown (SIGTERM); SIGKILL after a minute."""
        if self._child is not None:
            stop_child(self._child, grace_s=60)
            self._child = None
            self._log.close()
        if remove:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def kill(self) -> None:
        if self._child is not None:
            kill_child(self._child)
            self._child = None
            self._log.close()

    def restart(self) -> ReferenceKafka:
        self.stop(remove=False)
        return self.start()

    def __enter__(self) -> ReferenceKafka:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _cluster_id() -> str:
    """A random id as Kafka's storage tool makes one: base64 of 16 bytes, never starting
    with '-' (it would read as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run Apache Kafka (the reference broker)")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--zookeeper", help="ZooKeeper connect string (3.x: ZooKeeper mode)")
    parser.add_argument("--resolve-only", action="store_true", help="fetch the jars and exit")
    args = parser.parse_args(argv)
    try:
        if args.resolve_only:
            print(resolve(args.version))
            return
        with ReferenceKafka(version=args.version, zookeeper=args.zookeeper) as kafka:
            print(f"Apache Kafka {kafka.version} on {kafka.bootstrap_servers} ({kafka.data_dir})")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    except (RuntimeError, TimeoutError, ValueError) as e:
        # A missing Maven, an unknown version or a broker that would not start: one line.
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SystemExit(f"reference-kafka: {first}") from None


if __name__ == "__main__":
    main()
