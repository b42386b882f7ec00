"""Client quotas as Kafka enforces them (ClientQuotaManager): per (user, client-id)
entity, a byte rate for produce and for fetch and a request-time percentage, measured
over `quota.window.num` windows of `quota.window.size.seconds`. A client over its quota
is answered at once with `throttle_time_ms` and its connection is muted for that long.

Quota configs are entity configs (`producer_byte_rate`, `consumer_byte_rate`,
`request_percentage`), looked up with Kafka's precedence from the most specific entity
(user and client id) to the least (the default client id), and persisted as one JSON
file (single broker; AlterClientQuotas / DescribeClientQuotas manage them).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from kafkars.config.store import atomic_write_json

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
PRODUCE, FETCH, REQUEST = PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE
QUOTA_KEYS = (PRODUCE, FETCH, REQUEST, "controller_mutation_rate")

# An entity: (user, client_id); None for "not part of the entity", "" for <default>.
Entity = tuple[str | None, str | None]
DEFAULT = ""


def precedence(user: str, client_id: str) -> list[Entity]:
    """The entities whose quota applies to a (user, client id), most specific first
    (Kafka's order: user+client, user+default client, user, default user+client, default
    user+default client, default user, client, default client)."""
    return [
        (user, client_id),
        (user, DEFAULT),
        (user, None),
        (DEFAULT, client_id),
        (DEFAULT, DEFAULT),
        (DEFAULT, None),
        (None, client_id),
        (None, DEFAULT),
    ]


class QuotaStore:
    """Quota configs by entity, persisted in `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._quotas: dict[Entity, dict[str, float]] = {}
        if path.exists():
            for row in json.loads(path.read_text())["quotas"]:
                self._quotas[(row["user"], row["client_id"])] = dict(row["values"])

    def _save(self) -> None:
        rows = [
            {"user": u, "client_id": c, "values": v}
            for (u, c), v in sorted(self._quotas.items(), key=lambda kv: str(kv[0]))
        ]
        atomic_write_json(self.path, {"version": 1, "quotas": rows})

    def alter(self, entity: Entity, set_: dict[str, float], remove: list[str]) -> None:
        with self._lock:
            values = self._quotas.setdefault(entity, {})
            values.update(set_)
            for key in remove:
                values.pop(key, None)
            if not values:
                del self._quotas[entity]
            self._save()

    def has_quotas(self) -> bool:
        """Whether any quota is set: checked per request, so without the lock (a dict's
        truth is read atomically) and without copying."""
        return bool(self._quotas)

    def entities(self) -> dict[Entity, dict[str, float]]:
        with self._lock:
            return {e: dict(v) for e, v in self._quotas.items()}

    def quota(self, user: str, client_id: str, key: str) -> float | None:
        """The quota that applies, or None for unlimited."""
        with self._lock:
            for entity in precedence(user, client_id):
                value = self._quotas.get(entity, {}).get(key)
                if value is not None:
                    return value
        return None


@dataclass
class _Window:
    start_ms: int
    value: float


class Rate:
    """A rate over `num` windows of `size_ms` (Kafka's Rate with SampledStat): the sum of
    the windows' values over the time they span, never less than `num - 1` windows so a
    burst at start-up is not divided by a tiny elapsed time."""

    def __init__(self, num: int, size_ms: int) -> None:
        self.num, self.size_ms = num, size_ms
        self.windows: deque[_Window] = deque()

    def record(self, value: float, now_ms: int) -> None:
        if not self.windows or now_ms - self.windows[-1].start_ms >= self.size_ms:
            self.windows.append(_Window(now_ms, 0.0))
        self.windows[-1].value += value
        while len(self.windows) > self.num:
            self.windows.popleft()

    def per_second(self, now_ms: int) -> float:
        oldest = now_ms - self.num * self.size_ms
        while self.windows and self.windows[0].start_ms < oldest:
            self.windows.popleft()
        if not self.windows:
            return 0.0
        elapsed = max(now_ms - self.windows[0].start_ms, (self.num - 1) * self.size_ms)
        return sum(w.value for w in self.windows) / max(elapsed, 1) * 1000


class ClientQuotaManager:
    """Records what clients use and says how long to throttle them."""

    def __init__(self, store: QuotaStore, *, window_num: int = 11, window_size_ms: int = 1000):
        self.store = store
        self.window_num, self.window_size_ms = window_num, window_size_ms
        self._lock = threading.Lock()
        self._rates: dict[tuple[str, str, str], Rate] = {}
        # Per (quota, user, client id): throttle time handed out, in ms (for metrics).
        self.throttle_ms: dict[tuple[str, str, str], int] = {}

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Records `value` (bytes, or request time in ms) and returns the throttle time in
        ms (0 within quota). Kafka's formula: how long the client must stay idle for its
        rate over the whole sample to come down to the quota."""
        quota = self.store.quota(user, client_id, key)
        if quota is None:
            return 0
        if key == REQUEST:
            # request_percentage: percent of one thread's time per window (ms per second).
            quota = quota / 100 * 1000
        with self._lock:
            rate = self._rates.setdefault(
                (key, user, client_id), Rate(self.window_num, self.window_size_ms)
            )
            rate.record(value, now_ms)
            observed = rate.per_second(now_ms)
        if observed <= quota or quota <= 0:
            return 0
        window_ms = self.window_num * self.window_size_ms
        throttle = min(int((observed - quota) / quota * window_ms), window_ms)
        with self._lock:
            entity = (key, user, client_id)
            self.throttle_ms[entity] = self.throttle_ms.get(entity, 0) + throttle
        return throttle

    def rates(self, now_ms: int) -> list[tuple[str, str, str, float]]:
        """(quota, user, client id, observed rate per second) of every client with a quota
        (bytes per second; request_percentage as milliseconds per second)."""
        with self._lock:
            return [
                (key, user, client, rate.per_second(now_ms))
                for (key, user, client), rate in self._rates.items()
            ]
