"""`python -m bench.profile_produce`: a `perf` profile of a kafkars broker process while the
harness's client produces to it, as a flame graph (SVG) and a table of the functions with
the most samples of their own.

Needs `perf` (linux-perf) and inferno's `inferno-collapse-perf` and `inferno-flamegraph`
(`cargo install inferno`) on the PATH. Broker settings are given like the server's own
`--override`; e.g. `--override log.preallocate=true` against the default.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import __main__ as harness
from bench.harness import cost, targets
from kafkars.broker import Broker


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.profile_produce", description=__doc__)
    ap.add_argument("--size", type=int, default=1024, help="record size (1024)")
    ap.add_argument("--acks", type=int, default=1, help="acks (1)")
    ap.add_argument(
        "--codec",
        default="none",
        choices=("none", "gzip", "snappy", "lz4", "zstd"),
        help="the producer's compression.type (none)",
    )
    ap.add_argument("--mb", type=int, default=1000, help="megabytes to produce (1000)")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--svg", type=Path, help="write the flame graph here")
    ap.add_argument("--title", default="kafkars broker, produce")
    ap.add_argument("--top", type=int, default=15, help="rows of the self-time table (15)")
    return ap.parse_args(argv)


def config_of(overrides: list[str]) -> dict[str, object]:
    config: dict[str, object] = dict(harness.SETTINGS)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--override wants KEY=VALUE, got {item!r}")
        config[key] = value
    return config


def folded(perf_data: Path) -> list[tuple[list[str], int]]:
    script = subprocess.run(
        ["perf", "script", "-i", str(perf_data)], capture_output=True, check=True
    ).stdout
    out = subprocess.run(
        ["inferno-collapse-perf", "--all"], input=script, capture_output=True, check=True
    ).stdout.decode(errors="replace")
    stacks = []
    for line in out.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            stacks.append((stack.split(";"), int(count)))
    return stacks


def kind(frame: str) -> str:
    if frame.endswith("_[k]"):
        return "kernel"
    if re.search(r"_Py|Py[A-Z]|python", frame):
        return "python"
    if "::" in frame or frame.startswith("<"):
        return "rust"
    return "other"


def summary(stacks: list[tuple[list[str], int]], top: int) -> str:
    total = sum(n for _, n in stacks) or 1
    leaves: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    for frames, n in stacks:
        leaves[frames[-1]] += n
        kinds[kind(frames[-1])] += n
    lines = [
        f"{total} samples; leaf frames by kind: "
        + ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in kinds.most_common())
    ]
    for frame, n in leaves.most_common(top):
        lines.append(f"{100 * n / total:6.2f} %  {frame}")
    return "\n".join(lines)


def flame_graph(stacks: list[tuple[list[str], int]], svg: Path, title: str) -> None:
    text = "\n".join(f"{';'.join(f)} {n}" for f, n in stacks) + "\n"
    out = subprocess.run(
        ["inferno-flamegraph", "--title", title, "--width", "1200"],
        input=text.encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    # The picture and its tooltips only: inferno's embedded script is third-party code.
    out = re.sub(r"<script.*?</script>", "", out, flags=re.S)
    svg.write_text(out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for tool in ("perf", "inferno-collapse-perf", "inferno-flamegraph"):
        if shutil.which(tool) is None:
            print(f"{tool} not found on the PATH", file=sys.stderr)
            return 2
    client = harness.pick_client(False)
    records = max(1000, args.mb * 1_000_000 // args.size)
    with (
        tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp,
        Broker(process=True, config=config_of(args.override), startup_timeout=120) as broker,
    ):
        assert broker._child is not None
        pid = broker._child.pid
        topic = "profile"
        targets.create_topic(broker.bootstrap_servers, topic, 1)
        data = Path(tmp) / "perf.data"
        perf = subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-p", str(pid)]
            + ["-o", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)
        cpu0 = cost.cpu_seconds(pid)
        run = client.produce(
            broker.bootstrap_servers,
            topic,
            records=records,
            size=args.size,
            acks=args.acks,
            codec=args.codec,
            partition=0,
        )
        cpu1 = cost.cpu_seconds(pid)
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
        cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else float("nan")
        print(
            f"{client.name}: {run.mb_per_s:.0f} MB/s, {run.records_per_s:,.0f} records/s; "
            f"broker CPU {cpu:.2f} s ({cpu / (run.payload_bytes / 1e9):.2f} s per GB)"
        )
        stacks = folded(data)
    print(summary(stacks, args.top))
    if args.svg:
        flame_graph(stacks, args.svg, args.title)
        print(f"flame graph: {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
