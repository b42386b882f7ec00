"""DescribeLogDirs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis


def handle_describe_log_dirs(apis: KafkaApis, request: Any) -> dict[str, Any]:
    wanted = request.body["topics"]
    selected = (
        None if wanted is None else {(t["topic"], p) for t in wanted for p in t["partitions"]}
    )
    results = []
    for log_dir in apis.config.log_dirs:
        topics: dict[str, list[dict[str, Any]]] = {}
        for partition in apis.replica_manager.partitions():
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
