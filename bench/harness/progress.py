"""A one-line progress bar on stderr: steps done of the plan, the step running and its
seconds so far. Notes print above it; without a terminal each step gets a plain line."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType


class Progress:
    def __init__(self, total: int, width: int = 24) -> None:
        self.total = total
        self.width = width
        self.done = 0
        self.label = ""
        self.began = time.monotonic()
        self.step_began = self.began
        self.tty = sys.stderr.isatty()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # Redraws every half second so a long step shows it is alive.
        self._ticker = threading.Thread(target=self._tick, daemon=True, name="progress")

    def __enter__(self) -> Progress:
        if self.tty:
            self._ticker.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        with self._lock:
            if self.tty:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        step_s = time.monotonic() - self.step_began
        total_s = time.monotonic() - self.began
        line = (
            f"[{bar}] {self.done}/{self.total} {self.label} "
            f"({step_s:.0f} s; {total_s / 60:.1f} min in all)"
        )
        sys.stderr.write("\r\x1b[K" + line[:160])
        sys.stderr.flush()

    def step(self, label: str) -> None:
        """Begin the next step of the plan."""
        with self._lock:
            self.label = label
            self.step_began = time.monotonic()
            if self.tty:
                self._draw()
            else:
                print(f"[{self.done + 1}/{self.total}] {label}", file=sys.stderr, flush=True)

    def finish_step(self) -> None:
        with self._lock:
            self.done += 1
            if self.tty:
                self._draw()

    def note(self, text: str) -> None:
        """A line that stays (a skipped scenario, a limitation) above the bar."""
        with self._lock:
            if self.tty:
                sys.stderr.write("\r\x1b[K")
            print(text, file=sys.stderr, flush=True)
            if self.tty:
                self._draw()
