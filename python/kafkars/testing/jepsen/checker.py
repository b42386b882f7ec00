"""The checker over a JSON-lines history (see `kafkars.testing.jepsen.workload` for its format).

`check(ops)` returns a verdict: `valid` and, for each property, what broke it (empty
lists when nothing did):

- lost: an acknowledged record (an idempotent send ok, or a record of a transaction whose
  commit was acknowledged) missing from the final read;
- moved: an acknowledged record found in the final log at another offset than its
  acknowledgement gave (the acknowledged copy was replaced);
- duplicated: a record found at more than one offset in the final read;
- conflicting_acks: two different records acknowledged at one partition and offset (two
  leaders accepted acks=all writes there; at most one can survive);
- diverged_reads: a read_committed reader saw at an offset a record the final log does not
  have there (it read something that did not survive);
- epoch_regressions: leader epochs going down as offsets go up in the final log (an old
  leader's write after a new leader's);
- offsets_backwards: the group's committed offset going down: a commit acknowledged lower
  than one acknowledged before, or the offsets read after the run (f=committed, final)
  lower than the highest acknowledged commit (reads during the run that answer less are
  counted as `stale_offset_fetches`, which do not fail the history);
- aborted_visible: a record of an aborted transaction seen by a read_committed read;
- partial_txns: a committed transaction missing some of its records in the final
  read_committed read, or a transaction of unknown outcome there only in part.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PROPERTIES = (
    "lost",
    "moved",
    "duplicated",
    "conflicting_acks",
    "diverged_reads",
    "epoch_regressions",
    "offsets_backwards",
    "aborted_visible",
    "partial_txns",
)
EXAMPLES = 10  # findings listed per property; the counts are complete


def load(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def _final(ops: list[dict[str, Any]], isolation: str) -> dict[str, Any] | None:
    reads = [o for o in ops if o["f"] == "final-read" and o.get("isolation") == isolation]
    return reads[-1] if reads else None


def check(ops: Iterable[dict[str, Any]]) -> dict[str, Any]:
    ops = sorted(ops, key=lambda o: o["time"])
    found: dict[str, list[Any]] = {p: [] for p in PROPERTIES}
    notes: list[str] = []

    # What was acknowledged: (value, partition, offset); offset -1 when not reported.
    acked_sends = [
        (o["value"], o["partition"], o.get("offset", -1))
        for o in ops
        if o["f"] == "send" and o["type"] == "ok"
    ]
    txns = [o for o in ops if o["f"] == "txn" and o["type"] in ("ok", "info")]
    committed = [o for o in txns if o["type"] == "ok" and o["outcome"] == "commit"]
    aborted = [o for o in txns if o["type"] == "ok" and o["outcome"] == "abort"]
    unknown = [o for o in txns if o["type"] == "info"]
    acked_txn_records = [(v, p, off) for t in committed for v, p, off in t["values"]]

    uncommitted_read = _final(ops, "read_uncommitted")
    committed_read = _final(ops, "read_committed")
    if uncommitted_read is None or committed_read is None:
        notes.append("no final read: nothing can be said about loss")
        return _verdict(found, notes, acked_sends, acked_txn_records, committed, aborted, False)
    for read in (uncommitted_read, committed_read):
        if not read.get("complete", True):
            notes.append(f"the final {read['isolation']} read did not reach every end offset")

    # The final log: (partition, offset) -> value, and where each value is.
    log: dict[tuple[int, int], str] = {}
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    epochs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for p, off, value, *rest in uncommitted_read["records"]:
        log[(p, off)] = value
        where[value].append((p, off))
        if rest and rest[0] is not None and rest[0] >= 0:
            epochs[p].append((off, rest[0]))
    committed_values = {r[2] for r in committed_read["records"]}

    for value, places in where.items():
        if len(places) > 1:
            found["duplicated"].append({"value": value, "at": sorted(places)})

    for value, p, off in acked_sends:
        if value not in where:
            found["lost"].append({"value": value, "partition": p, "acked_offset": off})
        elif off >= 0 and (p, off) not in where[value]:
            found["moved"].append({"value": value, "acked_at": [p, off], "at": where[value]})
    for value, p, off in acked_txn_records:
        if value not in committed_values:
            found["lost"].append({"value": value, "partition": p, "acked_offset": off})
        elif off >= 0 and (p, off) not in where.get(value, []):
            found["moved"].append({"value": value, "acked_at": [p, off], "at": where[value]})

    by_offset: dict[tuple[int, int], set[str]] = defaultdict(set)
    for value, p, off in acked_sends + acked_txn_records:
        if off >= 0:
            by_offset[(p, off)].add(value)
    for (p, off), values in sorted(by_offset.items()):
        if len(values) > 1:
            found["conflicting_acks"].append(
                {
                    "partition": p,
                    "offset": off,
                    "values": sorted(values),
                    "final": log.get((p, off)),
                }
            )

    for p, pairs in sorted(epochs.items()):
        pairs.sort()
        for (o1, e1), (o2, e2) in zip(pairs, pairs[1:], strict=False):
            if e2 < e1:
                found["epoch_regressions"].append(
                    {"partition": p, "offset": o2, "epoch": e2, "after": [o1, e1]}
                )

    reads = [o for o in ops if o["f"] == "read" and o["type"] == "ok"]
    for r in reads:
        for p, off, value in r["records"]:
            final = log.get((p, off))
            if final is not None and final != value:
                found["diverged_reads"].append(
                    {
                        "process": r["process"],
                        "partition": p,
                        "offset": off,
                        "read": value,
                        "final": final,
                        "time": r["time"],
                    }
                )

    aborted_values = {v: t["txn"] for t in aborted for v, _, _ in t["values"]}
    for r in [*reads, committed_read]:
        for p, off, value, *_ in r["records"]:
            if value in aborted_values:
                found["aborted_visible"].append(
                    {
                        "process": r["process"],
                        "txn": aborted_values[value],
                        "value": value,
                        "partition": p,
                        "offset": off,
                    }
                )

    for t in committed + unknown:
        txn_values = [v for v, _, _ in t["values"]]
        present = [v for v in txn_values if v in committed_values]

        if t["type"] == "ok":
            whole = len(present) == len(txn_values)
        else:  # unknown outcome: all or nothing
            whole = len(present) in (0, len(txn_values))
        if not whole:
            missing = sorted(set(txn_values) - set(present))
            found["partial_txns"].append(
                {"txn": t["txn"], "outcome": t.get("outcome", "unknown"), "missing": missing}
            )

    stale: list[Any] = []
    _check_offsets(ops, found, stale, notes)
    verdict = _verdict(found, notes, acked_sends, acked_txn_records, committed, aborted, True)
    verdict["stale_offset_fetches"] = len(stale)
    verdict["stale_offset_fetch_examples"] = stale[:EXAMPLES]
    return verdict


def _check_offsets(
    ops: list[dict[str, Any]], found: dict[str, list[Any]], stale: list[Any], notes: list[str]
) -> None:
    """Per partition: acknowledged commits never go down, and the committed offsets read
    after the run are not below the highest acknowledged commit. A fetch during the run
    answering less than a commit acknowledged before it was invoked is only `stale`: a
    coordinator that has lost its partition without knowing it (cut from ZooKeeper) still
    answers from its cache, in Kafka too."""
    best: dict[str, tuple[int, float]] = {}  # partition -> (highest acked commit, when)
    finals = [o for o in ops if o["f"] == "committed" and o.get("final") and o["type"] == "ok"]
    for o in ops:  # in completion order
        if o["type"] != "ok":
            continue
        if o["f"] == "commit":
            for p, off in o["offsets"].items():
                prior = best.get(p)
                if prior is not None and off < prior[0]:
                    found["offsets_backwards"].append(
                        {
                            "partition": int(p),
                            "committed": off,
                            "after_commit": prior[0],
                            "time": o["time"],
                        }
                    )
                if prior is None or off > prior[0]:
                    best[p] = (off, o["time"])
        elif o["f"] == "committed" and not o.get("final"):
            for p, off in o["offsets"].items():
                prior = best.get(p)
                # Only commits acknowledged before this fetch was invoked bind it.
                if prior is not None and prior[1] < o["start"] and off < prior[0]:
                    stale.append(
                        {
                            "partition": int(p),
                            "fetched": off,
                            "after_commit": prior[0],
                            "time": o["time"],
                        }
                    )
    if not finals:
        if best:
            notes.append("no committed offsets read after the run")
        return
    final = finals[-1]
    for p, (off, _) in sorted(best.items()):
        got = final["offsets"].get(p, -1)
        if got < off:
            found["offsets_backwards"].append(
                {"partition": int(p), "fetched_after_run": got, "after_commit": off}
            )


def _verdict(
    found: dict[str, list[Any]],
    notes: list[str],
    acked_sends: list[Any],
    acked_txn_records: list[Any],
    committed: list[Any],
    aborted: list[Any],
    checked: bool,
) -> dict[str, Any]:
    return {
        "valid": checked and not any(found.values()),
        "acknowledged": len(acked_sends) + len(acked_txn_records),
        "acknowledged_sends": len(acked_sends),
        "committed_txns": len(committed),
        "aborted_txns": len(aborted),
        "counts": {p: len(v) for p, v in found.items()},
        **{p: v[:EXAMPLES] for p, v in found.items()},
        "notes": notes,
    }


def main() -> None:
    import sys

    verdict = check(load(Path(sys.argv[1])))
    print(json.dumps(verdict, indent=1))
    raise SystemExit(0 if verdict["valid"] else 1)


if __name__ == "__main__":
    main()
