"""DescribeLogDirs and InitProducerId."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkars.server.errors import Errors

if TYPE_CHECKING:
    from kafkars.server.kafka_server import KafkaServer


def handle_describe_log_dirs(server: KafkaServer, request: Any) -> dict[str, Any]:
    wanted = request.body["topics"]
    selected = (
        None if wanted is None else {(t["topic"], p) for t in wanted for p in t["partitions"]}
    )
    results = []
    for log_dir in server.log_dirs:
        topics: dict[str, list[dict[str, Any]]] = {}
        for partition in server.replica_manager.partitions():
            # dir_parent is a Path; log_dirs are resolved strings.
            if str(Path(partition.log.dir_parent).resolve()) != log_dir:
                continue
            if selected is not None and (partition.topic, partition.partition) not in selected:
                continue
            topics.setdefault(partition.topic, []).append(
                {
                    "partition_index": partition.partition,
                    "partition_size": partition.log.size_in_bytes,
                    "offset_lag": 0,
                    "is_future_key": False,
                }
            )
        usage = shutil.disk_usage(log_dir)
        results.append(
            {
                "error_code": 0,
                "log_dir": log_dir,
                "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
                "total_bytes": usage.total,
                "usable_bytes": usage.free,
            }
        )
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}


def handle_init_producer_id(server: KafkaServer, request: Any) -> dict[str, Any]:
    body = request.body
    response = {"throttle_time_ms": 0, "producer_id": -1, "producer_epoch": -1}
    if body["transactional_id"] is not None:
        timeout = body["transaction_timeout_ms"]
        if timeout <= 0 or timeout > server.transaction_max_timeout_ms:
            return {**response, "error_code": int(Errors.INVALID_TRANSACTION_TIMEOUT)}
        # No transaction coordinator yet: FindCoordinator(transaction) is not advertised,
        # so a transactional producer cannot get this far; refuse clearly if one does.
        return {**response, "error_code": int(Errors.COORDINATOR_NOT_AVAILABLE)}
    producer_id = server.metadata.allocate_producer_id()
    return {**response, "error_code": 0, "producer_id": producer_id, "producer_epoch": 0}
