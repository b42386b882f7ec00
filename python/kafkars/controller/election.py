"""Leader election rules (Kafka's PartitionLeaderElectionAlgorithms), as pure functions."""

from __future__ import annotations


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
