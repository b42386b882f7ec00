"""Where a new partition's replicas go (Kafka's AdminUtils.assignReplicasToBrokers), as a
pure function of the brokers and their racks.

Leaders go round-robin over the brokers from a random start; followers follow the leader
at a shift that grows each time the round wraps, so leaders and followers both spread
evenly. When the brokers have racks, the round goes over a list that alternates racks
(rack by rack, each rack's brokers in id order), and a follower skips brokers on racks
that already hold a replica of the partition until every rack holds one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from kafkars.protocol import Errors, KafkaError


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    start_partition: int = 0,
    fixed_start_index: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Replicas of partitions `start_partition` onwards, the first of each its preferred
    leader. `brokers` maps each broker id to its rack (None without `broker.rack`).
    `fixed_start_index` (>= 0) replaces the random start and shift, as adding partitions
    to a topic does to continue where partition 0 began.

    Either every broker has a rack or none has: with some racks missing, Kafka refuses
    (ZooKeeper mode, RackAwareMode.Enforced) rather than guess.
    """
    if partitions <= 0:
        raise KafkaError(Errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(
            Errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    if replication_factor > len(brokers):
        raise KafkaError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"The target replication factor of {replication_factor} cannot be reached because "
            f"only {len(brokers)} broker(s) are registered.",
        )
    racks = {b: r for b, r in brokers.items() if r is not None}
    if not racks:
        ordered = sorted(brokers)
        rack_of = {b: str(b) for b in ordered}  # one broker per "rack": no rack rule
        rack_count = len(ordered)
    elif len(racks) < len(brokers):
        # Kafka's AdminOperationException, which reaches the client as UNKNOWN_SERVER_ERROR.
        missing = sorted(set(brokers) - set(racks))
        raise KafkaError(
            Errors.UNKNOWN_SERVER_ERROR,
            f"Rack-aware replica assignment needs every broker's broker.rack; "
            f"broker(s) {missing} have none.",
        )
    else:
        ordered = rack_alternated_brokers(racks)
        rack_of = racks
        rack_count = len(set(racks.values()))
    n = len(ordered)
    rng = rng or random.Random()
    start = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    # Without racks, every broker is its own rack and the skip rule never skips, so this is
    # Kafka's rack-unaware assignment (whose shift is not scaled by the rack count).
    shift_scale = rack_count if racks else 1
    out: dict[int, list[int]] = {}
    for p in range(start_partition, start_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ordered[first]]
        racks_used = {rack_of[ordered[first]]}
        k = 0
        while len(replicas) < replication_factor:
            broker = ordered[_follower_index(first, shift * shift_scale, k, n)]
            k += 1
            rack = rack_of[broker]
            # Skip a broker whose rack already has a replica while some rack has none, and
            # a broker already holding one while some broker holds none.
            if rack in racks_used and len(racks_used) < rack_count:
                continue
            if broker in replicas and len(replicas) < n:
                continue
            replicas.append(broker)
            racks_used.add(rack)
        out[p] = replicas
    return out


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """The brokers taking one from each rack in turn (racks by name, a rack's brokers by
    id): racks a: 1, 2 and b: 3 give 1, 3, 2."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[r] for r in sorted(by_rack)]
    depth = max(len(c) for c in columns)
    return [c[i] for i in range(depth) for c in columns if i < len(c)]


def _follower_index(first: int, shift: int, k: int, n: int) -> int:
    """The k-th candidate follower after the leader at `first`: 1 + (shift + k) mod (n-1)
    places on, so never the leader itself."""
    return (first + 1 + (shift + k) % (n - 1)) % n if n > 1 else first
