"""The broker's log dirs: DescribeLogDirs and AlterReplicaLogDirs (JBOD)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors, KafkaError

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

log = logging.getLogger(__name__)

# A future dir is `<topic>-<partition>.<32 hex digits>-future`; a file name holds 255 bytes.
_FUTURE_DIR_EXTRA = len(".") + 32 + len("-future")
_MAX_FILE_NAME = 255


def _resolved(path: str) -> str:
    return str(Path(path).resolve())


def handle_describe_log_dirs(apis: KafkaApis, request: Any) -> dict[str, Any]:
    wanted = request.body["topics"]
    selected = (
        None if wanted is None else {(t["topic"], p) for t in wanted for p in t["partitions"]}
    )
    log_manager = apis.replica_manager.log_manager
    futures = log_manager.future_logs()
    # Dirs an I/O error took offline (Kafka's LogDirFailureChannel) answer only their error.
    offline = {_resolved(d) for d in log_manager.offline_log_dirs()}
    results = []
    for log_dir in apis.config.log_dirs:
        try:
            if _resolved(log_dir) in offline:
                raise OSError("the log dir was taken offline after an I/O error")
            usage = shutil.disk_usage(log_dir)
        except OSError as e:
            # The dir went away, cannot be read or failed: Kafka reports an offline dir so.
            log.warning("log dir %s is offline: %s", log_dir, e)
            results.append(
                {
                    "error_code": int(Errors.KAFKA_STORAGE_ERROR),
                    "log_dir": log_dir,
                    "topics": [],
                    "total_bytes": -1,
                    "usable_bytes": -1,
                }
            )
            continue
        topics: dict[str, list[dict[str, Any]]] = {}
        for partition in apis.replica_manager.partitions():
            # dir_parent is a Path; log_dirs are resolved strings.
            parent = partition.log.dir_parent
            if parent is None or str(Path(parent).resolve()) != log_dir:
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
        # A replica moving here: its future log, and how far it is behind the current one.
        for topic, index, target, size, lag in futures:
            if _resolved(target) != log_dir:
                continue
            if selected is not None and (topic, index) not in selected:
                continue
            topics.setdefault(topic, []).append(
                {
                    "partition_index": index,
                    "partition_size": size,
                    "offset_lag": lag,
                    "is_future_key": True,
                }
            )
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


def handle_alter_replica_log_dirs(apis: KafkaApis, request: Any) -> dict[str, Any]:
    """Starts moving each listed replica to the given dir of this broker; the moves run
    in the background and the answer comes once they are started, as in Kafka."""
    results: dict[str, list[dict[str, Any]]] = {}
    for entry in request.body["dirs"]:
        for topic in entry["topics"]:
            for index in topic["partitions"]:
                code = alter_replica_log_dir(apis, topic["name"], index, entry["path"])
                results.setdefault(topic["name"], []).append(
                    {"partition_index": index, "error_code": int(code)}
                )
    return {
        "throttle_time_ms": 0,
        "results": [{"topic_name": n, "partitions": ps} for n, ps in results.items()],
    }


def alter_replica_log_dir(apis: KafkaApis, topic: str, partition: int, path: str) -> Errors:
    """One replica's move (Kafka's ReplicaManager.alterReplicaLogDirs choices):
    INVALID_TOPIC_EXCEPTION when the future dir name would be too long,
    LOG_DIR_NOT_FOUND for a path outside log.dirs, REPLICA_NOT_AVAILABLE for a partition
    not here (its dir is remembered for when it comes), KAFKA_STORAGE_ERROR for an
    offline one."""
    if len(f"{topic}-{partition}".encode()) + _FUTURE_DIR_EXTRA > _MAX_FILE_NAME:
        return Errors.INVALID_TOPIC_EXCEPTION
    try:
        apis.replica_manager.log_manager.alter_log_dir(topic, partition, path)
    except KafkaError as e:
        log.warning("Unable to alter log dirs for %s-%s: %s", topic, partition, e)
        return e.code
    return Errors.NONE
