"""What a load-generating client gives the scenarios: a produce run, a consume run and a
latency run, whichever client does them (librdkafka's rdkafka_performance, or
confluent-kafka Python clients when that is not built)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

CDF_QUANTILES = (
    [i / 100 for i in range(1, 100)] + [0.99 + i / 1000 for i in range(1, 10)] + [0.9995, 0.9999]
)


@dataclass
class Run:
    """One produce or consume run: records and payload bytes moved in `seconds`."""

    records: int
    payload_bytes: int
    seconds: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0


@dataclass
class Latency:
    """End-to-end latencies (produce call to consumer delivery) at one offered load, ms."""

    offered_per_s: float
    achieved_per_s: float
    samples_ms: list[float] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        if not self.samples_ms:
            return float("nan")
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.samples_ms)
        return {
            "offered_per_s": self.offered_per_s,
            "achieved_per_s": self.achieved_per_s,
            "count": len(ordered),
            "p50": self.percentile(0.50),
            "p99": self.percentile(0.99),
            "p99.9": self.percentile(0.999),
            "max": ordered[-1] if ordered else float("nan"),
        }

    def cdf(self) -> list[tuple[float, float]]:
        """(quantile, ms) pairs, finer in the tail: enough to redraw the CDF from JSON."""
        if not self.samples_ms:
            return []
        ordered = sorted(self.samples_ms)
        return [(q, ordered[min(len(ordered) - 1, int(q * len(ordered)))]) for q in CDF_QUANTILES]


class ClientError(RuntimeError):
    """A client run failed (exit status, no summary line, timeout)."""


class Client(Protocol):
    name: str
    # The highest load a latency run can offer (records/s); None: no cap of its own.
    max_latency_rate: float | None

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
    ) -> Run: ...

    def consume(
        self, bootstrap: str, topic: str, *, partitions: list[int], records: int
    ) -> Run: ...

    def latency(
        self, bootstrap: str, topic: str, *, rate: float, seconds: float, size: int, linger_ms: int
    ) -> Latency: ...
