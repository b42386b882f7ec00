"""The checker against hand-made histories: a sound one passes, and each kind of broken
one fails on the property it breaks (so the checker cannot pass everything quietly)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkars.testing.jepsen.checker import PROPERTIES, check


def sound() -> list[dict[str, Any]]:
    """Two acknowledged sends, a committed and an aborted transaction, a transaction of
    unknown outcome that never landed, the group's commits and fetches, a reader, and
    the final reads."""

    def op(time: float, process: str, type_: str, f: str, **kw: Any) -> dict[str, Any]:
        return {"time": time, "process": process, "type": type_, "f": f, **kw}

    log = [
        # partition, offset, value, leader epoch
        [0, 0, "idem-0-0", 0],
        [0, 1, "txn-0-t1-0", 0],
        [0, 3, "idem-0-1", 1],
        [1, 0, "txn-0-t1-1", 0],
        [1, 1, "txn-0-t2-0", 0],
    ]
    return [
        op(1.0, "idem-0", "ok", "send", value="idem-0-0", partition=0, offset=0),
        op(
            1.5,
            "txn-0",
            "ok",
            "txn",
            txn="txn-0-t1",
            outcome="commit",
            values=[["txn-0-t1-0", 0, 1], ["txn-0-t1-1", 1, 0]],
        ),
        op(
            2.0,
            "txn-0",
            "ok",
            "txn",
            txn="txn-0-t2",
            outcome="abort",
            values=[["txn-0-t2-0", 1, 1]],
        ),
        op(
            2.2,
            "txn-0",
            "info",
            "txn",
            txn="txn-0-t3",
            values=[["txn-0-t3-0", 2, -1]],
            error="_TIMED_OUT",
        ),
        op(2.5, "idem-0", "ok", "send", value="idem-0-1", partition=0, offset=3),
        op(2.6, "idem-0", "info", "send", value="idem-0-2", partition=1, error="_MSG_TIMED_OUT"),
        op(3.0, "group", "ok", "commit", start=2.9, offsets={"0": 2, "1": 1}),
        op(3.5, "observer", "ok", "committed", start=3.4, offsets={"0": 2, "1": 1}),
        op(4.0, "group", "ok", "commit", start=3.9, offsets={"0": 4, "1": 1}),
        # Invoked before the commit above was acknowledged: may still see the old offset.
        op(4.1, "observer", "ok", "committed", start=3.8, offsets={"0": 2}),
        op(4.5, "rc-0", "ok", "read", records=[[0, 0, "idem-0-0"], [1, 0, "txn-0-t1-1"]]),
        op(
            9.0,
            "final-read_uncommitted",
            "ok",
            "final-read",
            isolation="read_uncommitted",
            complete=True,
            records=log,
        ),
        op(
            9.5,
            "final-read_committed",
            "ok",
            "final-read",
            isolation="read_committed",
            complete=True,
            records=[r for r in log if r[2] != "txn-0-t2-0"],
        ),
        op(
            9.8,
            "final-committed",
            "ok",
            "committed",
            start=9.7,
            offsets={"0": 4, "1": 1},
            final=True,
        ),
    ]


def find(ops: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    return next(o for o in ops if all(o.get(k) == v for k, v in match.items()))


def final(ops: list[dict[str, Any]], isolation: str) -> list[list[Any]]:
    records: list[list[Any]] = find(ops, f="final-read", isolation=isolation)["records"]
    return records


def broken_only(verdict: dict[str, Any], prop: str) -> None:
    assert not verdict["valid"]
    assert verdict["counts"][prop] >= 1, verdict
    others = {p: n for p, n in verdict["counts"].items() if n and p != prop}
    assert not others, f"{prop} also reported as {others}"


def test_a_sound_history_is_valid() -> None:
    verdict = check(sound())
    assert verdict["valid"], verdict
    assert verdict["acknowledged"] == 4
    assert verdict["committed_txns"] == 1 and verdict["aborted_txns"] == 1
    assert set(verdict["counts"]) == set(PROPERTIES)


def test_a_lost_acknowledged_send() -> None:
    ops = sound()
    for isolation in ("read_uncommitted", "read_committed"):
        final(ops, isolation)[:] = [r for r in final(ops, isolation) if r[2] != "idem-0-1"]
    verdict = check(ops)
    broken_only(verdict, "lost")
    assert verdict["lost"][0]["value"] == "idem-0-1"


def test_a_lost_committed_transaction_record() -> None:
    ops = sound()
    committed = final(ops, "read_committed")
    committed[:] = [r for r in committed if r[2] != "txn-0-t1-1"]
    verdict = check(ops)
    assert verdict["counts"]["lost"] == 1 and verdict["counts"]["partial_txns"] == 1
    assert verdict["partial_txns"][0]["missing"] == ["txn-0-t1-1"]


def test_a_duplicated_record() -> None:
    ops = sound()
    for isolation in ("read_uncommitted", "read_committed"):
        final(ops, isolation).append([0, 4, "idem-0-0", 1])
    verdict = check(ops)
    broken_only(verdict, "duplicated")
    assert verdict["duplicated"][0] == {"value": "idem-0-0", "at": [(0, 0), (0, 4)]}


def test_an_aborted_record_visible_to_a_read_committed_reader() -> None:
    ops = sound()
    find(ops, f="read")["records"].append([1, 1, "txn-0-t2-0"])
    verdict = check(ops)
    broken_only(verdict, "aborted_visible")
    assert verdict["aborted_visible"][0]["txn"] == "txn-0-t2"


def test_an_aborted_record_in_the_final_read_committed_read() -> None:
    ops = sound()
    final(ops, "read_committed").append([1, 1, "txn-0-t2-0", 0])
    broken_only(check(ops), "aborted_visible")


def test_a_committed_offset_acknowledged_lower_than_before() -> None:
    ops = sound()
    find(ops, f="commit", time=4.0)["offsets"]["1"] = 0
    verdict = check(ops)
    broken_only(verdict, "offsets_backwards")
    assert verdict["offsets_backwards"][0] == {
        "partition": 1,
        "committed": 0,
        "after_commit": 1,
        "time": 4.0,
    }


def test_committed_offsets_read_after_the_run_below_an_acknowledged_commit() -> None:
    ops = sound()
    find(ops, f="committed", final=True)["offsets"]["0"] = 2
    verdict = check(ops)
    broken_only(verdict, "offsets_backwards")
    assert verdict["offsets_backwards"][0] == {
        "partition": 0,
        "fetched_after_run": 2,
        "after_commit": 4,
    }


def test_a_committed_partition_missing_after_the_run() -> None:
    ops = sound()
    del find(ops, f="committed", final=True)["offsets"]["1"]
    broken_only(check(ops), "offsets_backwards")


def test_a_stale_fetch_during_the_run_is_counted_but_not_a_failure() -> None:
    ops = sound()
    assert check(ops)["stale_offset_fetches"] == 0
    find(ops, f="committed", time=4.1)["start"] = 4.05  # invoked after the commit's ack
    verdict = check(ops)
    assert verdict["valid"], verdict
    assert verdict["stale_offset_fetches"] == 1
    assert verdict["stale_offset_fetch_examples"][0]["fetched"] == 2


def test_a_transaction_of_unknown_outcome_seen_in_part() -> None:
    ops = sound()
    find(ops, f="txn", txn="txn-0-t3")["values"].append(["txn-0-t3-1", 0, -1])
    for isolation in ("read_uncommitted", "read_committed"):
        final(ops, isolation).append([2, 0, "txn-0-t3-0", 0])
    verdict = check(ops)
    broken_only(verdict, "partial_txns")
    assert verdict["partial_txns"][0] == {
        "txn": "txn-0-t3",
        "outcome": "unknown",
        "missing": ["txn-0-t3-1"],
    }


def test_two_records_acknowledged_at_one_offset() -> None:
    ops = sound()
    ops.insert(5, copy.deepcopy(find(ops, f="send", value="idem-0-1")))
    ops[5].update(value="idem-1-0", time=2.55)
    for isolation in ("read_uncommitted", "read_committed"):
        final(ops, isolation).append([2, 0, "idem-1-0", 1])
    verdict = check(ops)
    # The second acknowledgement is also a record that is not where it was acknowledged.
    assert verdict["counts"]["conflicting_acks"] == 1
    assert verdict["conflicting_acks"][0]["values"] == ["idem-0-1", "idem-1-0"]
    assert verdict["counts"]["moved"] == 1 and not verdict["valid"]


def test_an_acknowledged_record_found_at_another_offset() -> None:
    ops = sound()
    find(ops, f="send", value="idem-0-1")["offset"] = 2
    broken_only(check(ops), "moved")


def test_a_reader_saw_a_record_that_did_not_survive() -> None:
    ops = sound()
    find(ops, f="read")["records"].append([0, 3, "ghost"])
    verdict = check(ops)
    broken_only(verdict, "diverged_reads")
    assert verdict["diverged_reads"][0]["final"] == "idem-0-1"


def test_leader_epochs_going_down_in_the_final_log() -> None:
    ops = sound()
    final(ops, "read_uncommitted")[2][3] = 0
    final(ops, "read_uncommitted")[0][3] = 2
    verdict = check(ops)
    broken_only(verdict, "epoch_regressions")


def test_no_final_read_is_not_valid() -> None:
    ops = [o for o in sound() if o["f"] != "final-read"]
    verdict = check(ops)
    assert not verdict["valid"]
    assert verdict["notes"] == ["no final read: nothing can be said about loss"]


@pytest.mark.timeout(30)
def test_the_command_line_exits_non_zero_on_a_broken_history(tmp_path: Path) -> None:
    ops = sound()
    final(ops, "read_uncommitted").pop(0)
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    done = subprocess.run(
        [sys.executable, "-m", "kafkars.testing.jepsen.checker", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["counts"]["lost"] == 1
