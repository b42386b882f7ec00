"""Partition reassignment (KIP-455) as the controller plans it: pure functions over
replica lists, so the steps can be checked without a cluster.

A reassignment from the original replicas (ORS) to the target replicas (TRS) runs in two
phases. First the assignment becomes RS = TRS + (ORS - TRS) with `adding` = TRS - ORS and
`removing` = ORS - TRS: the new replicas start following and catch up. When every target
replica is in the ISR, the assignment becomes TRS, the leader moves if it is not a target
replica, the removed replicas leave the ISR and delete their logs.
"""

from __future__ import annotations

from dataclasses import dataclass

# Error codes of AlterPartitionReassignments.
INVALID_REPLICA_ASSIGNMENT = 39
NO_REASSIGNMENT_IN_PROGRESS = 85


@dataclass(frozen=True)
class ReplicaAssignment:
    """One partition's assignment while it moves (Kafka's ReplicaAssignment)."""

    replicas: list[int]
    adding: list[int]
    removing: list[int]

    @property
    def target(self) -> list[int]:
        return [b for b in self.replicas if b not in self.removing]

    @property
    def original(self) -> list[int]:
        return [b for b in self.replicas if b not in self.adding]


def plan(current: ReplicaAssignment, target: list[int]) -> ReplicaAssignment:
    """The assignment of phase one. A reassignment of a partition that is already moving
    starts from that move's original replicas, as Kafka does."""
    original = current.original
    return ReplicaAssignment(
        replicas=target + [b for b in original if b not in target],
        adding=[b for b in target if b not in original],
        removing=[b for b in original if b not in target],
    )


def invalid_target(target: list[int], brokers: set[int]) -> str | None:
    """Why a target replica list cannot be used, or None (Kafka's checks)."""
    if not target:
        return "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return f"Duplicate replica ids in partition reassignment replica list: {target}"
    if any(b < 0 for b in target):
        return f"Invalid broker id in replica list: {target}"
    unknown = sorted(set(target) - brokers)
    if unknown:
        return f"The proposed assignment contains non-existent brokerIDs: {unknown}"
    return None


def complete(assignment: ReplicaAssignment, isr: list[int]) -> bool:
    """Phase two may start: every target replica has caught up."""
    return all(b in isr for b in assignment.target)


def leader_after(
    assignment: ReplicaAssignment, leader: int, isr: list[int], live: set[int]
) -> int | None:
    """The leader once the move completes: the current one if it stays a live target
    replica, else the first target replica that is live and in the ISR (Kafka's
    reassignment leader election); None if there is none."""
    target = assignment.target
    if leader in target and leader in live:
        return leader
    return next((b for b in target if b in live and b in isr), None)
