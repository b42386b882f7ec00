"""`python -m chaos [--smoke] [--cycles N] [--suite NAME ...]`: the chaos suites against
real broker processes. Exits non-zero when a broker breaks a promise."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from chaos import connections, damaged, hostile, kill9
from chaos.common import CheckFailed, write_json

SUITES = ("kill9", "hostile", "connections", "damaged")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a short run of every suite")
    parser.add_argument("--cycles", type=int, default=None, help="kill -9 cycles (default 50)")
    parser.add_argument("--suite", action="append", choices=SUITES, help="run only these")
    parser.add_argument("--connections", type=int, default=None, help="idle connections")
    parser.add_argument(
        "--checkpoint-ms",
        type=int,
        default=1000,
        help="log.flush.offset.checkpoint.interval.ms of the kill -9 broker (0: the default)",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep data here")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    smoke = args.smoke
    cycles = args.cycles if args.cycles is not None else (4 if smoke else 50)
    idle = args.connections if args.connections is not None else (1000 if smoke else 5000)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kafkars-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"chaos: {'smoke' if smoke else 'full'} run in {workdir}", flush=True)
    figures: dict[str, object] = {}
    failures: list[str] = []
    for suite in args.suite or SUITES:
        began = time.monotonic()
        try:
            if suite == "kill9":
                interval = (1.0, 2.0) if smoke else (2.0, 5.0)
                rate = 500 if smoke else 1500
                figures[suite] = kill9.run(workdir, cycles, interval, rate, args.checkpoint_ms)
            elif suite == "hostile":
                figures[suite] = hostile.run(workdir, smoke=smoke)
            elif suite == "connections":
                figures[suite] = connections.run(workdir, idle=idle, smoke=smoke)
            else:
                figures[suite] = damaged.run(workdir, smoke=smoke)
            print(f"   {suite}: passed in {time.monotonic() - began:.0f} s", flush=True)
        except CheckFailed as e:
            failures.append(f"{suite}: {e}")
            print(f"   {suite}: FAILED: {e}", flush=True)
        except Exception:
            failures.append(f"{suite}: {traceback.format_exc(limit=3)}")
            print(f"   {suite}: ERROR\n{traceback.format_exc()}", flush=True)
    write_json(args.json, {"figures": figures, "failures": failures})
    if failures:
        print(f"chaos: {len(failures)} suite(s) failed; data kept in {workdir}", flush=True)
        for failure in failures:
            print(f" - {failure}", flush=True)
        return 1
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    print("chaos: all suites passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
