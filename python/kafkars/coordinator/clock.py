"""Kafka's `Time` for the coordinators: the system clock in the broker, `MockTime` in
tests, so session, rebalance and retention deadlines can be tested without sleeping.

A coordinator takes its wall clock (`milliseconds`), its monotonic clock (`monotonic`)
and its timers (`purgatory`) from one `Time`. `SystemTime` hands out the Rust timing-wheel
purgatory; `MockTime` hands out `MockPurgatory`s whose operations expire when the test
advances the clock with `sleep` (Kafka's MockTime with its MockTimer).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Any, Protocol


class Purgatory(Protocol):
    """What a coordinator needs of a `DelayedOperationPurgatory`."""

    def try_complete_else_watch(self, op: Any, keys: list[str]) -> bool: ...
    def check_and_complete(self, key: str) -> int: ...
    def shutdown(self) -> None: ...


class Time:
    """The system clock (Kafka's `Time.SYSTEM`)."""

    def milliseconds(self) -> int:
        """Wall-clock time in milliseconds since the epoch."""
        return int(time.time() * 1000)

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for durations and deadlines)."""
        return time.monotonic()

    def purgatory(self, name: str) -> Purgatory:
        """A purgatory whose timeouts run on this clock."""
        from kafkars import _core

        return _core.DelayedOperationPurgatory(name)  # type: ignore[no-any-return]


SYSTEM_TIME = Time()


class MockTime(Time):
    """A clock that moves only when told to (`sleep`), firing the timeouts of its
    purgatories that are due, in deadline order, on the caller's thread."""

    def __init__(self, now_ms: int = 1_700_000_000_000, monotonic_s: float = 1000.0) -> None:
        self._now_ms = now_ms
        self._monotonic_ms = int(monotonic_s * 1000)
        self._purgatories: list[MockPurgatory] = []
        self._lock = threading.RLock()

    def milliseconds(self) -> int:
        return self._now_ms

    def monotonic(self) -> float:
        return self._monotonic_ms / 1000

    def purgatory(self, name: str) -> MockPurgatory:
        p = MockPurgatory(self, name)
        self._purgatories.append(p)
        return p

    def sleep(self, ms: int) -> None:
        """Advances both clocks by `ms`, expiring operations as their deadlines pass."""
        with self._lock:
            target = self._monotonic_ms + ms
            while True:
                due = [(p.next_deadline(), p) for p in self._purgatories]
                ready = [(d, p) for d, p in due if d is not None and d <= target]
                if not ready:
                    break
                deadline, purgatory = min(ready, key=lambda x: x[0])
                self._advance_to(max(deadline, self._monotonic_ms))
                purgatory.expire_due()
            self._advance_to(target)

    def _advance_to(self, monotonic_ms: int) -> None:
        self._now_ms += monotonic_ms - self._monotonic_ms
        self._monotonic_ms = monotonic_ms


class MockPurgatory:
    """`DelayedOperationPurgatory` on a MockTime: the same contract (an operation completes
    once, through `try_complete`, a `check_and_complete` of a key it watches, its
    expiration, or shutdown), with expirations driven by `MockTime.sleep`."""

    def __init__(self, clock: MockTime, name: str) -> None:
        self.clock = clock
        self.name = name
        self._lock = threading.RLock()
        self._timeouts: list[tuple[int, int, Any]] = []  # (deadline ms, seq, op)
        self._watchers: dict[str, list[Any]] = {}
        self._done: set[Any] = set()  # completed operations (by identity)
        self._seq = itertools.count()

    def _complete(self, op: Any, *, expired: bool = False) -> bool:
        with self._lock:
            if op in self._done:
                return False
            self._done.add(op)
        if expired:
            op.on_expiration()
        op.on_complete()
        return True

    def try_complete_else_watch(self, op: Any, keys: list[str]) -> bool:
        if op.try_complete():
            return self._complete(op)
        delay = max(0, int(op.delay_ms))
        with self._lock:
            for key in keys:
                self._watchers.setdefault(key, []).append(op)
            if delay > 0:
                deadline = self.clock._monotonic_ms + delay
                heapq.heappush(self._timeouts, (deadline, next(self._seq), op))
        if delay == 0:
            self._complete(op, expired=True)  # already due (Kafka's MockTimer runs it now)
        return False

    def check_and_complete(self, key: str) -> int:
        with self._lock:
            ops = [op for op in self._watchers.get(key, []) if op not in self._done]
            self._watchers[key] = ops
        return sum(1 for op in ops if op.try_complete() and self._complete(op))

    def next_deadline(self) -> int | None:
        with self._lock:
            while self._timeouts and self._timeouts[0][2] in self._done:
                heapq.heappop(self._timeouts)
            return self._timeouts[0][0] if self._timeouts else None

    def expire_due(self) -> None:
        """Completes, as expired, every operation whose deadline has passed."""
        while True:
            with self._lock:
                if not self._timeouts or self._timeouts[0][0] > self.clock._monotonic_ms:
                    return
                _, _, op = heapq.heappop(self._timeouts)
            self._complete(op, expired=True)

    @property
    def delayed(self) -> int:
        with self._lock:
            return sum(1 for _, _, op in self._timeouts if op not in self._done)

    def shutdown(self) -> None:
        """Completes every waiting operation now, as the Rust purgatory does."""
        with self._lock:
            pending = [op for _, _, op in self._timeouts]
            self._timeouts.clear()
        for op in pending:
            self._complete(op)
