"""ZooKeeper for tests and local clusters: Debian's `zookeeper` package (3.8), on free
ports with its data in a temporary directory. One standalone server, or an ensemble of
several `QuorumPeerMain` processes that survives losing any minority of its nodes.

    with ZooKeeperServer() as zk:
        print(zk.connect)          # 127.0.0.1:PORT

    with ZooKeeperEnsemble(3) as zk:
        print(zk.connect)          # 127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
        zk.kill(zk.leader())       # SIGKILL the quorum leader; the others elect another

`sasl_users` ({user: password}) turns on SASL DIGEST-MD5 authentication for clients
(a JAAS `Server` section and ZooKeeper's SASLAuthenticationProvider), what brokers with
`zookeeper.set.acl=true` log in with.

Needs Java and /usr/share/java/zookeeper.jar (`apt-get install zookeeper`, which
`make system-deps` does).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from kafkars.child_process import stop_child

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# The JVMs are small and the timing fast: tests kill nodes and wait for elections.
TICK_MS = 500


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def java_command() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise RuntimeError("ZooKeeper needs Java: install a JRE or set JAVA_HOME")
    return found


def four_letter_word(port: int, word: str, timeout: float = 1.0, host: str = "127.0.0.1") -> str:
    """A ZooKeeper four-letter-word command's answer ("" when the node does not answer)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def server_mode(port: int, host: str = "127.0.0.1") -> str | None:
    """`standalone`, `leader` or `follower` from `srvr`; None while the node does not
    serve (down, or without a quorum)."""
    for line in four_letter_word(port, "srvr", host=host).splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def _check_installed() -> None:
    if not ZOOKEEPER_JAR.exists():
        raise RuntimeError(
            f"{ZOOKEEPER_JAR} is missing: apt-get install zookeeper (make system-deps)"
        )


class ZooKeeperNode:
    """One ZooKeeper JVM on 127.0.0.1: standalone (`peers` empty), or server `myid` of an
    ensemble whose `peers` are {myid: (client port, quorum port, election port)}. A
    standalone node can listen on another `host` and run under a `command_prefix`
    (`ip netns exec NAME`: the Jepsen suite's ZooKeeper in its own network namespace)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int = 0,
        myid: int = 0,
        peers: dict[int, tuple[int, int, int]] | None = None,
        sasl_users: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        command_prefix: Sequence[str] = (),
    ) -> None:
        self.data_dir = data_dir
        self.host = host
        self.command_prefix = list(command_prefix)
        self.myid = myid
        self.peers = peers or {}
        self.port = self.peers[myid][0] if self.peers else port or free_port()
        self.sasl_users = sasl_users or {}
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.poll() is None

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        data = self.data_dir / "data"
        data.mkdir(exist_ok=True)
        lines = [
            f"tickTime={TICK_MS}",
            f"dataDir={data}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
            # Followers give up on a dead leader after syncLimit ticks.
            "initLimit=10",
            "syncLimit=4",
            "4lw.commands.whitelist=*",
        ]
        if self.peers:
            (data / "myid").write_text(f"{self.myid}\n")
            lines += [
                f"server.{i}=127.0.0.1:{quorum}:{election}"
                for i, (_, quorum, election) in sorted(self.peers.items())
            ]
        if self.sasl_users:
            lines.append(
                "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
            )
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def _jvm_flags(self) -> list[str]:
        flags = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        if self.sasl_users:
            users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_users.items())
            jaas = self.data_dir / "zookeeper_jaas.conf"
            jaas.write_text(
                f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                f"  {users};\n}};\n"
            )
            flags.append(f"-Djava.security.auth.login.config={jaas}")
        return flags

    def launch(self) -> None:
        """Starts the JVM without waiting for it to serve."""
        cfg = self._write_config()
        self._log = open(self.data_dir / "zookeeper.log", "ab")  # noqa: SIM115
        self._child = subprocess.Popen(
            [
                *self.command_prefix,
                java_command(),
                *self._jvm_flags(),
                "-cp",
                f"{ZOOKEEPER_JAR}:/usr/share/java/*",
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(cfg),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Its own process group: Ctrl-C in a terminal reaches whoever started it, who
            # stops the brokers before ZooKeeper, not ZooKeeper first.
            start_new_session=True,
        )

    def wait_serving(self, deadline: float) -> None:
        while server_mode(self.port, self.host) is None:
            if self._child is None or self._child.poll() is not None:
                code = self._child.returncode if self._child else None
                raise RuntimeError(f"ZooKeeper exited with {code}: {self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"ZooKeeper on port {self.port} did not serve: {self.log()}")
            time.sleep(0.1)

    def log(self) -> str:
        path = self.data_dir / "zookeeper.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self._child is None:
            return
        stop_child(self._child, grace_s=20, sig=sig)
        self._child = None
        self._log.close()


class ZooKeeperServer:
    """One standalone ZooKeeper server on 127.0.0.1 (or `host`, run under `command_prefix`)."""

    def __init__(
        self,
        *,
        port: int = 0,
        data_dir: str | None = None,
        sasl_users: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        command_prefix: Sequence[str] = (),
    ) -> None:
        _check_installed()
        self._tmp = tempfile.mkdtemp(prefix="kafkars-zk-") if data_dir is None else None
        self.data_dir = Path(data_dir or self._tmp or ".")
        self.node = ZooKeeperNode(
            self.data_dir,
            port=port,
            sasl_users=sasl_users,
            host=host,
            command_prefix=command_prefix,
        )
        self.port = self.node.port

    @property
    def connect(self) -> str:
        return f"{self.node.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        self.node.launch()
        try:
            self.node.wait_serving(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def log(self) -> str:
        return self.node.log()

    def stop(self) -> None:
        self.node.stop()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ZooKeeperEnsemble:
    """`size` ZooKeeper servers (myid 1..size) forming one quorum on 127.0.0.1."""

    def __init__(self, size: int = 3, *, sasl_users: dict[str, str] | None = None) -> None:
        _check_installed()
        self._tmp = tempfile.mkdtemp(prefix="kafkars-zk-ensemble-")
        peers = {i: (free_port(), free_port(), free_port()) for i in range(1, size + 1)}
        self.nodes = {
            i: ZooKeeperNode(Path(self._tmp) / f"zk{i}", myid=i, peers=peers, sasl_users=sasl_users)
            for i in peers
        }

    @property
    def connect(self) -> str:
        """Every node: clients move to another when theirs goes."""
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values())

    def start(self, myid: int | None = None, timeout: float = 60.0) -> ZooKeeperEnsemble:
        """Starts every node (or node `myid` again) and waits until they serve."""
        nodes = list(self.nodes.values()) if myid is None else [self.nodes[myid]]
        nodes = [n for n in nodes if not n.running]
        try:
            for node in nodes:
                node.launch()
            deadline = time.monotonic() + timeout
            for node in nodes:
                node.wait_serving(deadline)
        except BaseException:
            if myid is None:
                self.stop()
            raise
        return self

    def wait_for_quorum(self, timeout: float = 30.0) -> int:
        """Waits until every running node serves under one leader; returns its myid."""
        deadline = time.monotonic() + timeout
        while True:
            modes = {i: server_mode(n.port) for i, n in self.nodes.items() if n.running}
            leaders = [i for i, m in modes.items() if m == "leader"]
            if len(leaders) == 1 and all(m in ("leader", "follower") for m in modes.values()):
                return leaders[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no ZooKeeper quorum: modes {modes}")
            time.sleep(0.1)

    def leader(self) -> int:
        """The myid of the quorum leader (asked with the `srvr` four-letter word)."""
        return self.wait_for_quorum()

    def kill(self, myid: int) -> None:
        """SIGKILL one node: its clients reconnect to the others within their session."""
        self.nodes[myid].stop(signal.SIGKILL)

    def stop(self, myid: int | None = None) -> None:
        """Stops one node, keeping its data; or every node, removing the data."""
        if myid is not None:
            self.nodes[myid].stop()
            return
        for node in self.nodes.values():
            node.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def log(self) -> str:
        return "\n".join(f"--- zk{i}\n{n.log()}" for i, n in self.nodes.items())

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
