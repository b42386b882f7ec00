"""A ZooKeeper server for tests and local clusters: Debian's `zookeeper` package (3.8),
started on a free port with its data in a temporary directory.

    with ZooKeeperServer() as zk:
        print(zk.connect)          # 127.0.0.1:PORT

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
from pathlib import Path
from types import TracebackType

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")


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


class ZooKeeperServer:
    """One standalone ZooKeeper server on 127.0.0.1."""

    def __init__(self, *, port: int = 0, data_dir: str | None = None) -> None:
        if not ZOOKEEPER_JAR.exists():
            raise RuntimeError(
                f"{ZOOKEEPER_JAR} is missing: apt-get install zookeeper (make system-deps)"
            )
        self._tmp = tempfile.mkdtemp(prefix="kafkars-zk-") if data_dir is None else None
        self.data_dir = Path(data_dir or self._tmp or ".")
        self.port = port or free_port()
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime=500\ndataDir={self.data_dir / 'data'}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
            "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
        )
        classpath = f"{ZOOKEEPER_JAR}:/usr/share/java/*"
        self._log = open(self.data_dir / "zookeeper.log", "ab")  # noqa: SIM115
        self._child = subprocess.Popen(
            [
                java_command(),
                "-Xmx256m",
                "-Dzookeeper.4lw.commands.whitelist=ruok,srvr",
                "-cp",
                classpath,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(cfg),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Its own process group: Ctrl-C in a terminal reaches whoever started it, who
            # stops the brokers before ZooKeeper, not ZooKeeper first.
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self._child.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self._child.returncode}: {self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"ZooKeeper did not start: {self.log()}")
            time.sleep(0.1)
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def log(self) -> str:
        path = self.data_dir / "zookeeper.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self._child is not None:
            self._child.send_signal(signal.SIGTERM)
            try:
                self._child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()
            self._child = None
            self._log.close()
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
