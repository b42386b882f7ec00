"""DelayedFetch: a fetch that waits for `min_bytes` or `max_wait_ms` in the fetch purgatory.

The purgatory and its timing wheel are Rust (`_core.DelayedOperationPurgatory`); the
operation's checks are these Python callbacks. An append to a watched partition calls
`check_and_complete`, so a long-polling consumer is answered as soon as data arrives.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafkars import _core
from kafkars.server.apis.fetch import READ_COMMITTED, FetchPlan, fetch_response, read_plan
from kafkars.server.error_responses import respond_or_error
from kafkars.server.errors import KafkaError

if TYPE_CHECKING:
    from kafkars.server.metrics import BrokerTopicMetrics
    from kafkars.server.replica_manager import ReplicaManager

log = logging.getLogger("kafkars.server.DelayedFetch")


def partition_key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class DelayedFetch:
    """One waiting fetch. `try_complete` runs without I/O: it compares each partition's
    high watermark position with where the fetch started."""

    def __init__(
        self,
        purgatory: FetchPurgatory,
        request: Any,
        plan: FetchPlan,
        first_read: list[dict[str, Any]],
    ) -> None:
        self.purgatory = purgatory
        self.request = request
        self.plan = plan
        self.delay_ms = plan.max_wait_ms
        # Where each partition's first read started: the available bytes are counted from
        # there against the log end, from offset metadata alone.
        self._start: dict[tuple[str, int], tuple[int, Any]] = {}
        read = {
            (t["topic"], p["partition_index"]): p["records"]
            for t in first_read
            for p in t["partitions"]
        }
        for name, _, partitions in plan.topics:
            for p in partitions:
                if name:
                    records = read.get((name, p["partition"]))
                    metadata = records.fetch_offset_metadata if records is not None else None
                    self._start[(name, p["partition"])] = (p["fetch_offset"], metadata)

    def try_complete(self) -> bool:
        available = 0
        for (topic, index), (offset, metadata) in self._start.items():
            try:
                log = self.purgatory.replica_manager.get_partition(topic, index).log
            except KafkaError:
                return True  # the partition went away: answer with its error now
            if self.plan.isolation_level == READ_COMMITTED and log.last_stable_offset <= offset:
                continue  # only an open transaction's records: nothing to read yet
            available += log.bytes_available(metadata, offset)
            if available >= self.plan.min_bytes:
                return True
        return False

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        def build() -> dict[str, Any]:
            responses, _, _ = read_plan(self.purgatory.replica_manager, self.plan)
            self.purgatory.topic_metrics.record_fetch(responses)
            return fetch_response(responses)

        # A read that fails answers with the Fetch error response, as the first one would.
        respond_or_error(self.request, build)


class FetchPurgatory:
    """Watches delayed fetches by partition."""

    def __init__(self, replica_manager: ReplicaManager, topic_metrics: BrokerTopicMetrics) -> None:
        self.replica_manager = replica_manager
        self.topic_metrics = topic_metrics
        self._purgatory = _core.DelayedOperationPurgatory("Fetch")

    def watch(self, request: Any, plan: FetchPlan, first_read: list[dict[str, Any]]) -> None:
        op = DelayedFetch(self, request, plan, first_read)
        keys = [partition_key(t, p) for t, p in plan.partition_keys]
        self._purgatory.try_complete_else_watch(op, keys)

    def on_append(self, tp: tuple[str, int]) -> None:
        self._purgatory.check_and_complete(partition_key(*tp))

    @property
    def delayed(self) -> int:
        return int(self._purgatory.delayed)

    def shutdown(self) -> None:
        """Answers every waiting fetch now (with what is there) and stops the timer."""
        self._purgatory.shutdown()
