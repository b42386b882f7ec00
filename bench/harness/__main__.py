"""`python -m bench.harness`: the broker benchmark (issue 14, `make bench-broker`).

By default it starts a kafkars broker process of this checkout and drives it with librdkafka's
rdkafka_performance; --bootstrap measures a broker already running instead, and every
--peer NAME=HOST:PORT is measured the same way beside it. Results: a table on stdout, JSON
and PNG plots in bench/results/.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import cost, hostmem, pyclients, rdkafka, report, scenarios, tansu, targets
from bench.harness.clients import Client, ClientError
from bench.harness.e2e import E2eLatency
from bench.harness.progress import Progress
from bench.harness.targets import Target, UsageError
from kafkars.testing.reference_kafka import ReferenceKafka

RESULTS = Path(__file__).resolve().parents[1] / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--quick", action="store_true", help="a small subset with short runs (1-2 minutes)"
    )
    ap.add_argument(
        "--scenarios",
        metavar="A,B",
        help=f"scenario groups to run, of: {','.join(scenarios.GROUPS)} (default: all; "
        f"with --quick: {','.join(scenarios.QUICK_GROUPS)})",
    )
    ap.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="measure this running broker, start none"
    )
    ap.add_argument("--name", default="kafkars", help="the measured broker's name (kafkars)")
    ap.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="another Kafka-compatible broker to measure the same way (repeatable); "
        "'kafka' or 'kafka=VERSION' starts Apache Kafka here with kafkars' settings, "
        "'tansu' starts Tansu here (make tansu-deps; its log in memory)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE[,KEY=VALUE]",
        help="another kafkars broker of this checkout with these settings, measured beside "
        "the default one step by step (an A/B in one run; repeatable), e.g. "
        "prealloc:log.preallocate=true",
    )
    ap.add_argument(
        "--startup-partitions",
        default="0,1000,9000",
        metavar="N,M",
        help="partition counts of the startup group (default 0,1000,9000)",
    )
    ap.add_argument(
        "--python-clients",
        action="store_true",
        help="use confluent-kafka Python clients even when rdkafka_performance is built",
    )
    ap.add_argument(
        "--mb-per-run",
        type=int,
        metavar="N",
        help="megabytes each produce run writes (default 1,500, 300 with --quick); the "
        "lag and cluster topics are at most twice this. For a machine short of disk: the "
        "acks=1 topics of every target are kept until the consume steps",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run every produce, consume and latency step N times, the targets' order "
        "turning round each time, and report the median run (every run's figure kept in "
        "the JSON as 'runs'): single runs swing with the page cache's writeback",
    )
    ap.add_argument(
        "--rdkafka-latency",
        action="store_true",
        help="latency levels with the throughput client's latency mode (rdkafka_performance "
        "-l, linger.ms=1) instead of the e2e_latency client (rust/kafkars-client/examples)",
    )
    ap.add_argument(
        "--no-pause",
        action="store_true",
        help="leave the other brokers this run started running during each broker's steps "
        "(by default they are stopped with SIGSTOP and continued after)",
    )
    ap.add_argument(
        "--host-memory",
        choices=("steady", "as-is"),
        default="steady",
        help="on a virtual machine with free page reporting (virtio-balloon): 'steady' "
        "(default, needs root) pauses the reporting for the run and faults the free memory "
        "in once before the brokers start, so no step draws memory the host must fault in "
        "anew (bench/harness/hostmem.py); 'as-is' leaves the machine alone",
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="results directory (bench/results)")
    return ap.parse_args(argv)


def groups_of(text: str | None, quick: bool) -> tuple[str, ...]:
    if not text:
        return scenarios.QUICK_GROUPS if quick else scenarios.GROUPS
    chosen = tuple(g.strip() for g in text.split(",") if g.strip())
    unknown = [g for g in chosen if g not in scenarios.GROUPS]
    if unknown or not chosen:
        raise UsageError(
            f"--scenarios: unknown group {', '.join(unknown) or '(none)'}; "
            f"choose from {','.join(scenarios.GROUPS)}"
        )
    return tuple(g for g in scenarios.GROUPS if g in chosen)


# What every broker this run starts is given (kafkars and Apache Kafka alike): one
# partition per auto-created topic; a deleted topic's files removed a second after the
# deletion (Kafka's default is a minute), which `targets.delete_topics` waits for; segment
# size, flush and retention at their defaults.
SETTINGS: dict[str, Any] = {"num.partitions": 1, "log.segment.delete.delay.ms": 1000}


def _first(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, sep, rest = text.partition(":")
    settings = dict(item.partition("=")[::2] for item in rest.split(",") if item)
    if not sep or not name or not settings or not all(settings):
        raise UsageError(f"--variant wants NAME:KEY=VALUE[,KEY=VALUE], got {text!r}")
    return name, settings


def counts_of(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = [-1]
    if not counts or min(counts) < 0:
        raise UsageError(f"--startup-partitions wants counts like 0,1000,9000, got {text!r}")
    return counts


def pick_client(force_python: bool) -> Client:
    binary = None if force_python else rdkafka.find_binary()
    if binary is not None:
        return rdkafka.RdkafkaPerformance(binary)
    fallback = pyclients.PythonClients()
    if not force_python:
        print(
            f"rdkafka_performance not found at {rdkafka.DEFAULT_BINARY}: {rdkafka.BUILD_HINT}; "
            f"using {fallback.name} instead",
            file=sys.stderr,
        )
    return fallback


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = " " + line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} CPUs{model}, {mem:.1f} GiB RAM, "
        f"Linux {platform.release()}, Python {platform.python_version()}"
    )


def kind_of(t: Target) -> str:
    if t.own is None:
        return "running"
    if isinstance(t.own, ReferenceKafka):
        return f"Apache Kafka {t.own.version}, heap {targets.REFERENCE_HEAP}"
    if isinstance(t.own, tansu.Tansu):
        return f"Tansu {t.own.version}, log in memory ({tansu.STORAGE_ENGINE})"
    return "own process"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A SIGTERM ends the run as Ctrl-C does: the brokers stop, the figures so far are
    # written and the host memory setting is restored.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with hostmem.steady(args.host_memory == "steady", _note) as host:
            return _run(args, argv, host)
    except KeyboardInterrupt:  # before the run began (a run ends itself on one)
        _note("interrupted before the run began")
        return 130


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _note(text: str) -> None:
    print(f"bench.harness: {text}", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace, argv: list[str] | None, host: dict[str, Any]) -> int:
    started = time.localtime()
    own: Target | None = None
    started_here: list[Target] = []
    try:
        groups = groups_of(args.scenarios, args.quick)
        startup_partitions = counts_of(args.startup_partitions)
        peers = [targets.parse_peer(p) for p in args.peer]
        variants = [parse_variant(v) for v in args.variant]
        names = [args.name] + [n for n, _ in peers] + [n for n, _ in variants]
        if len(set(names)) != len(names):
            raise UsageError(f"every target needs its own name, got {', '.join(names)}")
        measured: list[Target] = []
        if args.bootstrap:
            measured.append(targets.connect(args.name, args.bootstrap))
        # rdkafka_performance's librdkafka 2.0.2 cannot read Tansu 0.6.0's ApiVersions
        # answer ("Read underflow") and retries until its timeout: every step would hang.
        tansu_started = any(n == "tansu" and ":" not in a for n, a in peers)
        if tansu_started and not args.python_clients:
            print(
                "bench.harness: --peer tansu: rdkafka_performance (librdkafka 2.0.2) cannot "
                "read Tansu's ApiVersions answer; using the confluent-kafka Python clients "
                "for every target",
                file=sys.stderr,
            )
        client = pick_client(args.python_clients or tansu_started)
        cost.raise_fd_limit()
        for name, address in peers:
            if ":" in address:
                measured.append(targets.connect(name, address))
                continue
            try:
                if name == "tansu":
                    started_here.append(targets.start_tansu(name))
                else:
                    started_here.append(targets.start_reference(name, address, SETTINGS))
            except (RuntimeError, TimeoutError) as e:
                what = "Tansu" if name == "tansu" else f"Apache Kafka {address}"
                raise UsageError(f"could not start {what}: {_first(e)}") from e
            measured.append(started_here[-1])
        if not args.bootstrap:
            try:
                own = targets.start_own(args.name, SETTINGS)
            except (RuntimeError, TimeoutError) as e:
                raise UsageError(f"could not start a kafkars broker: {_first(e)}") from e
            started_here.append(own)
            measured.insert(0, own)
        for i, (name, overrides) in enumerate(variants):
            try:
                variant = targets.start_own(name, {**SETTINGS, **overrides})
            except (RuntimeError, TimeoutError) as e:
                raise UsageError(f"could not start the {name} broker: {_first(e)}") from e
            started_here.append(variant)
            measured.insert(1 + i, variant)
    except UsageError as e:
        for target in started_here:
            target.own.stop()  # type: ignore[union-attr]
        print(f"bench.harness: {e}", file=sys.stderr)
        return 2

    results: dict[str, Any] = {
        "meta": {
            "started": time.strftime("%Y-%m-%d %H:%M:%S", started),
            "mode": "quick" if args.quick else "full",
            "groups": list(groups),
            "machine": machine(),
            "client": client.name,
            "argv": sys.argv[1:] if argv is None else argv,
            # Other work on the machine skews every figure: the 1-minute load average.
            "loadavg_start": os.getloadavg()[0],
        },
        "targets": {
            t.name: {
                "kind": kind_of(t),
                "bootstrap": t.bootstrap,
                "pid": t.pid,
                "start_s": t.start_s,
            }
            for t in measured
        },
        "limits": dict(host),
        "notes": [],
        "errors": [],
    }
    cfg = scenarios.settings(args.quick, groups, startup_partitions)
    if args.mb_per_run:
        cfg.scale_to(args.mb_per_run * 1_000_000)
    if args.repeat < 1:
        print("bench.harness: --repeat must be at least 1", file=sys.stderr)
        return 2
    cfg.repeat = args.repeat
    cfg.pause_others = not args.no_pause
    results["meta"]["pause_others"] = cfg.pause_others
    results["meta"]["repeat"] = args.repeat
    latency_client = None
    if "latency" in groups and not args.rdkafka_latency:
        try:
            latency_client = E2eLatency.build()
        except ClientError as e:
            print(f"bench.harness: {e}; latency with {client.name} instead", file=sys.stderr)
    results["meta"]["latency_client"] = (latency_client or client).name
    bench = scenarios.Bench(cfg, client, measured, results, Progress, latency_client)
    began = time.monotonic()
    try:
        bench.run()
    except KeyboardInterrupt:
        results["notes"].append("interrupted: the figures so far")
    finally:
        for target in started_here:
            if target.own is not None:
                target.own.stop()
    results["meta"]["seconds"] = time.monotonic() - began
    results["meta"]["loadavg_end"] = os.getloadavg()[0]

    stamp = time.strftime("%Y%m%d-%H%M%S", started)
    written = report.plots(results, args.out)
    path, latest = report.write_json(results, args.out, stamp)
    print(report.table(results))
    print()
    print(f"ran {results['meta']['seconds'] / 60:.1f} min; wrote {path}, {latest}")
    for p in written:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
