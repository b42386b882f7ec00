"""Kafka's `ControllerEventManager`: every piece of controller work is an event on one
queue, processed by one thread, so the controller's state has a single writer. ZooKeeper
watches and request handlers only put events."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("kafkars.controller.ControllerEventManager")


class ControllerEventManager:
    def __init__(self, process: Callable[[Any], None]) -> None:
        self._process = process
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(
            target=self._run, name="controller-event-thread", daemon=True
        )
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def put(self, event: Any) -> None:
        if not self._closed:
            self._queue.put(event)

    def close(self) -> None:
        self._closed = True
        self._queue.put(None)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            try:
                self._process(event)
            except Exception:
                # One failed event must not stop the controller (Kafka logs and goes on).
                log.exception("Error processing controller event %s", type(event).__name__)
