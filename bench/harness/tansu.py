"""Tansu (the crate `tansu`, a Kafka-compatible broker in Rust) as a peer the harness starts:
`--peer tansu`. Its binary comes from `make tansu-deps` (`cargo install` into
.cache/tansu); `$KAFKARS_TANSU` names another one.

The build has no storage engine on local disk: the harness gives it `memory://tansu/`,
so its log lives in the broker's memory, where kafkars and Apache Kafka write files.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from bench.harness import wire
from kafkars.child_process import stop_child
from kafkars.testing.zookeeper import free_port

VERSION = "0.6.0"
STORAGE_ENGINE = "memory://tansu/"
DEFAULT_BINARY = Path(__file__).resolve().parents[2] / ".cache" / "tansu" / "bin" / "tansu"
BUILD_HINT = f"`make tansu-deps` installs Tansu {VERSION} there (cargo install, ~10 min)"


def find_binary() -> Path | None:
    chosen = os.environ.get("KAFKARS_TANSU")
    path = Path(chosen) if chosen else DEFAULT_BINARY
    return path if path.is_file() and os.access(path, os.X_OK) else None


class Tansu:
    """One Tansu broker on 127.0.0.1 and a free port, its log in memory; ready once it
    answers ApiVersions and Metadata."""

    def __init__(self, binary: Path, *, startup_timeout: float = 60.0) -> None:
        self.binary = binary
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.data_dir = Path(tempfile.mkdtemp(prefix="tansu-"))
        self.version = _version(binary)
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Tansu:
        url = f"tcp://{self.bootstrap_servers}"
        self._log = open(self.data_dir / "tansu.log", "ab")  # noqa: SIM115
        self._child = subprocess.Popen(
            [
                str(self.binary),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                STORAGE_ENGINE,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.data_dir,
        )
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready():
            if self._child.poll() is not None:
                code = self._child.returncode
                self._child = None
                self._log.close()
                raise RuntimeError(f"Tansu exited with {code}: {_error_line(self.log())}")
            if time.monotonic() > deadline:
                self.stop(remove=False)
                raise TimeoutError(f"Tansu did not start: {self.log()}")
            time.sleep(0.05)
        return self

    def _ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.settimeout(5)
                wire.round_trip(s, wire.api_versions_request(1))
                wire.round_trip(s, wire.metadata_request(2))
        except OSError:
            return False
        return True

    def log(self, tail: int = 2000) -> str:
        path = self.data_dir / "tansu.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def stop(self, *, remove: bool = True) -> None:
        if self._child is not None:
            stop_child(self._child, grace_s=30)
            self._child = None
            self._log.close()
        if remove:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def _version(binary: Path) -> str:
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except OSError:
        return "?"
    return out.split()[-1] if out.split() else "?"


def _error_line(log: str) -> str:
    """The line saying why it stopped (a build without memory:// says FeatureNotEnabled)."""
    errors = [line for line in log.splitlines() if line.startswith("Error:")]
    if not errors:
        return log
    hint = f" ({BUILD_HINT})" if "FeatureNotEnabled" in errors[-1] else ""
    return errors[-1] + hint
