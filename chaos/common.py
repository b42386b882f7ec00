"""What every chaos suite needs: a broker child process it can kill -9 and time, raw Kafka
frames, a resident-memory sampler and a produce/consume round trip."""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kafkars.testing.raw_frames import recv_frame

# What the suites run every broker with (plus their own settings).
BASE_CONFIG: dict[str, str] = {
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
}


class CheckFailed(AssertionError):
    """A chaos check found the broker breaking one of its promises."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int, source: str | None = None) -> bool:
    try:
        with socket.create_connection(
            (host, port), timeout=0.5, source_address=(source, 0) if source else None
        ):
            return True
    except OSError:
        return False


class BrokerProcess:
    """One broker as a child process on a fixed port, so restarts keep the clients'
    bootstrap address. `start()` returns the seconds from spawn to an accepting port."""

    def __init__(self, log_dir: Path, config: dict[str, str] | None = None, port: int = 0):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.config = {**BASE_CONFIG, **(config or {})}
        self.child: subprocess.Popen[bytes] | None = None
        self.server_log = self.log_dir.parent / f"{self.log_dir.name}.server.log"
        self.restart_seconds: list[float] = []

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.child is not None
        return self.child.pid

    def spawn(self) -> subprocess.Popen[bytes]:
        overrides = {
            **self.config,
            "listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "log.dirs": str(self.log_dir),
        }
        args = [sys.executable, "-m", "kafkars.server"]
        for key, value in overrides.items():
            args += ["--override", f"{key}={value}"]
        with open(self.server_log, "ab") as out:
            self.child = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        return self.child

    def start(self, timeout: float = 120.0) -> float:
        """Spawns the broker and waits for its port; raises if it exits first."""
        began = time.monotonic()
        child = self.spawn()
        while not port_open(self.host, self.port):
            if child.poll() is not None:
                raise RuntimeError(
                    f"broker exited with {child.returncode}: {self.last_error_line()}"
                )
            if time.monotonic() - began > timeout:
                self.kill()
                raise TimeoutError(f"broker did not listen within {timeout:.0f} s")
            time.sleep(0.01)
        took = time.monotonic() - began
        self.restart_seconds.append(took)
        return took

    def start_expecting_refusal(self, timeout: float = 60.0) -> tuple[bool, str]:
        """Starts the broker; (False, what it logged at ERROR and after) when it exits on
        its own, (True, "") when it listens."""
        seen = self.server_log.stat().st_size if self.server_log.exists() else 0
        child = self.spawn()
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if child.poll() is not None:
                with open(self.server_log, "rb") as f:
                    f.seek(seen)
                    lines = f.read().decode(errors="replace").splitlines()
                first = next((n for n, line in enumerate(lines) if " ERROR " in line), 0)
                said = [line for line in lines[first:] if " INFO " not in line]
                return False, "\n".join(said)
            if port_open(self.host, self.port):
                return True, ""
            time.sleep(0.02)
        self.kill()
        raise TimeoutError("broker neither listened nor exited")

    def kill(self) -> None:
        """SIGKILL: no flush, no checkpoints, no clean-shutdown marker."""
        if self.child is not None:
            if self.child.poll() is None:
                os.kill(self.child.pid, signal.SIGKILL)
            self.child.wait()
            self.child = None

    def stop(self) -> None:
        """SIGTERM: a clean shutdown."""
        if self.child is not None:
            self.child.send_signal(signal.SIGTERM)
            try:
                self.child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
            self.child = None

    def last_error_line(self) -> str:
        text = self.server_log.read_text(errors="replace") if self.server_log.exists() else ""
        lines = [line for line in text.splitlines() if " ERROR " in line or "Error" in line]
        return lines[-1].strip() if lines else (text.strip().splitlines() or ["(no log)"])[-1]

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def open_sockets(self) -> int:
        """Sockets the broker holds (its listening sockets included)."""
        count = 0
        fd_dir = Path(f"/proc/{self.pid}/fd")
        for fd in fd_dir.iterdir():
            try:
                if os.readlink(fd).startswith("socket:"):
                    count += 1
            except OSError:
                pass
        return count


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class RssSampler:
    """Samples a process's VmRSS every `interval` seconds in a background thread."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid = pid
        self.interval = interval
        self.before = rss_bytes(pid)
        self.peak = self.before
        self.samples = 0
        self.phase = "start"
        # The highest sample seen in each phase (see `mark`).
        self.phase_peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                now = rss_bytes(self.pid)
                self.peak = max(self.peak, now)
                self.phase_peaks[self.phase] = max(self.phase_peaks.get(self.phase, 0), now)
                self.samples += 1
            except (OSError, RuntimeError):
                return
            self._stop.wait(self.interval)

    def mark(self, phase: str) -> None:
        """Samples taken from now on count towards `phase` (one is taken at once)."""
        self.phase = phase
        now = rss_bytes(self.pid)
        self.peak = max(self.peak, now)
        self.phase_peaks[phase] = max(self.phase_peaks.get(phase, 0), now)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.after = rss_bytes(self.pid)


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def percentile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(q) - 1]


# -- raw frames --------------------------------------------------------------------------


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request_header(api_key: int, version: int, correlation_id: int, flexible: bool) -> bytes:
    """Request header v1 (or v2 with an empty tagged-field section when flexible)."""
    head = struct.pack(">hhih", api_key, version, correlation_id, 5) + b"chaos"
    return head + (b"\x00" if flexible else b"")


def read_frame(sock: socket.socket) -> bytes:
    return recv_frame(sock)


def answered_or_closed(sock: socket.socket, timeout: float = 10.0) -> str:
    """'answered' when a response frame comes back, 'closed' when the broker closes the
    connection; raises when it does neither within `timeout` (a hung connection)."""
    sock.settimeout(timeout)
    try:
        read_frame(sock)
        return "answered"
    except (ConnectionError, ConnectionResetError, BrokenPipeError):
        return "closed"
    except TimeoutError:
        raise CheckFailed("the broker neither answered nor closed the connection") from None


def api_versions(host: str, port: int) -> dict[int, tuple[int, int]]:
    """The broker's advertised (min, max) version of every API key (ApiVersions v0)."""
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(frame(request_header(18, 0, 1, False)))
        body = read_frame(s)
    _, error, count = struct.unpack_from(">ihi", body)
    check(error == 0, f"ApiVersions error {error}")
    out = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, 10 + 6 * i)
        out[key] = (lo, hi)
    return out


# -- a normal client ---------------------------------------------------------------------


def round_trip(bootstrap: str, records: int = 20, timeout: float = 60.0) -> float:
    """Produces `records` to a new topic with acks=all and reads them back; returns the
    seconds it took. Raises CheckFailed when anything is missing or wrong."""
    from confluent_kafka import Consumer, KafkaException, Producer

    began = time.monotonic()
    topic = f"rt-{uuid.uuid4().hex[:8]}"
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "message.timeout.ms": int(timeout * 1000),
            "log_level": 0,
        }
    )
    failures: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    for i in range(records):
        producer.produce(
            topic, key=str(i).encode(), value=f"v{i}".encode(), on_delivery=on_delivery
        )
    left = producer.flush(timeout)
    check(left == 0 and not failures, f"round trip produce failed: {left} left, {failures[:3]}")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rt-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "check.crcs": True,
            "log_level": 0,
        }
    )
    consumer.subscribe([topic])
    seen: dict[bytes, bytes] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(seen) < records and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            seen[msg.key() or b""] = msg.value() or b""
    finally:
        consumer.close()
    expected = {str(i).encode(): f"v{i}".encode() for i in range(records)}
    check(seen == expected, f"round trip read {len(seen)}/{records} records")
    return time.monotonic() - began


def report(title: str, figures: dict[str, Any]) -> None:
    print(f"== {title}", flush=True)
    for key, value in figures.items():
        print(f"   {key}: {value}", flush=True)


def write_json(path: Path | None, data: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(data, indent=2, default=str))
