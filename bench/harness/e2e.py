"""The latency client: `rust/kafkars-client/examples/e2e_latency.rs`, a Rust producer and
consumer pair in one process that measures produce-to-consume latency open-loop at a fixed
rate with the due time in each record. Its cost is per batch, not per record, so on 2 shared
CPUs the broker, not the client, is the bound at hundreds of thousands of records/s, which
`rdkafka_performance -l` (one CPU spent pacing, a callback per record) was not."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from bench.harness.clients import ClientError

REPO = Path(__file__).resolve().parents[2]
BUILD = ["cargo", "build", "--release", "-q", "-p", "kafkars-client", "--example", "e2e_latency"]
BINARY = (
    Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    / "release"
    / "examples"
    / "e2e_latency"
)
# glibc keeps the memory the client frees (its fetch responses and batches, up to 8 MiB)
# instead of returning it at once: faulting it in again, on a virtual machine that hands
# free memory back to its host, cost the client 160,000 page faults in a 12 s run at 1.27
# million records/s (51,000 with these), stalls that were charged to the broker.
CLIENT_ENV = {
    **os.environ,
    "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=268435456"
    ":glibc.malloc.trim_threshold=1073741824",
}


class Measured:
    """A latency run whose quantiles the client computed (the Latency interface the
    scenarios use: summary(), cdf(), achieved_per_s)."""

    def __init__(self, out: dict[str, Any]) -> None:
        self.out = out
        self.offered_per_s = float(out["offered_per_s"])
        self.achieved_per_s = float(out["achieved_per_s"])

    def summary(self) -> dict[str, float]:
        keys = ("offered_per_s", "achieved_per_s", "count", "p50", "p99", "p99.9", "max")
        return {k: self.out[k] for k in keys}

    def cdf(self) -> list[tuple[float, float]]:
        return [(q, ms) for q, ms in self.out["cdf"]]


class E2eLatency:
    name = "e2e_latency (kafkars-client, Rust)"

    def __init__(self, binary: Path) -> None:
        self.binary = binary

    @classmethod
    def build(cls) -> E2eLatency:
        """Builds it (a no-op when up to date); ClientError when cargo cannot."""
        try:
            subprocess.run(BUILD, cwd=REPO, check=True, capture_output=True, timeout=1800)
        except (OSError, subprocess.SubprocessError) as e:
            detail = getattr(e, "stderr", b"") or b""
            raise ClientError(f"{' '.join(BUILD)} failed: {e} {detail[-400:]!r}") from e
        return cls(BINARY)

    def latency(
        self, bootstrap: str, topic: str, *, rate: float, seconds: float, size: int
    ) -> Measured:
        args = [str(self.binary), bootstrap, topic, f"{rate:.0f}", str(seconds), str(size)]
        try:
            done = subprocess.run(
                args, capture_output=True, text=True, timeout=seconds * 6 + 60, env=CLIENT_ENV
            )
        except subprocess.TimeoutExpired as e:
            raise ClientError(f"e2e_latency did not finish in {e.timeout:.0f} s") from e
        if done.returncode != 0:
            raise ClientError(f"e2e_latency failed: {done.stderr.strip()[-400:]}")
        return Measured(json.loads(done.stdout))
