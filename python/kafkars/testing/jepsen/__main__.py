"""`python -m kafkars.testing.jepsen [--fault NAME ...] [--seconds N] [--results DIR]`
(`make jepsen`): each fault (all by default) in its own `python -m
kafkars.testing.jepsen.run` process with a hard time limit; after each, whatever it left
(namespaces, processes in them) is removed. Writes DIR/<time>/FAULT/ (history, verdict,
server logs) and DIR/<time>/summary.json; exits 1 when a verdict is not valid."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kafkars.testing.jepsen.nemesis import FAULTS
from kafkars.testing.jepsen.net import cleanup, cleanup_stale, missing_tools

# Start-up, recovery, final reads and shutdown on top of the fault time.
OVERHEAD_S = 300


def run_fault(fault: str, seconds: float, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "run.log").open("w") as log:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kafkars.testing.jepsen.run",
                "--fault",
                fault,
                "--seconds",
                str(seconds),
                "--out",
                str(out),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            child.wait(timeout=seconds + OVERHEAD_S)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGTERM)  # its finally blocks tear down
            try:
                child.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            cleanup(child.pid)
    verdict_file = out / "verdict.json"
    if verdict_file.exists():
        verdict: dict[str, Any] = json.loads(verdict_file.read_text())
        return verdict
    tail = (out / "run.log").read_text(errors="replace")[-2000:]
    return {
        "fault": fault,
        "valid": False,
        "error": f"no verdict (exit {child.returncode})",
        "log_tail": tail,
    }


def summary_line(v: dict[str, Any]) -> str:
    counts = v.get("counts", {})
    broken = ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "-"
    return (
        f"{v['fault']:<20} {'valid' if v['valid'] else 'INVALID':<8} "
        f"acked {v.get('acknowledged', 0):>6}  lost {counts.get('lost', '?'):>4}  "
        f"dup {counts.get('duplicated', '?'):>4}  txns {v.get('committed_txns', 0)}/"
        f"{v.get('aborted_txns', 0)} (commit/abort)  stale fetches "
        f"{v.get('stale_offset_fetches', 0)}  broken: {broken}"
        + (f"  {v['error']}" if "error" in v else "")
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkars.testing.jepsen", description=__doc__)
    parser.add_argument("--fault", action="append", choices=sorted(FAULTS))
    parser.add_argument("--seconds", type=float, default=30, help="fault time per fault")
    parser.add_argument("--results", type=Path, default=Path("jepsen-results"))
    args = parser.parse_args()
    reason = missing_tools()
    if reason:
        print(f"jepsen: cannot run: {reason}", file=sys.stderr)
        return 2
    stale = cleanup_stale()
    if stale:
        print(f"jepsen: removed the namespaces of earlier runs {stale}")
    results = args.results / time.strftime("%Y%m%d-%H%M%S")
    verdicts = []
    for fault in args.fault or list(FAULTS):
        began = time.monotonic()
        verdict = run_fault(fault, args.seconds, results / fault)
        verdict["wall_s"] = round(time.monotonic() - began)
        verdicts.append(verdict)
        print(summary_line(verdict) + f"  ({verdict['wall_s']} s)", flush=True)
    (results / "summary.json").write_text(json.dumps(verdicts, indent=1) + "\n")
    print(f"jepsen: results in {results}")
    return 0 if all(v["valid"] for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
