"""How many more partitions this broker's file descriptors allow.

Kafka has no such check: a JVM broker past its descriptor limit fails log dirs or dies.
kafkars refuses instead. Each partition holds one descriptor per segment file in use (its
indexes are memory-mapped and hold none); a new partition needs one for its active
segment. A CreateTopics or CreatePartitions that would leave fewer than `RESERVE`
descriptors (or an eighth of the limit, if more) free below the RLIMIT_NOFILE soft limit,
counting those open now, is refused with POLICY_VIOLATION and a message naming the limit,
so connections, segment rolls and checkpoints keep the room they need."""

from __future__ import annotations

import os
import resource

from kafkars.protocol import Errors, KafkaError

# Descriptors a new partition opens: its active segment's .log file.
FDS_PER_PARTITION = 1
# Kept free for connections, rolls, checkpoints and the runtime's own needs.
RESERVE = 64

_FD_DIR = "/proc/self/fd"


def open_descriptors() -> int | None:
    """Descriptors open in this process now, where the platform says (Linux)."""
    try:
        return len(os.listdir(_FD_DIR))
    except OSError:
        return None


def check_new_partitions(count: int) -> None:
    """Raises POLICY_VIOLATION when `count` more partitions here would take the broker
    past what its descriptor limit allows."""
    if count <= 0:
        return
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = open_descriptors()
    if soft == resource.RLIM_INFINITY or in_use is None:
        return
    reserve = max(RESERVE, soft // 8)
    needed = count * FDS_PER_PARTITION
    free = soft - reserve - in_use
    if needed > free:
        raise KafkaError(
            Errors.POLICY_VIOLATION,
            f"{count} new partition(s) would take the broker past its limit of open files: "
            f"they need about {needed} file descriptors and {max(free, 0)} are free ({in_use} "
            f"open, RLIMIT_NOFILE soft limit {soft}, {reserve} kept for connections and "
            "housekeeping). Raise the limit (ulimit -n) or create fewer partitions.",
        )
