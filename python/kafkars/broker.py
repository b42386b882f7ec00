"""The embedded broker: a real kafkars broker for tests and applications.

    with kafkars.Broker() as broker:          # port 0, temporary log dir, in this process
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

`Broker(process=True)` runs it as a child process instead (its own GIL; what the
end-to-end tests use), stopped with SIGTERM so it shuts down cleanly; `command_prefix`
runs that process under another command (`["ip", "netns", "exec", "ns1"]` with `host` the
namespace's address: the Jepsen suite's brokers). In asyncio code,
`async with kafkars.Broker() as broker:` starts and stops it without blocking the loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kafkars.child_process import kill_child, stop_child


class Broker:
    """A single broker on 127.0.0.1 (port 0 = a free port) with its data in `log_dir`
    (a temporary directory, removed on stop, when not given)."""

    def __init__(
        self,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        config: dict[str, Any] | None = None,
        process: bool = False,
        startup_timeout: float = 30.0,
        env: dict[str, str] | None = None,
        command_prefix: Sequence[str] = (),
    ) -> None:
        self._tmp: str | None = None
        if log_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="kafkars-")
            log_dir = self._tmp
        self.log_dir = Path(log_dir)
        self.host = host
        self.port = port
        self.process = process
        self.startup_timeout = startup_timeout
        # Environment variables for the child process (KAFKA_OPTS, say) on top of ours.
        self.env = env or {}
        # Runs the child process under another command (`ip netns exec NAME`, say).
        self.command_prefix = list(command_prefix)
        self.overrides: dict[str, str] = {
            "listeners": f"PLAINTEXT://{host}:{port}",
            "log.dirs": str(self.log_dir),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        }
        self.overrides.update({k: _render(v) for k, v in (config or {}).items()})
        self._server: Any = None
        self._child: subprocess.Popen[bytes] | None = None
        self.listeners: list[tuple[str, str, str, int]] = []
        # The Prometheus endpoint's port, when `kafkars.metrics.port` is configured.
        self.metrics_port: int | None = None

    @property
    def running(self) -> bool:
        return self._server is not None or self._child is not None

    @property
    def bootstrap_servers(self) -> str:
        _, _, host, port = self.listeners[0]
        return f"{host}:{port}"

    def start(self) -> Broker:
        if self.process:
            self._start_child()
        else:
            from kafkars.config import KafkaConfig
            from kafkars.server.kafka_server import KafkaServer

            self._server = KafkaServer(KafkaConfig.from_dict(self.overrides))
            self._server.startup()
            self.listeners = self._server.bound_listeners
            self.metrics_port = self._server.metrics_port
        # Later restarts reuse the ports, so clients keep their bootstrap address (every
        # listener keeps its name, and so its security protocol).
        self.port = self.listeners[0][3]
        self.overrides["listeners"] = ",".join(
            f"{name}://{f'[{host}]' if ':' in host else host}:{port}"
            for name, _, host, port in self.listeners
        )
        return self

    def _start_child(self) -> None:
        ready = self.log_dir / ".kafkars-ready.json"
        ready.unlink(missing_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        args = [
            *self.command_prefix,
            sys.executable,
            "-m",
            "kafkars.server",
            "--ready-file",
            str(ready),
        ]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        self._log_file = open(self.log_dir / ".kafkars-server.log", "ab")  # noqa: SIM115
        # Its own process group: Ctrl-C in a terminal reaches the parent, which stops it.
        self._child = subprocess.Popen(
            args,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + self.startup_timeout
        while not ready.exists():
            if self._child.poll() is not None:
                raise RuntimeError(
                    f"broker exited with {self._child.returncode}: {self.server_log()}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"broker did not start: {self.server_log()}")
            time.sleep(0.002)  # start-up is ~0.1 s: a coarser poll would be a tenth of it
        info = json.loads(ready.read_text())
        self.listeners = [tuple(x) for x in info["listeners"]]  # type: ignore[misc]
        self.metrics_port = info.get("metrics_port")

    def server_log(self) -> str:
        path = self.log_dir / ".kafkars-server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self, *, remove: bool = True) -> None:
        """Graceful shutdown (SIGTERM for a child process)."""
        if self._server is not None:
            self._server.shutdown()
            self._server = None
        if self._child is not None:
            stop_child(self._child, grace_s=60)
            self._child = None
            self._log_file.close()
        if remove and self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL the child process: an unclean stop, for recovery tests."""
        if self._child is not None:
            kill_child(self._child)
            self._child = None
            self._log_file.close()

    def restart(self) -> Broker:
        self.stop(remove=False)
        return self.start()

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Broker:
        # Start-up and shutdown block (threads joined, files flushed); the event loop
        # keeps running while a worker thread does them.
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
