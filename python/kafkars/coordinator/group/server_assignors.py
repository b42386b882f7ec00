"""KIP-848's server-side assignors, `uniform` (the default) and `range`.

Both map {member id: subscribed topic names} and {topic: partition count} to
{member id: set of (topic, partition)}; `previous` is the last target assignment, which
the uniform assignor keeps as far as balance allows.
"""

from __future__ import annotations

from kafkars import assignors

TopicPartition = tuple[str, int]


def range_assign(
    subscriptions: dict[str, set[str]],
    partitions: dict[str, int],
    previous: dict[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """Kafka's RangeAssignor, the same as the client-side one in `kafkars.assignors`:
    per topic, contiguous ranges over its subscribers in member-id order."""
    ranges = assignors.range_assign(
        {m: sorted(topics) for m, topics in subscriptions.items()}, partitions
    )
    return {m: set(tps) for m, tps in ranges.items()}


def uniform_assign(
    subscriptions: dict[str, set[str]],
    partitions: dict[str, int],
    previous: dict[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """Kafka's UniformAssignor in spirit: every subscribed partition to one subscriber,
    counts as even as the subscriptions allow, and partitions stay where they were when
    that keeps the balance (so a rebalance moves as little as it can)."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    if not out:
        return out
    all_parts = [(t, p) for t, n in sorted(partitions.items()) for p in range(n)]
    eligible = {tp: [m for m in sorted(out) if tp[0] in subscriptions[m]] for tp in all_parts}
    # Each member's fair share of what it can take (an upper bound for keeping).
    quota = {
        m: -(-sum(1 for tp in all_parts if m in eligible[tp]) // max(1, len(out))) for m in out
    }
    homogeneous = len({frozenset(s) for s in subscriptions.values()}) == 1
    if homogeneous:
        total = sum(1 for tp in all_parts if eligible[tp])
        quota = dict.fromkeys(out, -(-total // len(out)))
    unassigned = []
    for tp in all_parts:
        owner = next((m for m, held in previous.items() if tp in held), None)
        if owner in out and owner in eligible[tp] and len(out[owner]) < quota[owner]:
            out[owner].add(tp)
        elif eligible[tp]:
            unassigned.append(tp)
    # The most constrained partitions first, so members with narrow subscriptions are
    # not left short once the others have filled up on what only they could take.
    for tp in sorted(unassigned, key=lambda tp: (len(eligible[tp]), tp)):
        best = min(eligible[tp], key=lambda m: (len(out[m]), m))
        out[best].add(tp)
    if homogeneous:
        _even_out(out)
    return out


def _even_out(out: dict[str, set[TopicPartition]]) -> None:
    """Moves partitions from the fullest to the emptiest member until counts differ by at
    most one (same subscriptions, so any partition may move)."""
    while True:
        most = max(out, key=lambda m: (len(out[m]), m))
        least = min(out, key=lambda m: (len(out[m]), m))
        if len(out[most]) - len(out[least]) <= 1:
            return
        tp = max(out[most])
        out[most].discard(tp)
        out[least].add(tp)
