"""The coordinators' appends to their internal topics: acks=all (Kafka appends group and
transaction state with required acks -1, so a coordinator failover never loses what was
acknowledged), and the errors a client of the coordinator sees when one fails."""

from __future__ import annotations

from typing import Any

from kafkars.protocol import Errors, KafkaError
from kafkars.server.replica_manager import ReplicaManager

# What the append's error becomes for the coordinator's client (Kafka's mapping in
# GroupMetadataManager and TransactionStateManager): leadership lost means the
# coordinator moved; too few replicas or too slow means try the coordinator again later.
_AS_COORDINATOR_ERROR = {
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
}


def append_replicated(
    replica_manager: ReplicaManager, topic: str, partition: int, records: Any, timeout_s: float
) -> Any:
    """Appends as the partition's leader and waits for the ISR; raises the coordinator
    error a client understands if either fails."""
    try:
        return replica_manager.append_replicated(topic, partition, records, timeout_s)
    except KafkaError as e:
        mapped = _AS_COORDINATOR_ERROR.get(e.code)
        if mapped is None:
            raise
        raise KafkaError(mapped, e.message) from None
