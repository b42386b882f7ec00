"""DelayedProduce: an acks=-1 produce waits in the produce purgatory until every
partition's high watermark reaches its appended offset (the in-sync replicas have the
data) or `timeout_ms` passes, when the partitions still short get REQUEST_TIMED_OUT.

On one broker the high watermark follows the append, so the operation completes inside
`try_complete_else_watch`; followers will complete it through `on_high_watermark`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafkars import _core
from kafkars.server.delayed_fetch import partition_key
from kafkars.server.error_responses import respond_or_error
from kafkars.server.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.replica_manager import ReplicaManager

log = logging.getLogger("kafkars.server.DelayedProduce")


class DelayedProduce:
    """One acks=-1 produce. `pending` maps (topic, partition) to the offset the high
    watermark must reach (last appended offset + 1) and its slot in the response."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        request: Any,
        response: dict[str, Any],
        pending: dict[tuple[str, int], tuple[int, dict[str, Any]]],
        timeout_ms: int,
    ) -> None:
        self.replica_manager = replica_manager
        self.request = request
        self.response = response
        self.pending = dict(pending)
        self.delay_ms = max(0, timeout_ms)

    def try_complete(self) -> bool:
        for tp, (required, result) in list(self.pending.items()):
            try:
                hw = self.replica_manager.get_partition(*tp).log.high_watermark
            except KafkaError as e:
                result["error_code"] = int(e.code)
                hw = required
            if hw >= required:
                del self.pending[tp]
        return not self.pending

    def on_expiration(self) -> None:
        for _, result in self.pending.values():
            result["error_code"] = int(Errors.REQUEST_TIMED_OUT)

    def on_complete(self) -> None:
        respond_or_error(self.request, lambda: self.response)


class ProducePurgatory:
    """Watches acks=-1 produces by partition."""

    def __init__(self) -> None:
        self._purgatory = _core.DelayedOperationPurgatory("Produce")

    def watch(self, op: DelayedProduce) -> None:
        keys = [partition_key(t, p) for t, p in op.pending]
        self._purgatory.try_complete_else_watch(op, keys)

    def on_high_watermark(self, tp: tuple[str, int]) -> None:
        """A partition's high watermark moved (after an append on one broker)."""
        self._purgatory.check_and_complete(partition_key(*tp))

    @property
    def delayed(self) -> int:
        return int(self._purgatory.delayed)

    def shutdown(self) -> None:
        self._purgatory.shutdown()
