"""Producer ids handed out from persisted blocks (Kafka's ProducerIdManager).

A block of `block_size` ids is reserved durably (its end is written before any id in it
is used); ids are then handed out from memory. After a restart the next block starts
past every block reserved before, so an id is never handed out twice, and only the
unused rest of the last block is skipped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdManager:
    """`reserve(size)` persists a block and returns its first id."""

    def __init__(
        self, reserve: Callable[[int], int], block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> None:
        self._reserve = reserve
        self._block_size = block_size
        self._next = 0
        self._end = 0  # exclusive
        self._lock = threading.Lock()

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next >= self._end:
                self._next = self._reserve(self._block_size)
                self._end = self._next + self._block_size
            pid = self._next
            self._next += 1
            return pid
