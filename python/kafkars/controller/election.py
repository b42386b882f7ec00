"""Leader election and replica placement rules (Kafka's PartitionLeaderElectionAlgorithms
and AdminUtils), as pure functions."""

from __future__ import annotations

import random


def offline_partition_leader(
    assignment: list[int], isr: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    """First live replica of the assignment that is in the ISR; with `unclean`, any live
    replica when none of the ISR lives. Returns (leader, new ISR) or None (offline)."""
    live_isr = [b for b in isr if b in live]
    leader = next((b for b in assignment if b in live_isr), None)
    if leader is not None:
        return leader, live_isr
    if unclean:
        leader = next((b for b in assignment if b in live), None)
        if leader is not None:
            return leader, [leader]
    return None


def controlled_shutdown_leader(
    assignment: list[int], isr: list[int], live: set[int], shutting_down: set[int]
) -> tuple[int, list[int]] | None:
    """A leader among the ISR that is live and not shutting down; the shutting-down
    brokers leave the ISR."""
    candidates = [b for b in isr if b in live and b not in shutting_down]
    leader = next((b for b in assignment if b in candidates), None)
    return (leader, candidates) if leader is not None else None


def preferred_replica_leader(
    assignment: list[int], isr: list[int], live: set[int]
) -> tuple[int, list[int]] | None:
    """The first replica of the assignment, if it is live and in the ISR."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0], isr
    return None


def assign_replicas(
    brokers: list[int],
    partitions: int,
    replication_factor: int,
    *,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's rack-unaware assignment: partition p's first replica is broker
    (start + p) of the sorted list, the others follow at a shift that grows each time the
    list wraps, so leaders and followers spread evenly."""
    if replication_factor > len(brokers):
        raise ValueError(
            f"The target replication factor of {replication_factor} cannot be reached because "
            f"only {len(brokers)} broker(s) are registered."
        )
    ordered = sorted(brokers)
    n = len(ordered)
    rng = rng or random.Random()
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(start_partition, start_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[(first + 1 + (shift + j) % (n - 1)) % n] if n > 1 else first)
        out[p] = replicas
    return out
