"""The version ranges this broker advertises for each API key."""

from __future__ import annotations

from kafkars.protocol import ApiKey

# Apache Kafka 4.0's advertised ranges (min, max). The broker advertises, for each API it
# has a handler for, this range clipped to what the wire codec can encode. EndTxn v5 and
# TxnOffsetCommit v5 are transaction version 2 (KIP-890 part 2: an epoch bump per
# transaction, offsets added implicitly), which kafkars does not implement: v4 is their
# top, as a Kafka 4 client without transaction.version 2 uses.
KAFKA_4_0_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 12),
    ApiKey.FETCH: (4, 17),
    ApiKey.LIST_OFFSETS: (1, 10),
    ApiKey.METADATA: (0, 13),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (2, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 4),
    ApiKey.WRITE_TXN_MARKERS: (1, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
}


# The inter-broker APIs of a ZooKeeper cluster (Kafka 4.0 dropped them with ZooKeeper):
# the versions our controller sends, advertised only in cluster mode.
ZK_CLUSTER_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.LEADER_AND_ISR: (5, 5),
    ApiKey.STOP_REPLICA: (3, 3),
    ApiKey.UPDATE_METADATA: (7, 7),
    ApiKey.CONTROLLED_SHUTDOWN: (3, 3),
    # Asked of the controller by Apache Kafka's brokers (mixed clusters; 3.9's versions).
    ApiKey.ALTER_PARTITION: (0, 3),
    ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
}

# Kafka 4 serves Produce from v3 but lists it from v0 in ApiVersions (its
# PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION, KAFKA-18659): older librdkafka (2.0.2, the
# harness's rdkafka_performance) only compresses with lz4 for a broker that lists Produce
# v0, and sends plain batches to any other. Requests below v3 are still refused (the
# connection is closed).
PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION = 0


def api_versions_response_ranges(
    advertised: dict[ApiKey, tuple[int, int]],
) -> dict[ApiKey, tuple[int, int]]:
    """The ranges an ApiVersions response lists: the served ones, Produce's from v0."""
    out = dict(advertised)
    if ApiKey.PRODUCE in out:
        out[ApiKey.PRODUCE] = (PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION, out[ApiKey.PRODUCE][1])
    return out


def advertised_versions(
    handled: set[ApiKey], codec_ranges: dict[int, tuple[int, int]]
) -> dict[ApiKey, tuple[int, int]]:
    """The ranges to advertise: Kafka 4.0's, clipped to the codec, for handled APIs only."""
    out: dict[ApiKey, tuple[int, int]] = {}
    for key in sorted(handled):
        kafka = KAFKA_4_0_VERSIONS.get(key) or ZK_CLUSTER_VERSIONS.get(key)
        codec = codec_ranges.get(int(key))
        if kafka is None or codec is None:
            continue
        low, high = max(kafka[0], codec[0]), min(kafka[1], codec[1])
        if low <= high:
            out[key] = (low, high)
    return out
