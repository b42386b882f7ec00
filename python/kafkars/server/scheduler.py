"""Kafka's `KafkaScheduler`: named one-off and periodic background tasks on a pool of
`background.threads` daemon threads ("kafka-scheduler-N").

Idle threads sleep on a condition until the earliest task is due, so an idle broker
spends no CPU here. A periodic task is rescheduled only after its run finishes, so a slow
run never overlaps the next one (Kafka's fixed-rate executor gives the same guarantee).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("kafkars.server.KafkaScheduler")


@dataclass(order=True)
class _Task:
    due: float
    seq: int
    name: str = field(compare=False)
    fn: Callable[[], object] = field(compare=False)
    period_s: float | None = field(compare=False, default=None)
    cancelled: bool = field(compare=False, default=False)


class ScheduledTask:
    """Handle of a scheduled task; `cancel()` stops future runs."""

    def __init__(self, task: _Task) -> None:
        self._task = task

    @property
    def name(self) -> str:
        return self._task.name

    def cancel(self) -> None:
        self._task.cancelled = True


class KafkaScheduler:
    """Runs tasks after a delay and, with a period, repeatedly until `shutdown()`."""

    def __init__(self, threads: int, thread_name_prefix: str = "kafka-scheduler-") -> None:
        self.threads = max(1, threads)
        self.thread_name_prefix = thread_name_prefix
        self._heap: list[_Task] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._running = False
        self.runs: dict[str, int] = {}

    def startup(self) -> None:
        with self._cond:
            if self._running:
                raise RuntimeError("the scheduler is already running")
            self._running = True
        for i in range(self.threads):
            t = threading.Thread(
                target=self._work, name=f"{self.thread_name_prefix}{i}", daemon=True
            )
            t.start()
            self._workers.append(t)

    @property
    def is_started(self) -> bool:
        return self._running

    def schedule(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Runs `fn` after `delay_ms`, then every `period_ms` if it is positive."""
        period = period_ms / 1000 if period_ms > 0 else None
        task = _Task(time.monotonic() + max(0, delay_ms) / 1000, next(self._seq), name, fn, period)
        with self._cond:
            if not self._running:
                raise RuntimeError(f"cannot schedule {name}: the scheduler is not running")
            heapq.heappush(self._heap, task)
            self._cond.notify()
        log.debug(
            "Scheduling task %s with initial delay %d ms and period %d ms",
            name,
            delay_ms,
            period_ms,
        )
        return ScheduledTask(task)

    def schedule_once(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0
    ) -> ScheduledTask:
        return self.schedule(name, fn, delay_ms, -1)

    def _next(self) -> _Task | None:
        with self._cond:
            while self._running:
                while self._heap and self._heap[0].cancelled:
                    heapq.heappop(self._heap)
                if self._heap:
                    wait = self._heap[0].due - time.monotonic()
                    if wait <= 0:
                        return heapq.heappop(self._heap)
                    self._cond.wait(wait)
                else:
                    self._cond.wait()
            return None

    def _work(self) -> None:
        while (task := self._next()) is not None:
            started = time.monotonic()
            try:
                task.fn()
            except Exception:
                log.exception("Uncaught exception in scheduled task '%s'", task.name)
            self.runs[task.name] = self.runs.get(task.name, 0) + 1
            if task.period_s is not None and not task.cancelled:
                # Fixed rate from the planned start, but never catching up with a burst.
                task.due = max(task.due + task.period_s, started)
                task.seq = next(self._seq)
                with self._cond:
                    if self._running:
                        heapq.heappush(self._heap, task)
                        self._cond.notify()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Drops pending tasks and waits for running ones to finish. Idempotent."""
        with self._cond:
            if not self._running:
                return
            self._running = False
            self._heap.clear()
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._workers:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))
        self._workers.clear()
