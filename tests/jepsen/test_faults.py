"""A short Jepsen run in CI: partition 0's leader cut from its followers (it keeps
ZooKeeper, so it stays leader and shrinks its ISR below min.insync.replicas) for 10 s
while the clients write and read, then the checker's verdict. The whole suite is `make
jepsen`; this one fault takes about 40 s.

Not this one: `leader-zk` and `leader-isolated`, which find a kafkars bug today (a leader
cut from ZooKeeper shrinks its ISR in memory although the ZooKeeper write fails, so its
high watermark passes records a new leader never had: read_committed readers see records
that are then truncated). See README "Network faults"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkars.testing.jepsen.net import NETNS_DIR, cleanup, missing_tools

WHY_NOT = missing_tools()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"jepsen: {WHY_NOT}")


@pytest.fixture
def run_fault(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m jepsen.run` in its own session; whatever happens, it is stopped and its
    namespaces (named after its pid) and the processes in them are gone afterwards."""
    out = tmp_path / "leader-followers"
    log = (tmp_path / "run.log").open("wb")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafkars.testing.jepsen.run",
            "--fault",
            "leader-followers",
            "--seconds",
            "12",
            "--out",
            str(out),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        cleanup(child.pid)
        log.close()
        left = sorted(p.name for p in NETNS_DIR.glob(f"kj{child.pid}-*"))
        assert not left, f"namespaces left behind: {left}"


@pytest.mark.timeout(170)
def test_leader_cut_from_its_followers_keeps_every_promise(
    run_fault: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    try:
        code = run_fault.wait(150)
    except subprocess.TimeoutExpired:
        pytest.fail("the run took over 150 s: " + (tmp_path / "run.log").read_text()[-2000:])
    out = tmp_path / "leader-followers"
    log = (tmp_path / "run.log").read_text(errors="replace")
    assert (out / "verdict.json").exists(), log[-3000:]
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["valid"], json.dumps(verdict, indent=1)[:3000]
    assert code == 0, log[-2000:]
    history = [json.loads(line) for line in (out / "history.jsonl").open()]
    # The fault happened, and the clients did enough for the verdict to mean something.
    assert any(o["process"] == "nemesis" and o["f"] == "start" for o in history)
    assert verdict["acknowledged"] > 300, verdict
    assert verdict["committed_txns"] > 5 and verdict["aborted_txns"] > 0, verdict
    assert any(o["f"] == "commit" and o["type"] == "ok" for o in history)
    assert any(o["f"] == "read" for o in history)
