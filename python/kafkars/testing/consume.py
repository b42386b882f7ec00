"""Reading a topic back in tests, through librdkafka (an independent client)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition


def read_to_end(
    bootstrap_servers: str,
    topic: str,
    partitions: int,
    *,
    isolation_level: str = "read_committed",
    timeout_s: float = 30.0,
    strict: bool = False,
    config: dict[str, Any] | None = None,
) -> list[Message]:
    """The records of `topic`'s partitions 0..`partitions`-1, from the start to the end
    each has when reached (read_committed: its last stable offset, so only committed
    transactions' records). After `timeout_s`, what was read by then; `strict` raises
    TimeoutError instead, and KafkaException on any error but the end of a partition.
    `config` adds consumer settings."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation_level,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            **(config or {}),
        }
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[Message] = []
        eof: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(eof) < partitions:
            if time.monotonic() >= deadline:
                if strict:
                    raise TimeoutError(
                        f"{topic}: {len(eof)} of {partitions} partitions read to the end "
                        f"in {timeout_s:g} s ({len(out)} records)"
                    )
                break
            m = c.poll(0.5)
            if m is None:
                continue
            error, partition = m.error(), m.partition()
            if error is None:
                out.append(m)
                if partition is not None:
                    # Written after the end was seen: that end is not the end any more.
                    eof.discard(partition)
            elif error.code() == KafkaError._PARTITION_EOF and partition is not None:
                eof.add(partition)
            elif strict or error.fatal():
                raise KafkaException(error)
        return out
    finally:
        c.close()
