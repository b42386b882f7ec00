"""What a broker costs: resident memory (VmRSS) idle and under load, CPU seconds
(utime + stime of the whole process) per GB in and out, start-up time with many
partitions after a clean shutdown and after SIGKILL, beside the time `find` takes to walk
the same log dir, and start-up after SIGKILL as a function of the bytes not flushed."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.harness import wire
from kafkars.broker import Broker

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_busy_seconds() -> float:
    """CPU seconds all CPUs spent not idle (nor waiting for I/O) since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(f) for f in fields[:8]]
    # user nice system idle iowait irq softirq steal: all but idle and iowait.
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS


def cpu_seconds(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the parenthesised command (which may hold spaces): utime is the 14th
    # field of the line, stime the 15th.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@contextlib.contextmanager
def paused(pids: list[int]) -> Iterator[None]:
    """Stops these processes (SIGSTOP) for the duration, then lets them go on (SIGCONT),
    even if the body fails: a broker waiting its turn takes no CPU from the one measured.
    The JIT compilation, collections and deletions it would have done meanwhile happen
    after, in its own time."""
    stopped = []
    try:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class RssSampler:
    """The largest VmRSS seen while it runs, sampled every `interval` seconds."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = rss_bytes(pid) or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_bytes(self.pid) or 0)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()


def raise_fd_limit() -> int:
    """Soft RLIMIT_NOFILE up to the hard one (the broker child inherits it); the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def _answering(broker: Broker) -> None:
    """Until the port answers ApiVersions (the ready file comes just before that)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            wire.probe(broker.host, broker.port, timeout=5)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _timed_start(broker: Broker) -> float:
    began = time.perf_counter()
    broker.start()
    _answering(broker)
    return time.perf_counter() - began


def _find_seconds(log_dir: Path) -> float:
    began = time.perf_counter()
    subprocess.run(["find", str(log_dir)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def startup(
    partitions: int,
    create_topic: Callable[[str, str, int], None],
    fill: Callable[[str, str, int], None],
) -> dict[str, Any]:
    """Start-up of a broker holding `partitions` partitions (one topic, a few records in
    each): after a clean shutdown and after SIGKILL, and `find` over its log dir."""
    result: dict[str, Any] = {"partitions": partitions}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        broker = Broker(log_dir=tmp, process=True, startup_timeout=1800)
        try:
            result["first_start_s"] = _timed_start(broker)
            if partitions:
                began = time.perf_counter()
                create_topic(broker.bootstrap_servers, "startup", partitions)
                result["create_s"] = time.perf_counter() - began
                fill(broker.bootstrap_servers, "startup", partitions)
            assert broker._child is not None
            result["fds"] = open_fds(broker._child.pid)
            result["rss_MiB"] = (rss_bytes(broker._child.pid) or 0) / 2**20
            began = time.perf_counter()
            broker.stop(remove=False)
            result["clean_stop_s"] = time.perf_counter() - began
            result["find_s"] = _find_seconds(Path(tmp))
            result["clean_start_s"] = _timed_start(broker)
            broker.kill()
            result["unclean_start_s"] = _timed_start(broker)
        finally:
            broker.stop(remove=False)
    for kind in ("clean", "unclean"):
        result[f"{kind}_start_vs_find"] = result[f"{kind}_start_s"] / max(result["find_s"], 1e-6)
    return result


# The broker's start-up line: "... (N segment(s) scanned, B bytes read, ...".
_RECOVERY_READ = re.compile(r"segment\(s\) scanned, (\d+) bytes read")


def recovery(
    flushed_bytes: int,
    unflushed: list[int],
    create_topic: Callable[[str, str, int], None],
    produce: Callable[[str, str, int], None],
) -> list[dict[str, Any]]:
    """Start-up after SIGKILL of a broker whose one partition holds `flushed_bytes` made
    durable by a clean shutdown, then each of `unflushed` bytes appended and the broker
    killed: recovery should read what was not flushed, not the segment. Last, the same
    log killed before any clean shutdown (nothing flushed: all of it is read)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        broker = Broker(log_dir=tmp, process=True, startup_timeout=1800)

        def killed_start(row: dict[str, Any]) -> None:
            broker.kill()
            row["unclean_start_s"] = _timed_start(broker)
            found = _RECOVERY_READ.findall(broker.server_log())
            row["recovery_read_bytes"] = int(found[-1]) if found else None
            rows.append(row)

        try:
            _timed_start(broker)
            create_topic(broker.bootstrap_servers, "recovery", 1)
            produce(broker.bootstrap_servers, "recovery", flushed_bytes)
            for extra in unflushed:
                broker.stop(remove=False)  # clean: the recovery point is the log end
                row: dict[str, Any] = {"clean_start_s": _timed_start(broker)}
                if extra:
                    produce(broker.bootstrap_servers, "recovery", extra)
                row["unflushed_bytes"] = extra
                row["log_bytes"] = _dir_bytes(Path(tmp))
                killed_start(row)
        finally:
            broker.stop(remove=False)
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        broker = Broker(log_dir=tmp, process=True, startup_timeout=1800)
        try:
            _timed_start(broker)
            create_topic(broker.bootstrap_servers, "recovery", 1)
            produce(broker.bootstrap_servers, "recovery", flushed_bytes)
            killed_start({"unflushed_bytes": None, "log_bytes": _dir_bytes(Path(tmp))})
        finally:
            broker.stop(remove=False)
    return rows


def _dir_bytes(root: Path) -> int:
    """Bytes of the `.log` files under `root`."""
    return sum(p.stat().st_size for p in root.rglob("*.log"))
