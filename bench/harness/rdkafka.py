"""librdkafka's `rdkafka_performance` as the load generator: C producer and consumer, its
summary lines parsed for records/s and MB/s, its latency mode (-l, -A) for per-record
end-to-end latencies at a fixed rate (-r)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.harness.clients import ClientError, Latency, Run

REPO = Path(__file__).resolve().parents[2]
LIBRDKAFKA = REPO / ".cache" / "librdkafka" / "src"
DEFAULT_BINARY = LIBRDKAFKA / "examples" / "rdkafka_performance"
BUILD_HINT = (
    "build it with scripts/conformance.sh (builds librdkafka once), then "
    "`make -C .cache/librdkafka/src/examples rdkafka_performance`"
)

_PRODUCED = re.compile(
    r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered .*? in (\d+)ms: "
)
_CONSUMED = re.compile(r"% (\d+) messages \((\d+) bytes\) consumed in (\d+)ms: ")
# Samples from the first half second are dropped: they include the clients' connecting.
WARMUP_S = 0.5


def find_binary() -> Path | None:
    """$RDKAFKA_PERFORMANCE, else the copy scripts/conformance.sh's librdkafka build leaves."""
    path = Path(os.environ.get("RDKAFKA_PERFORMANCE", DEFAULT_BINARY))
    return path if path.is_file() and os.access(path, os.X_OK) else None


class RdkafkaPerformance:
    """The Client of clients.py, one rdkafka_performance process per run."""

    name = "rdkafka_performance"
    max_latency_rate: float | None = None

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.env = dict(os.environ)
        # The examples link the librdkafka built beside them, not a system one.
        libdir = str(binary.resolve().parents[1] / "src")
        self.env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (libdir, self.env.get("LD_LIBRARY_PATH", "")) if p
        )
        self.version = self._version()
        self.name = f"rdkafka_performance (librdkafka {self.version})"

    def _version(self) -> str:
        # With no arguments it prints its usage, which names the library version.
        out = subprocess.run(
            [str(self.binary)], env=self.env, capture_output=True, text=True, timeout=30
        )
        m = re.search(r"librdkafka version (\S+)", out.stdout + out.stderr)
        return m.group(1) if m else "unknown"

    def _run(self, args: list[str], timeout: float) -> str:
        try:
            done = subprocess.run(
                [str(self.binary), *args],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as e:
            raise ClientError(f"rdkafka_performance did not finish in {timeout:.0f} s") from e
        return done.stdout + done.stderr

    def produce(
        self,
        bootstrap: str,
        topic: str,
        *,
        records: int,
        size: int,
        acks: int,
        codec: str,
        partition: int | None,
    ) -> Run:
        args = ["-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(records)]
        args += ["-a", str(acks), "-z", codec]
        # rdkafka_performance lingers 1 s by default; librdkafka's own default is 5 ms.
        args += ["-X", "linger.ms=5"]
        if partition is not None:
            args += ["-p", str(partition)]
        out = self._run(args, timeout=120 + records * size / 5e6)
        found = _PRODUCED.findall(out)
        if not found:
            raise ClientError(f"no summary from rdkafka_performance: {_tail(out)}")
        produced, payload, delivered, ms = (int(x) for x in found[-1])
        if produced == 0:
            raise ClientError(f"rdkafka_performance produced nothing: {_tail(out)}")
        if delivered < produced:
            raise ClientError(f"{produced - delivered} records not delivered: {_tail(out)}")
        return Run(delivered, payload * delivered // max(produced, 1), ms / 1000)

    def consume(self, bootstrap: str, topic: str, *, partitions: list[int], records: int) -> Run:
        args = ["-C", "-t", topic, "-b", bootstrap, "-o", "beginning", "-c", str(records)]
        for p in partitions:
            args += ["-p", str(p)]
        out = self._run(args, timeout=120 + records / 2e4)
        found = _CONSUMED.findall(out)
        if not found:
            raise ClientError(f"no summary from rdkafka_performance: {_tail(out)}")
        got, payload, ms = (int(x) for x in found[-1])
        if got < records:
            raise ClientError(f"consumed {got} of {records} records: {_tail(out)}")
        return Run(got, payload, ms / 1000)

    def latency(
        self, bootstrap: str, topic: str, *, rate: float, seconds: float, size: int, linger_ms: int
    ) -> Latency:
        """A consumer and a producer both in latency mode (-l): the producer writes its wall
        clock into each record at a fixed rate, the consumer writes now - that per record."""
        records = int(rate * (seconds + WARMUP_S))
        with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
            samples = Path(tmp) / "consumer.txt"
            log = open(Path(tmp) / "consumer.log", "w+")  # noqa: SIM115
            consumer = subprocess.Popen(
                [str(self.binary), "-C", "-l", "-A", str(samples), "-t", topic, "-p", "0"]
                + ["-b", bootstrap, "-o", "beginning", "-c", str(records)],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                time.sleep(1.0)  # connected and fetching before the first record
                args = ["-P", "-l", "-t", topic, "-p", "0", "-b", bootstrap, "-s", str(size)]
                # -r paces in whole microseconds between records: capped at 1,000,000/s so
                # the gap is never 0 (no pacing at all).
                args += ["-c", str(records), "-r", str(int(min(rate, 1e6))), "-a", "1"]
                args += ["-X", f"linger.ms={linger_ms}"]
                out = self._run(args, timeout=seconds * 4 + 60)
                found = _PRODUCED.findall(out)
                if not found:
                    raise ClientError(f"no summary from rdkafka_performance: {_tail(out)}")
                produced, _, _, ms = (int(x) for x in found[-1])
                try:
                    consumer.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    # SIGINT: it stops, prints its summary and closes the samples file.
                    consumer.send_signal(signal.SIGINT)
                    consumer.wait(timeout=30)
            finally:
                if consumer.poll() is None:
                    consumer.kill()
                    consumer.wait()
                log.close()
            values = [int(line) / 1000 for line in samples.read_text().split() if line.isdigit()]
        skip = int(rate * WARMUP_S)
        return Latency(float(rate), produced / (ms / 1000) if ms else 0.0, values[skip:])


def _tail(out: str) -> str:
    lines = [line for line in out.strip().splitlines() if "CONFWARN" not in line]
    return " | ".join(lines[-3:])[-400:]
